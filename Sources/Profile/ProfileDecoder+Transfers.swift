import Crypto
import HTTP1
import JSON

/// Download and upload scenarios.
extension ProfileReader {
    /// A download or upload scenario: concurrency (`connections`, `stages`) and the `transfer` object.
    mutating func transferScenario(
        _ object: JSONObject, _ path: String, name: String?, kind: Scenario.Kind, startAfter: Duration, problemsBefore: Int
    ) -> Scenario? {
        let websocketOnly = ["pattern", "path", "pingInterval", "pingTimeout", "reconnect", "subprotocols", "compression", "message",
                             "schedule", "messagesPerConnection", "subscribe", "typeName"]
        for key in websocketOnly where object[key] != nil {
            problem(Self.join(path, key), "is for websocket scenarios", hint: "transfer settings go in \"transfer\"")
        }
        var websocket = WebSocketScenario(pattern: .idle, connections: 0)
        concurrency(object, path, into: &websocket)
        let transferPath = Self.join(path, "transfer")
        var transfer = TransferScenario()
        if let body = required(object, "transfer", path).flatMap({ self.object($0, transferPath, kind: "transfer") }) {
            if let url = string(body["url"], Self.join(transferPath, "url")) {
                // The run parses it again: what it parses is this URL as checked (non-ASCII percent-encoded).
                do {
                    transfer.url = try HTTPURL(url).description
                } catch {
                    problem(Self.join(transferPath, "url"), error.description)
                }
            }
            if let requestPath = requestPath(body["path"], Self.join(transferPath, "path")) { transfer.path = requestPath }
            transfer.size = byteSize(body["size"], Self.join(transferPath, "size"))
            transfer.file = string(body["file"], Self.join(transferPath, "file"))
            transfer.segments = integer(body["segments"], Self.join(transferPath, "segments"), in: 1...1024) ?? 1
            transfer.connectionsPerTransfer = integer(body["connections"], Self.join(transferPath, "connections"), in: 1...1024)
            if let size = byteSize(body["minSegmentSize"], Self.join(transferPath, "minSegmentSize")) {
                if size > 0 { transfer.minimumSegmentSize = size } else { problem(Self.join(transferPath, "minSegmentSize"), "must be above 0") }
            }
            transfer.repeats = integer(body["repeats"], Self.join(transferPath, "repeats"), in: 1...Int.max)
            transfer.interruptProbability = number(body["interrupt"], Self.join(transferPath, "interrupt"), minimum: 0, maximum: 1) ?? 0
            if let method = string(body["method"], Self.join(transferPath, "method")) {
                if method == "PUT" || method == "POST" { transfer.method = method } else {
                    problem(Self.join(transferPath, "method"), "\"\(method)\" is not PUT or POST")
                }
            }
            transfer.isMultipart = bool(body["multipart"], Self.join(transferPath, "multipart")) ?? false
            if let hex = string(body["sha256"], Self.join(transferPath, "sha256")) {
                if let bytes = hexBytes(hex), bytes.count == 32 { transfer.sha256 = bytes } else {
                    problem(Self.join(transferPath, "sha256"), "\"\(hex)\" is not 64 hex digits")
                }
            }
            if let limit = byteSize(body["bandwidthLimit"], Self.join(transferPath, "bandwidthLimit")) {
                if limit > 0 { transfer.bandwidthLimit = limit } else { problem(Self.join(transferPath, "bandwidthLimit"), "must be above 0") }
            }
            if let timeout = duration(body["requestTimeout"], Self.join(transferPath, "requestTimeout"), minimum: .milliseconds(10)) {
                transfer.requestTimeout = timeout
            }
            transfer.retry = reconnect(body["retry"], Self.join(transferPath, "retry"), kind: "retry")
            transfer.directory = string(body["directory"], Self.join(transferPath, "directory"))
            transfer.keepsFiles = bool(body["keepFiles"], Self.join(transferPath, "keepFiles")) ?? false
            let sources = [body["url"], body["path"], body["size"]].compactMap { $0 }.count
            if kind == .download {
                if sources != 1 {
                    problem(transferPath, "a download needs exactly one of url, path or size",
                            hint: "size downloads the embedded server's generated /bytes/<size>")
                }
                for key in ["file", "method", "multipart"] where body[key] != nil {
                    problem(Self.join(transferPath, key), "is for uploads")
                }
                if transfer.keepsFiles && transfer.directory == nil {
                    problem(Self.join(transferPath, "keepFiles"), "needs a directory to keep the files in")
                }
            } else {
                if (body["file"] == nil) == (body["size"] == nil) {
                    problem(transferPath, "an upload needs exactly one of file or size", hint: "size uploads a generated file")
                }
                if body["url"] != nil && body["path"] != nil { problem(transferPath, "give url or path, not both") }
                for key in ["segments", "connections", "minSegmentSize", "interrupt", "sha256", "directory", "keepFiles"]
                where body[key] != nil {
                    problem(Self.join(transferPath, key), "is for downloads")
                }
            }
        }
        guard problems.count == problemsBefore, let name else { return nil }
        return Scenario(name: name, kind: kind, startAfter: startAfter, websocket: websocket, transfer: transfer)
    }
}

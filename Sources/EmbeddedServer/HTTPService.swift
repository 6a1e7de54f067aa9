import Crypto
import HTTP1
import Profile
import Runtime

/// Faults the embedded HTTP file server injects; each can also be set per request in the query
/// (`?drop_after=N&throttle=BPS&fail_rate=P&ranges=0`).
package struct HTTPChaosOptions: Sendable, Hashable {
    /// Close the connection after sending this many body bytes of a response.
    package var dropAfterBytes: Int64?
    /// Send bodies at most this fast (bytes per second).
    package var throttleBytesPerSecond: Int64?
    /// Answer 503 with this probability (0–1).
    package var errorRate: Double
    /// Ignore `Range` and always send the whole file with 200 (a server without range support).
    package var ignoresRanges: Bool

    package init(dropAfterBytes: Int64? = nil, throttleBytesPerSecond: Int64? = nil, errorRate: Double = 0, ignoresRanges: Bool = false) {
        self.dropAfterBytes = dropAfterBytes
        self.throttleBytesPerSecond = throttleBytesPerSecond
        self.errorRate = errorRate
        self.ignoresRanges = ignoresRanges
    }
}

/// The embedded server's HTTP/1.1 side, on a connection that did not ask for a WebSocket:
/// - `GET|HEAD /bytes/<size>[?seed=S]`: generated content (see ``PatternContent``);
/// - `GET|HEAD /files/<name>`: a file from ``ServerConfiguration/filesDirectory``;
/// - `PUT|POST /upload[/<name>]`: a sink that digests (and, with ``ServerConfiguration/uploadDirectory``,
///   stores) what it receives and answers `{"bytes":N,"sha256":"…","parts":[…]}`.
/// Single byte ranges (206, 416), `If-Range`, strong ETags, `Last-Modified`, `Expect: 100-continue`
/// and keep-alive are supported; ``HTTPChaosOptions`` injects faults.
struct HTTPService {
    let server: EmbeddedServer
    let stream: any ByteStream
    let tcp: TCPConnection
    let loop: EventLoop
    var random: SeededRandomNumberGenerator
    /// What the last stored upload digests to, for tests.
    var configuration: ServerConfiguration { server.configuration }

    /// Serves `first` and any further requests on the connection until it closes.
    mutating func serve(first: HTTPRequestHead, leftover: [UInt8]) async {
        var buffer = leftover
        var request = first
        do {
            while true {
                let keepAlive = try await respond(to: request, buffer: &buffer)
                guard keepAlive else { return }
                var parser = HTTPHeadParser()
                while true {
                    if let (head, length) = try parser.parseRequest(buffer) {
                        buffer.removeFirst(length)
                        request = head
                        break
                    }
                    guard try await stream.read(into: &buffer, maxBytes: 64 * 1024) > 0 else { return }
                }
            }
        } catch let error as HTTPParseError {
            try? await sendSimple(400, "Bad Request", "bad request: \(error)\n", keepAlive: false)  // the peer may be gone; the connection closes anyway
        } catch {
            return
        }
    }

    private struct Query {
        var items: [String: String] = [:]
        init(_ target: String) {
            guard let mark = target.firstIndex(of: "?") else { return }
            for pair in target[target.index(after: mark)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                items[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
            }
        }
        subscript(_ key: String) -> String? { items[key] }
    }

    /// Answers one request; returns whether the connection stays open.
    private mutating func respond(to request: HTTPRequestHead, buffer: inout [UInt8]) async throws -> Bool {
        server.statistics.httpRequests.add(1, ordering: .relaxed)
        let path = request.target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        let query = Query(request.target)
        var chaos = configuration.httpChaos
        if let value = query["drop_after"].flatMap({ Int64($0) }) { chaos.dropAfterBytes = value }
        if let value = query["throttle"].flatMap({ Int64($0) }), value > 0 { chaos.throttleBytesPerSecond = value }
        if let value = query["fail_rate"].flatMap({ Double($0) }) { chaos.errorRate = value }
        if query["ranges"] == "0" { chaos.ignoresRanges = true }
        var keepAlive = request.keepsConnectionAlive
        if chaos.errorRate > 0 && Double.random(in: 0..<1, using: &random) < chaos.errorRate {
            try await discardBody(of: request, buffer: &buffer)
            try await sendSimple(503, "Service Unavailable", "chaos: fail_rate\n", keepAlive: keepAlive)
            return keepAlive
        }
        if path == "/upload" || path.hasPrefix("/upload/") {
            guard request.method == "PUT" || request.method == "POST" else {
                try await sendSimple(405, "Method Not Allowed", "use PUT or POST\n", keepAlive: keepAlive, extra: ["Allow": "PUT, POST"])
                return keepAlive
            }
            return try await receiveUpload(request, name: String(path.dropFirst("/upload".count).drop { $0 == "/" }), buffer: &buffer)
        }
        guard path.hasPrefix("/bytes/") || path.hasPrefix("/files/") else {
            try await discardBody(of: request, buffer: &buffer)
            try await sendSimple(404, "Not Found", "no such route: GET|HEAD /bytes/<size>, /files/<name>; PUT|POST /upload\n",
                                 keepAlive: keepAlive)
            return keepAlive
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            try await discardBody(of: request, buffer: &buffer)
            try await sendSimple(405, "Method Not Allowed", "use GET or HEAD\n", keepAlive: keepAlive, extra: ["Allow": "GET, HEAD"])
            return keepAlive
        }
        let source: Source
        if path.hasPrefix("/bytes/") {
            guard let size = Int64(path.dropFirst("/bytes/".count)), size >= 0, size <= configuration.maximumGeneratedSize else {
                try await sendSimple(404, "Not Found", "no such size (0…\(configuration.maximumGeneratedSize))\n", keepAlive: keepAlive)
                return keepAlive
            }
            let seed = query["seed"].flatMap { UInt64($0) } ?? 0
            source = .pattern(size: size, seed: seed)
        } else {
            let name = String(path.dropFirst("/files/".count))
            guard let directory = configuration.filesDirectory, !name.isEmpty, !name.hasPrefix("."), !name.contains("/"),
                !name.contains("%"), let status = FileSystem.status(of: directory + "/" + name),
                // A file that cannot be opened is answered 404 like one that does not exist.
                let file = try? DataFile.open(directory + "/" + name, mode: .read)
            else {
                try await sendSimple(404, "Not Found", "not found\n", keepAlive: keepAlive)
                return keepAlive
            }
            source = .file(file, size: status.size, modified: status.modifiedNanoseconds, inode: status.inode)
        }
        let validators = source.validators
        var range: ByteRange?
        if !chaos.ignoresRanges, let header = request.headers["Range"], let wanted = RangeRequest(headerValue: header),
            request.headers["If-Range"].map({ validators.satisfiesIfRange($0) }) ?? true
        {
            guard let resolved = wanted.resolved(length: source.size) else {
                try await sendSimple(416, "Range Not Satisfiable", "", keepAlive: keepAlive,
                                     extra: ["Content-Range": ContentRange(range: nil, completeLength: source.size).description])
                return keepAlive
            }
            range = resolved
        }
        var headers: HTTPHeaders = ["Content-Type": "application/octet-stream", "Accept-Ranges": chaos.ignoresRanges ? "none" : "bytes"]
        if let tag = validators.entityTag { headers.add(name: "ETag", value: tag.description) }
        if let date = validators.lastModified { headers.add(name: "Last-Modified", value: date) }
        let first = range?.first ?? 0
        let count = range?.count ?? source.size
        headers.add(name: "Content-Length", value: String(count))
        if let range { headers.add(name: "Content-Range", value: ContentRange(range: range, completeLength: source.size).description) }
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(status: range == nil ? 200 : 206, reason: range == nil ? "OK" : "Partial Content", headers: headers)
        try await stream.write(head.serialized())
        guard request.method == "GET" else { return keepAlive }
        let sent = try await sendBody(source, first: first, count: count, chaos: chaos)
        if sent < count { keepAlive = false }
        return keepAlive
    }

    private enum Source {
        case pattern(size: Int64, seed: UInt64)
        case file(DataFile, size: Int64, modified: Int64, inode: UInt64)

        var size: Int64 {
            switch self {
            case .pattern(let size, _), .file(_, let size, _, _): size
            }
        }

        var validators: Validators {
            switch self {
            case .pattern(let size, let seed):
                Validators(entityTag: EntityTag(opaque: "p-\(size)-\(seed)"), lastModified: HTTPDate(secondsSince1970: 1_700_000_000).description)
            case .file(_, let size, let modified, let inode):
                Validators(entityTag: EntityTag(opaque: "f-\(String(inode, radix: 16))-\(String(size, radix: 16))-\(String(modified, radix: 16))"),
                           lastModified: HTTPDate(secondsSince1970: modified / 1_000_000_000).description)
            }
        }
    }

    /// Sends `count` bytes from `first`; returns how many were sent (fewer when chaos drops the connection).
    private func sendBody(_ source: Source, first: Int64, count: Int64, chaos: HTTPChaosOptions) async throws -> Int64 {
        var buffer: [UInt8] = []
        var sent: Int64 = 0
        let limit = chaos.dropAfterBytes.map { min($0, count) } ?? count
        let chunk: Int64 = chaos.throttleBytesPerSecond.map { max(1024, min(256 * 1024, $0 / 20)) } ?? 256 * 1024
        let clock = LoopClock()
        let start = clock.now
        while sent < limit {
            let size = Int(min(chunk, limit - sent))
            switch source {
            case .pattern(_, let seed):
                PatternContent.fill(&buffer, count: size, offset: first + sent, seed: seed)
            case .file(let file, _, _, _):
                try file.read(into: &buffer, count: size, at: first + sent)
                if buffer.isEmpty { return sent }  // The file shrank under us: end short, the client sees it.
            }
            try await stream.write(buffer)
            sent += Int64(buffer.count)
            server.statistics.bytesServed.add(buffer.count, ordering: .relaxed)
            if let rate = chaos.throttleBytesPerSecond {
                let due = start.advanced(by: .nanoseconds(Int64(Double(sent) / Double(rate) * 1e9)))
                if due > clock.now { try await clock.sleep(until: due) }
            }
        }
        if sent < count {
            // Exactly `dropAfterBytes` reach the client: flush what is queued (a close would discard it), then FIN.
            server.statistics.chaosCloses.add(1, ordering: .relaxed)
            try? await stream.shutdownWrite()  // the peer may have closed first; the FIN is all that is left to send
            stream.close()
        }
        return sent
    }

    /// The request's body framing (RFC 9112 §6.3 for requests: chunked, Content-Length, or none).
    private func requestFraming(_ request: HTTPRequestHead) throws(HTTPParseError) -> HTTPBodyFraming {
        let codings = request.headers.listValues("Transfer-Encoding").map { $0.lowercased() }
        if !codings.isEmpty {
            guard codings == ["chunked"], request.headers["Content-Length"] == nil else {
                throw HTTPParseError(offset: 0, reason: "unsupported Transfer-Encoding or both Transfer-Encoding and Content-Length")
            }
            return .chunked
        }
        return .length(try HTTPBodyFraming.contentLength(request.headers) ?? 0)
    }

    private func discardBody(of request: HTTPRequestHead, buffer: inout [UInt8]) async throws {
        _ = try await readBody(of: request, buffer: &buffer) { _ in }
    }

    /// Reads a request body, passing it to `sink`; leaves what follows in `buffer`.
    private func readBody(of request: HTTPRequestHead, buffer: inout [UInt8], sink: (ArraySlice<UInt8>) throws -> Void) async throws -> Int64 {
        var decoder = HTTPBodyDecoder(framing: try requestFraming(request))
        while true {
            if !buffer.isEmpty || decoder.isComplete {
                switch try decoder.decode(buffer[...], into: sink) {
                case .complete(let consumed):
                    buffer.removeFirst(consumed)
                    return decoder.bodyBytes
                case .needMoreData:
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            guard try await stream.read(into: &buffer, maxBytes: 256 * 1024) > 0 else {
                try decoder.finish()
                return decoder.bodyBytes
            }
        }
    }

    private func receiveUpload(_ request: HTTPRequestHead, name: String, buffer: inout [UInt8]) async throws -> Bool {
        let keepAlive = request.keepsConnectionAlive
        let declared = try HTTPBodyFraming.contentLength(request.headers)
        if let declared, declared > configuration.maximumUploadSize {
            try await sendSimple(413, "Content Too Large", "the limit is \(configuration.maximumUploadSize) bytes\n", keepAlive: false)
            return false
        }
        if request.headers["Expect"]?.lowercased() == "100-continue" {
            try await stream.write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        var file: DataFile?
        if let directory = configuration.uploadDirectory {
            let safeName = name.isEmpty || name.hasPrefix(".") || name.contains("/") || name.contains("%")
                ? "upload-\(server.statistics.uploads.load(ordering: .relaxed) + 1)" : name
            let path = directory + "/" + safeName
            try? FileSystem.remove(path)  // an upload replaces any earlier file of that name; none is fine
            file = try DataFile.open(path, mode: .createNew)
        }
        defer { file?.close() }
        let hasher = SHA256Hasher()
        let contentType = request.headers["Content-Type"] ?? ""
        let boundary = MultipartScanner.boundary(contentType: contentType)
        var multipartBody: [UInt8] = []
        var received: Int64 = 0
        let maximum = configuration.maximumUploadSize
        let total = try await readBody(of: request, buffer: &buffer) { bytes in
            received += Int64(bytes.count)
            if received > maximum { throw HTTPParseError(offset: Int(received), reason: "upload exceeds \(maximum) bytes") }
            hasher.update(bytes)
            try file?.write(bytes, at: received - Int64(bytes.count))
            if boundary != nil && multipartBody.count < 64 * 1024 * 1024 { multipartBody.append(contentsOf: bytes) }
        }
        server.statistics.uploads.add(1, ordering: .relaxed)
        server.statistics.bytesUploaded.add(Int(total), ordering: .relaxed)
        var answer = "{\"bytes\":\(total),\"sha256\":\"\(Crypto.hex(hasher.finalize()))\""
        if let boundary, multipartBody.count == Int(total) {
            let parts = MultipartScanner.parts(of: multipartBody, boundary: boundary)
            answer += ",\"parts\":[" + parts.map { part in
                "{\"name\":\"\(part.name)\",\"filename\":\"\(part.fileName ?? "")\",\"bytes\":\(part.body.count),\"sha256\":\"\(Crypto.hex(Crypto.sha256(part.body)))\"}"
            }.joined(separator: ",") + "]"
        }
        answer += "}\n"
        try await sendSimple(request.method == "PUT" ? 201 : 200, request.method == "PUT" ? "Created" : "OK", answer,
                             keepAlive: keepAlive, extra: ["Content-Type": "application/json"])
        return keepAlive
    }

    private func sendSimple(_ status: Int, _ reason: String, _ body: String, keepAlive: Bool, extra: HTTPHeaders = HTTPHeaders()) async throws {
        var headers = extra
        if headers["Content-Type"] == nil && !body.isEmpty { headers.add(name: "Content-Type", value: "text/plain; charset=utf-8") }
        headers.add(name: "Content-Length", value: String(body.utf8.count))
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        try await stream.write(HTTPResponseHead(status: status, reason: reason, headers: headers).serialized() + Array(body.utf8))
    }
}

/// Splits a buffered `multipart/form-data` body into its parts (RFC 7578), for the upload sink's report.
enum MultipartScanner {
    struct Part {
        var name: String
        var fileName: String?
        var body: ArraySlice<UInt8>
    }

    static func boundary(contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingCharacters(in: " ").lowercased() == "boundary" {
                var value = pair[1].trimmingCharacters(in: " ")
                if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }

    static func parts(of body: [UInt8], boundary: String) -> [Part] {
        let delimiter = Array("--\(boundary)".utf8)
        var parts: [Part] = []
        var index = find(delimiter, in: body, from: 0)
        while let start = index {
            var cursor = start + delimiter.count
            if body[cursor...].starts(with: [45, 45]) { break }  // "--": the closing delimiter.
            guard body[cursor...].starts(with: [13, 10]) else { break }
            cursor += 2
            guard let headEnd = find([13, 10, 13, 10], in: body, from: cursor) else { break }
            let headText = String(decoding: body[cursor..<headEnd], as: UTF8.self)
            let bodyStart = headEnd + 4
            guard let next = find([13, 10] + delimiter, in: body, from: bodyStart) else { break }
            var name = ""
            var fileName: String?
            for line in headText.split(separator: "\r\n") where line.lowercased().hasPrefix("content-disposition:") {
                name = parameter("name", in: String(line)) ?? ""
                fileName = parameter("filename", in: String(line))
            }
            parts.append(Part(name: name, fileName: fileName, body: body[bodyStart..<next]))
            index = next + 2
        }
        return parts
    }

    private static func parameter(_ key: String, in line: String) -> String? {
        for piece in line.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingCharacters(in: " ") == key {
                return String(pair[1].trimmingCharacters(in: " ").dropFirst().dropLast())
            }
        }
        return nil
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index] == needle[0] && haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}

extension Substring {
    func trimmingCharacters(in characters: String) -> String {
        var slice = self
        while let first = slice.first, characters.contains(first) { slice.removeFirst() }
        while let last = slice.last, characters.contains(last) { slice.removeLast() }
        return String(slice)
    }
}

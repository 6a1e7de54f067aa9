import Crypto
import HTTP1

/// The GUID appended to the key before hashing (RFC 6455 §1.3).
let webSocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`: base64(SHA-1(key + GUID)) (§4.2.2).
public func webSocketAcceptValue(forKey key: String) -> String {
    Crypto.base64Encoded(Crypto.sha1(Array((key + webSocketGUID).utf8)))
}

/// Why a client handshake was refused. The client sends nothing after a refused handshake.
public struct WebSocketHandshakeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was wrong with the response.
    public enum Kind: String, Sendable, Hashable {
        /// The status was not 101 (a redirect is reported, not followed).
        case unexpectedStatus
        case missingUpgrade
        case missingConnectionUpgrade
        case badAccept
        case unofferedSubprotocol
        case unofferedExtension
        case invalidExtension
        case malformedResponse
    }

    public var kind: Kind
    public var detail: String
    /// The HTTP status received, when there was one.
    public var status: Int?

    public init(_ kind: Kind, _ detail: String, status: Int? = nil) {
        self.kind = kind
        self.detail = detail
        self.status = status
    }

    public var description: String { detail }
}

/// What a successful client handshake agreed.
public struct WebSocketHandshakeResult: Sendable, Hashable {
    /// The subprotocol the server chose from our offer, or nil.
    public var subprotocol: String?
    /// permessage-deflate parameters, when the server accepted our offer.
    public var compression: PerMessageDeflateParameters?
    public var headers: HTTPHeaders
}

/// The client's opening handshake (RFC 6455 §4.1): builds the request and checks the response.
public struct WebSocketClientHandshake: Sendable {
    public var host: String
    public var port: Int
    public var isSecure: Bool
    /// Path and query, e.g. `/chat?room=1`.
    public var target: String
    public var origin: String?
    public var subprotocols: [String]
    public var compression: PerMessageDeflateOffer?
    /// Extra headers, e.g. `Authorization`. Handshake headers set by the client take precedence.
    public var headers: HTTPHeaders
    /// The base64 of 16 random bytes (§4.1 item 7).
    public let key: String

    /// - Parameter keyBytes: 16 bytes from a CSPRNG (the default), injectable for tests.
    public init(
        host: String, port: Int, isSecure: Bool, target: String = "/", origin: String? = nil,
        subprotocols: [String] = [], compression: PerMessageDeflateOffer? = nil, headers: HTTPHeaders = HTTPHeaders(),
        keyBytes: [UInt8] = Crypto.randomBytes(16)
    ) {
        precondition(keyBytes.count == 16, "Sec-WebSocket-Key needs 16 bytes")
        self.host = host
        self.port = port
        self.isSecure = isSecure
        self.target = target.isEmpty ? "/" : target
        self.origin = origin
        self.subprotocols = subprotocols
        self.compression = compression
        self.headers = headers
        key = Crypto.base64Encoded(keyBytes)
    }

    /// `Host`: the host, bracketed if IPv6, with the port unless it is the scheme's default.
    public var hostHeader: String {
        let name = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let defaultPort = isSecure ? 443 : 80
        return port == defaultPort ? name : "\(name):\(port)"
    }

    public var request: HTTPRequestHead {
        var fields = HTTPHeaders()
        fields.add(name: "Host", value: hostHeader)
        fields.add(name: "Upgrade", value: "websocket")
        fields.add(name: "Connection", value: "Upgrade")
        fields.add(name: "Sec-WebSocket-Key", value: key)
        fields.add(name: "Sec-WebSocket-Version", value: "13")
        if let origin { fields.add(name: "Origin", value: origin) }
        if !subprotocols.isEmpty { fields.add(name: "Sec-WebSocket-Protocol", value: subprotocols.joined(separator: ", ")) }
        if let compression { fields.add(name: "Sec-WebSocket-Extensions", value: compression.headerValue) }
        let reserved: Set<String> = ["host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
                                     "sec-websocket-protocol", "sec-websocket-extensions"]
        for field in headers where !reserved.contains(field.name.lowercased()) {
            fields.add(name: field.name, value: field.value)
        }
        return HTTPRequestHead(method: "GET", target: target, headers: fields)
    }

    /// Checks the server's response (§4.1, the client's validation steps 1–6).
    public func validate(_ response: HTTPResponseHead) throws(WebSocketHandshakeError) -> WebSocketHandshakeResult {
        let headers = response.headers
        guard response.status == 101 else {
            var detail = "expected status 101, got \(response.status) \(response.reason)"
            if (300...399).contains(response.status) {
                detail += "; redirect to \(headers["Location"] ?? "(no Location)") not followed"
            }
            throw WebSocketHandshakeError(.unexpectedStatus, detail, status: response.status)
        }
        guard headers.listContains("Upgrade", token: "websocket") else {
            throw WebSocketHandshakeError(.missingUpgrade, "Upgrade header is \(headers["Upgrade"].map { "\"\($0)\"" } ?? "missing")",
                                          status: 101)
        }
        guard headers.listContains("Connection", token: "upgrade") else {
            throw WebSocketHandshakeError(.missingConnectionUpgrade,
                                          "Connection header is \(headers["Connection"].map { "\"\($0)\"" } ?? "missing")",
                                          status: 101)
        }
        let expected = webSocketAcceptValue(forKey: key)
        guard headers.count(of: "Sec-WebSocket-Accept") == 1, headers["Sec-WebSocket-Accept"] == expected else {
            throw WebSocketHandshakeError(.badAccept, "Sec-WebSocket-Accept is \(headers["Sec-WebSocket-Accept"].map { "\"\($0)\"" } ?? "missing"), expected \"\(expected)\"",
                                          status: 101)
        }
        var result = WebSocketHandshakeResult(headers: headers)
        let protocols = headers.listValues("Sec-WebSocket-Protocol")
        if !protocols.isEmpty {
            guard protocols.count == 1, subprotocols.contains(protocols[0]) else {
                throw WebSocketHandshakeError(.unofferedSubprotocol,
                                              "server chose subprotocol \"\(protocols.joined(separator: ", "))\", not one of \(subprotocols)",
                                              status: 101)
            }
            result.subprotocol = protocols[0]
        }
        let extensionValues = headers.fields.filter { $0.name.lowercased() == "sec-websocket-extensions" }.map(\.value)
        if !extensionValues.isEmpty {
            guard let extensions = parseExtensionHeader(extensionValues) else {
                throw WebSocketHandshakeError(.invalidExtension, "malformed Sec-WebSocket-Extensions", status: 101)
            }
            for element in extensions {
                guard element.name == "permessage-deflate", let offer = compression, result.compression == nil else {
                    throw WebSocketHandshakeError(.unofferedExtension, "server accepted extension \"\(element.name)\" that was not offered",
                                                  status: 101)
                }
                do {
                    result.compression = try offer.accept(answer: element.parameters)
                } catch {
                    throw WebSocketHandshakeError(.invalidExtension, "permessage-deflate: \(error)", status: 101)
                }
            }
        }
        return result
    }
}

/// The server's side of the opening handshake (§4.2): validates a request and builds the 101.
public enum WebSocketServerHandshake {
    /// What the server agreed, or the error response to send instead.
    public enum Outcome: Sendable {
        case accept(response: HTTPResponseHead, subprotocol: String?, compression: PerMessageDeflateParameters?)
        case reject(response: HTTPResponseHead, reason: String)
    }

    /// - Parameters:
    ///   - subprotocols: protocols the server speaks, in preference order.
    ///   - isCompressionEnabled: answer a permessage-deflate offer.
    public static func respond(
        to request: HTTPRequestHead, subprotocols: [String] = [], isCompressionEnabled: Bool = true
    ) -> Outcome {
        func reject(_ status: Int, _ reason: String, _ extra: HTTPHeaders = HTTPHeaders()) -> Outcome {
            var headers = extra
            headers.add(name: "Content-Length", value: "0")
            headers.add(name: "Connection", value: "close")
            let phrase = status == 426 ? "Upgrade Required" : status == 405 ? "Method Not Allowed" : "Bad Request"
            return .reject(response: HTTPResponseHead(status: status, reason: phrase, headers: headers), reason: reason)
        }
        let headers = request.headers
        guard request.method == "GET" else { return reject(405, "method \(request.method) is not GET") }
        guard request.version == "HTTP/1.1" else { return reject(400, "version \(request.version) is not HTTP/1.1") }
        guard headers["Host"] != nil else { return reject(400, "missing Host") }
        guard headers.listContains("Upgrade", token: "websocket") else { return reject(426, "Upgrade is not websocket", ["Upgrade": "websocket"]) }
        guard headers.listContains("Connection", token: "upgrade") else { return reject(400, "Connection does not list upgrade") }
        guard headers["Sec-WebSocket-Version"] == "13" else {
            return reject(426, "unsupported Sec-WebSocket-Version", ["Sec-WebSocket-Version": "13"])
        }
        guard let key = headers["Sec-WebSocket-Key"], headers.count(of: "Sec-WebSocket-Key") == 1,
            Crypto.base64Decoded(key)?.count == 16
        else { return reject(400, "Sec-WebSocket-Key is not 16 base64-encoded bytes") }

        var response = HTTPHeaders()
        response.add(name: "Upgrade", value: "websocket")
        response.add(name: "Connection", value: "Upgrade")
        response.add(name: "Sec-WebSocket-Accept", value: webSocketAcceptValue(forKey: key))
        let offered = headers.listValues("Sec-WebSocket-Protocol")
        let chosen = subprotocols.first { offered.contains($0) }
        if let chosen { response.add(name: "Sec-WebSocket-Protocol", value: chosen) }
        var compression: PerMessageDeflateParameters?
        if isCompressionEnabled,
            let extensions = parseExtensionHeader(headers.fields.filter { $0.name.lowercased() == "sec-websocket-extensions" }.map(\.value))
        {
            // The first acceptable permessage-deflate offer wins (§9.1).
            for element in extensions where element.name == "permessage-deflate" {
                if let answer = PerMessageDeflateOffer.answer(offer: element.parameters) {
                    compression = answer
                    response.add(name: "Sec-WebSocket-Extensions", value: answer.headerValue)
                    break
                }
            }
        }
        return .accept(response: HTTPResponseHead(status: 101, reason: "Switching Protocols", headers: response),
                       subprotocol: chosen, compression: compression)
    }
}

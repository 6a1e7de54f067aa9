import Crypto
import HTTP1

/// The GUID appended to the key before hashing (RFC 6455 §1.3).
let webSocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`: base64(SHA-1(key + GUID)) (§4.2.2).
public func webSocketAcceptValue(forKey key: String) -> String {
    var input: [UInt8] = []
    input.reserveCapacity(key.utf8.count + webSocketGUIDBytes.count)
    input.append(contentsOf: key.utf8)
    input.append(contentsOf: webSocketGUIDBytes)
    return Crypto.base64Encoded(Crypto.sha1(input))
}

private let webSocketGUIDBytes = Array(webSocketGUID.utf8)

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

    /// ``request``'s wire bytes, written directly (the same bytes as `request.serialized()`, without building the
    /// fields as strings first): what a client sends.
    public var requestBytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(160 + target.utf8.count + headers.fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 })
        func line(_ name: StaticString, _ value: String) {
            bytes.append(contentsOf: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            bytes.append(contentsOf: ": ".utf8)
            bytes.append(contentsOf: value.utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        bytes.append(contentsOf: "GET ".utf8)
        bytes.append(contentsOf: target.utf8)
        bytes.append(contentsOf: " HTTP/1.1\r\n".utf8)
        line("Host", hostHeader)
        bytes.append(contentsOf: "Upgrade: websocket\r\nConnection: Upgrade\r\n".utf8)
        line("Sec-WebSocket-Key", key)
        bytes.append(contentsOf: "Sec-WebSocket-Version: 13\r\n".utf8)
        if let origin { line("Origin", origin) }
        if !subprotocols.isEmpty { line("Sec-WebSocket-Protocol", subprotocols.joined(separator: ", ")) }
        if let compression { line("Sec-WebSocket-Extensions", compression.headerValue) }
        for field in headers where !Self.reservedNames.contains(field.name.lowercased()) {
            bytes.append(contentsOf: field.name.utf8)
            bytes.append(contentsOf: ": ".utf8)
            bytes.append(contentsOf: field.value.utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        bytes.append(contentsOf: "\r\n".utf8)
        return bytes
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
        for field in headers where !Self.reservedNames.contains(field.name.lowercased()) {
            fields.add(name: field.name, value: field.value)
        }
        return HTTPRequestHead(method: "GET", target: target, headers: fields)
    }

    /// The fields the handshake sets itself; a caller's own of the same name are dropped.
    private static let reservedNames: Set<String> = ["host", "upgrade", "connection", "sec-websocket-key",
                                                     "sec-websocket-version", "sec-websocket-protocol", "sec-websocket-extensions"]

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
        let fields = HandshakeFields(headers)
        guard fields.isUpgradeToWebSocket else {
            throw WebSocketHandshakeError(.missingUpgrade, "Upgrade header is \(headers["Upgrade"].map { "\"\($0)\"" } ?? "missing")",
                                          status: 101)
        }
        guard fields.isConnectionUpgrade else {
            throw WebSocketHandshakeError(.missingConnectionUpgrade,
                                          "Connection header is \(headers["Connection"].map { "\"\($0)\"" } ?? "missing")",
                                          status: 101)
        }
        let expected = webSocketAcceptValue(forKey: key)
        guard fields.acceptCount == 1, fields.accept == expected else {
            throw WebSocketHandshakeError(.badAccept, "Sec-WebSocket-Accept is \(headers["Sec-WebSocket-Accept"].map { "\"\($0)\"" } ?? "missing"), expected \"\(expected)\"",
                                          status: 101)
        }
        var result = WebSocketHandshakeResult(headers: headers)
        let protocols = fields.protocols
        if !protocols.isEmpty {
            guard protocols.count == 1, subprotocols.contains(protocols[0]) else {
                throw WebSocketHandshakeError(.unofferedSubprotocol,
                                              "server chose subprotocol \"\(protocols.joined(separator: ", "))\", not one of \(subprotocols)",
                                              status: 101)
            }
            result.subprotocol = protocols[0]
        }
        let extensionValues = fields.extensionValues
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
        respond(to: request, fields: HandshakeFields(request.headers), subprotocols: subprotocols,
                isCompressionEnabled: isCompressionEnabled)
    }

    /// ``respond(to:subprotocols:isCompressionEnabled:)`` for a caller that already read the request's fields (the
    /// embedded server reads them once, to tell an upgrade from plain HTTP).
    package static func respond(
        to request: HTTPRequestHead, fields: HandshakeFields, subprotocols: [String] = [], isCompressionEnabled: Bool = true
    ) -> Outcome {
        func reject(_ status: Int, _ reason: String, _ extra: HTTPHeaders = HTTPHeaders()) -> Outcome {
            var headers = extra
            headers.add(name: "Content-Length", value: "0")
            headers.add(name: "Connection", value: "close")
            let phrase = status == 426 ? "Upgrade Required" : status == 405 ? "Method Not Allowed" : "Bad Request"
            return .reject(response: HTTPResponseHead(status: status, reason: phrase, headers: headers), reason: reason)
        }
        guard request.method == "GET" else { return reject(405, "method \(request.method) is not GET") }
        guard request.version == "HTTP/1.1" else { return reject(400, "version \(request.version) is not HTTP/1.1") }
        guard fields.hasHost else { return reject(400, "missing Host") }
        guard fields.isUpgradeToWebSocket else { return reject(426, "Upgrade is not websocket", ["Upgrade": "websocket"]) }
        guard fields.isConnectionUpgrade else { return reject(400, "Connection does not list upgrade") }
        guard fields.version == "13" else {
            return reject(426, "unsupported Sec-WebSocket-Version", ["Sec-WebSocket-Version": "13"])
        }
        guard let key = fields.key, fields.keyCount == 1, isSixteenByteBase64(key)
        else { return reject(400, "Sec-WebSocket-Key is not 16 base64-encoded bytes") }

        var response = HTTPHeaders()
        response.add(name: "Upgrade", value: "websocket")
        response.add(name: "Connection", value: "Upgrade")
        response.add(name: "Sec-WebSocket-Accept", value: webSocketAcceptValue(forKey: key))
        let offered = fields.protocolValues.isEmpty ? [] : fields.protocols
        let chosen = subprotocols.first { offered.contains($0) }
        if let chosen { response.add(name: "Sec-WebSocket-Protocol", value: chosen) }
        var compression: PerMessageDeflateParameters?
        if isCompressionEnabled, !fields.extensionValues.isEmpty, let extensions = parseExtensionHeader(fields.extensionValues) {
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

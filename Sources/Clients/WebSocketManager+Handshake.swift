import HTTP1
import Runtime
import WebSocket
import WebSocketIO

/// The opening handshake: TCP, TLS for wss, the HTTP upgrade and its validation (RFC 6455 §4.1).
extension WebSocketManager {
    /// Performs the opening handshake (TCP, TLS for wss, HTTP upgrade) within `handshakeTimeout`, after waiting for
    /// a place in the configuration's ``WebSocketClientConfiguration/handshakeWindow`` (if any; the wait is not
    /// part of the handshake's figures). ``run()`` calls it; call it directly only to drive the connection without
    /// `run`.
    package func connect() async throws(WebSocketClientError) {
        guard state == .idle else { throw WebSocketClientError(.invalidConfiguration, "connect() called twice") }
        state = .connecting
        let window = configuration.handshakeWindow
        var isInWindow = false
        do {
            isInWindow = try await window?.enter(on: loop) ?? false
        } catch {
            state = .closed
            throw WebSocketClientError(.notConnected, "cancelled while waiting to connect")
        }
        defer { if isInWindow { window?.leave(on: loop) } }
        guard state == .connecting else {
            // disconnect() was called while it waited.
            throw WebSocketClientError(.notConnected, "disconnected during the handshake")
        }
        var deadlineHit = false
        var target = url
        var headers = configuration.headers
        switch configuration.authentication {
        case .bearer(let token): headers.replaceOrAdd(name: "Authorization", value: "Bearer \(token)")
        case .header(let name, let value): headers.replaceOrAdd(name: name, value: value)
        case .query(let name, let token): target = url.addingQueryItem(name: name, value: token)
        case nil: break
        }
        let handshake = WebSocketClientHandshake(
            host: url.host, port: url.port, isSecure: url.isSecure, target: target.target, origin: configuration.origin,
            subprotocols: configuration.subprotocols, compression: configuration.compression, headers: headers)
        var deadline: ScheduledTimer?
        defer { deadline?.cancel() }
        do {
            if url.isSecure && configuration.tls == nil {
                throw WebSocketClientError(.invalidConfiguration, "wss:// needs a TLS context")
            }
            let started = clock.now
            let tcp = try await TCPConnection.connect(host: url.host, port: url.port, on: loop, options: configuration.tcp)
            let tcpConnected = clock.now
            var tlsDone: LoopClock.Instant?
            deadline = ScheduledTimer(on: loop, after: configuration.handshakeTimeout) {
                deadlineHit = true
                tcp.close()
            }
            var byteStream: any ByteStream = tcp
            stream = tcp
            if url.isSecure, let context = configuration.tls {
                byteStream = try await TLSConnection.connect(over: tcp, context: context, serverName: configuration.serverName ?? url.host)
                stream = byteStream
                tlsDone = clock.now
            }
            // A fault seam (nil in real runs): a test may announce the connection before the 101, the reference's bug.
            configuration.faults?.upgradeRequestWillBeSent { announceConnected(subprotocol: nil) }
            try await byteStream.write(handshake.requestBytes)
            var parser = HTTPHeadParser()
            var buffer: [UInt8] = []
            while true {
                if try await byteStream.read(into: &buffer, maxBytes: 16 * 1024) == 0 {
                    throw WebSocketClientError(.handshake, "the server closed the connection before answering the handshake")
                }
                try Self.checkLooksLikeHTTP(buffer)
                guard let (head, length) = try parser.parseResponse(buffer) else { continue }
                let result = try handshake.validate(head)
                var limits = configuration.limits
                limits.compression = result.compression
                var connection = WebSocketConnection(role: .client, configuration: limits)
                connection.receive(buffer[length...])
                channel = WebSocketChannel(stream: byteStream, connection: connection, closeTimeout: configuration.closeTimeout)
                negotiatedSubprotocol = result.subprotocol
                negotiatedCompression = result.compression
                handshakeTimings = HandshakeTimings(
                    tcpConnect: started.duration(to: tcpConnected),
                    tlsHandshake: tlsDone.map { tcpConnected.duration(to: $0) },
                    upgrade: (tlsDone ?? tcpConnected).duration(to: clock.now), completedAt: clock.now)
                break
            }
        } catch {
            stream?.close()
            state = .closed
            throw Self.classify(error, deadlineHit: deadlineHit, timeout: configuration.handshakeTimeout)
        }
        if state == .open { return }  // already announced (only a fault seam announces before the 101)
        guard state == .connecting else {
            // disconnect() was called while the handshake ran.
            stream?.close()
            state = .closed
            throw WebSocketClientError(.notConnected, "disconnected during the handshake")
        }
        announceConnected(subprotocol: negotiatedSubprotocol)
    }

    /// The connection counts as open from now: `.connected` is emitted.
    private func announceConnected(subprotocol: String?) {
        state = .open
        connectedAt = clock.now
        eventQueue.yield(.connected(subprotocol: subprotocol))
    }

    /// Fail fast on a reply that is no HTTP at all (another protocol on the port, noise): its first bytes must
    /// be `HTTP/1.`, so it is refused as soon as they differ, not at the handshake timeout after waiting for a
    /// head that never ends. The bytes are named in hex (a peer's bytes never reach a terminal raw).
    static func checkLooksLikeHTTP(_ buffer: [UInt8]) throws(WebSocketHandshakeError) {
        let expected = Array("HTTP/1.".utf8)
        for (offset, byte) in zip(buffer, expected).enumerated().map({ ($0.offset, $0.element.0) })
        where byte != expected[offset] {
            let start = buffer.prefix(8).map { byte in
                let digits = String(byte, radix: 16)
                return digits.count == 1 ? "0" + digits : digits
            }.joined(separator: " ")
            throw WebSocketHandshakeError(
                .malformedResponse, "the reply is not HTTP/1.x (byte offset \(offset); it starts with \(start))")
        }
    }

    private static func classify(_ error: any Error, deadlineHit: Bool, timeout: Duration) -> WebSocketClientError {
        if deadlineHit { return WebSocketClientError(.handshakeTimeout, "no complete handshake within \(timeout)") }
        switch error {
        case let error as WebSocketClientError: return error
        case let error as RuntimeError: return .from(error, during: .connect)
        case let error as WebSocketHandshakeError: return WebSocketClientError(.handshake, error.detail, handshakeError: error)
        case let error as HTTPParseError: return WebSocketClientError(.handshake, "malformed response: \(error)")
        case is CancellationError: return WebSocketClientError(.notConnected, "cancelled during the handshake")
        default: return WebSocketClientError(.connect, "\(error)")
        }
    }
}

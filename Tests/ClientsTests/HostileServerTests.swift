import Clients
import HTTP1
import Runtime
import TestSupport
import Testing
import WebSocket

/// A server that answers the upgrade (correctly or not) and then sends raw bytes; it returns what the
/// client sent after the handshake, until the client closed.
private func hostileExchange(
    loop: EventLoop, badAccept: Bool = false, afterHandshake: [UInt8]
) async throws -> (log: EventLog, clientBytes: [UInt8]) {
    let listener = try await loop.submit { try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop) }
    defer { listener.close() }
    let server = Task(executorPreference: loop.taskExecutor) { () async throws -> [UInt8] in
        let connection = try await listener.accept()
        defer { connection.close() }
        var parser = HTTPHeadParser()
        var buffer: [UInt8] = []
        while true {
            guard try await connection.read(into: &buffer) > 0 else { return [] }
            if let (request, length) = try parser.parseRequest(buffer) {
                buffer.removeFirst(length)
                let key = request.headers["Sec-WebSocket-Key"] ?? ""
                let accept = badAccept ? "AAAAAAAAAAAAAAAAAAAAAAAAAAA=" : webSocketAcceptValue(forKey: key)
                let response = HTTPResponseHead(status: 101, reason: "Switching Protocols", headers: [
                    "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": accept,
                ])
                try await connection.write(response.serialized() + afterHandshake)
                break
            }
        }
        // Everything the client sends from now on, until it closes (at most 5 s: a test that expected a
        // failure the client did not see must fail, not hang).
        let deadline = ScheduledTimer(on: loop, after: .seconds(5)) { connection.close() }
        defer { deadline.cancel() }
        while let count = try? await connection.read(into: &buffer), count > 0 {}
        return buffer
    }
    let log = try await runSession(url: "ws://127.0.0.1:\(listener.localAddress.port)/",
                                   configuration: .init(closeTimeout: .milliseconds(300)), loop: loop)
    return (log, try await server.value)
}

/// The close code in the first frame of `bytes` (a client's masked close frame).
private func closeCode(in bytes: [UInt8]) throws -> UInt16? {
    var parser = WebSocketFrameParser(role: .server)
    parser.append(bytes)
    guard let frame = try parser.nextFrame(), frame.opcode == .close, frame.payload.count >= 2 else { return nil }
    return UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1])
}

@Suite("A hostile server", .serialized, .timeLimit(.minutes(2)))
struct HostileServerTests {
    @Test("protocol violations fail the client with the right close code, sent to the server", arguments: [
        ([0xC1, 0x01, 0x41], 1002, "RSV1"),
        ([0x83, 0x00], 1002, "reserved opcode"),
        ([0x8F, 0x00], 1002, "reserved opcode"),
        ([0x89, 0x7E, 0x00, 0x80] + [UInt8](repeating: 0, count: 128), 1002, "longer than 125"),
        ([0x09, 0x01, 0x41], 1002, "fragmented ping"),
        ([0x81, 0x02, 0xC3, 0x28], 1007, "UTF-8"),
        // F0 9F then 28: the code point split across fragments is broken in the second one.
        ([0x01, 0x02, 0xF0, 0x9F, 0x80, 0x02, 0x28, 0x80], 1007, "UTF-8"),
        ([0x81, 0x81, 0x01, 0x02, 0x03, 0x04, 0x40], 1002, "masked frame"),
        ([0x80, 0x01, 0x41], 1002, "continuation frame without"),
        ([0x88, 0x02, 0x03, 0xEE], 1002, "1006 is not allowed"),
    ] as [([UInt8], UInt16, String)])
    func violations(bytes: [UInt8], code: UInt16, reason: String) async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let (log, clientBytes) = try await hostileExchange(loop: group.loops[0], afterHandshake: bytes)
            #expect(log.names == ["connected", "error(protocol)", "disconnected(\(code))"])
            if case .error(let error)? = log.all.dropFirst().first {
                #expect(error.protocolError?.closeCode.rawValue == code)
                #expect(error.detail.contains(reason), "\(error.detail)")
            }
            #expect(try closeCode(in: clientBytes) == code)
        }
    }

    @Test("a bad Sec-WebSocket-Accept: the client refuses and sends nothing after the request")
    func badAccept() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let (log, clientBytes) = try await hostileExchange(loop: group.loops[0], badAccept: true, afterHandshake: [0x81, 0x01, 0x41])
            #expect(log.names == ["error(handshake)"])
            if case .error(let error)? = log.all.first { #expect(error.handshakeError?.kind == .badAccept) }
            #expect(clientBytes.isEmpty)
        }
    }

    @Test("an oversized message fails with 1009 before it is buffered")
    func oversized() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            // Announces 64 MiB and sends only the header: the limit must fire on the header alone.
            let header: [UInt8] = [0x82, 0x7F, 0, 0, 0, 0, 0x04, 0, 0, 0]
            let (log, clientBytes) = try await hostileExchange(loop: group.loops[0], afterHandshake: header)
            #expect(log.names == ["connected", "error(protocol)", "disconnected(1009)"])
            #expect(try closeCode(in: clientBytes) == 1009)
        }
    }
}

import Runtime
import TestSupport
import Testing
import WebSocket
import WebSocketIO

/// A client's and a server's channel over one loopback TCP connection on the calling task's loop.
private struct ChannelPair {
    let client: WebSocketChannel
    let server: WebSocketChannel
    let listener: TCPListener
    /// Closes both sides after 10 s, so a test whose answer never comes fails (a nil) instead of hanging.
    let deadline: ScheduledTimer

    init(
        on loop: EventLoop, serverLimits: WebSocketConnection.Configuration = .init(),
        clientCloseTimeout: Duration = .seconds(30), serverPrefix: [UInt8] = []
    ) async throws {
        let (client, server, listener) = try await connectedPair(on: loop)
        self.client = WebSocketChannel(stream: client, connection: WebSocketConnection(role: .client),
                                       closeTimeout: clientCloseTimeout)
        var connection = WebSocketConnection(role: .server, configuration: serverLimits)
        connection.receive(serverPrefix)
        self.server = WebSocketChannel(stream: server, connection: connection)
        self.listener = listener
        deadline = ScheduledTimer(on: loop, after: .seconds(10)) {
            client.close()
            server.close()
        }
    }

    func close() {
        deadline.cancel()
        client.stream.close()
        server.stream.close()
        listener.close()
    }
}

/// The first frame in `bytes`, as the `role` side parses it.
private func firstFrame(_ bytes: [UInt8], parsedBy role: WebSocketFrameParser.Role) throws -> WebSocketFrame? {
    var parser = WebSocketFrameParser(role: role)
    parser.append(bytes)
    return try parser.nextFrame()
}

@Suite("WebSocketChannel: the one read loop of client and server", .serialized, .timeLimit(.minutes(2)))
struct WebSocketChannelTests {
    @Test("messages arrive in order as text and binary; bytes read past the handshake come first, without a read")
    func messages() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await onLoop(group.loops[0]) {
                // What a client sent right behind its upgrade request: the server read it with the request.
                var early = WebSocketConnection(role: .client)
                early.send(.text("early"))
                let pair = try await ChannelPair(on: group.loops[0], serverPrefix: early.takeOutput())
                defer { pair.close() }
                #expect(try await pair.server.next() == .message(.text("early")))
                pair.client.connection.send(.text("one"))
                pair.client.connection.send(.binary([1, 2, 3]))
                try await pair.client.flush()
                #expect(try await pair.server.next() == .message(.text("one")))
                #expect(try await pair.server.next() == .message(.binary([1, 2, 3])))
                // The echo: queued on the connection, written before the server's next read.
                pair.server.connection.send(.binary([1, 2, 3]))
                pair.client.connection.send(.text("two"))
                try await pair.client.flush()
                #expect(try await pair.server.next() == .message(.text("two")))
                #expect(try await pair.client.next() == .message(.binary([1, 2, 3])))
            }
        }
    }

    @Test("a ping is answered with its payload before .ping is returned; the pong is handed back to match")
    func pingAnswered() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await onLoop(group.loops[0]) {
                let pair = try await ChannelPair(on: group.loops[0])
                defer { pair.close() }
                pair.client.connection.sendPing([0, 0, 0, 0, 0, 0, 0, 42])
                try await pair.client.flush()
                #expect(try await pair.server.next() == .ping([0, 0, 0, 0, 0, 0, 0, 42]))
                // Nothing else was queued: the pong is on the wire already, and the client's read finds it.
                #expect(!pair.server.connection.hasOutput)
                #expect(try await pair.client.next() == .pong([0, 0, 0, 0, 0, 0, 0, 42]))
                // An unsolicited pong is handed back too (§5.5.3): the owner decides it matches nothing.
                pair.server.connection.sendPong([7])
                try await pair.server.flush()
                #expect(try await pair.client.next() == .pong([7]))
            }
        }
    }

    @Test("the client closes: the server replies with the code and does not wait; the client sees the server's FIN")
    func clientStartsClose() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await onLoop(group.loops[0]) {
                let pair = try await ChannelPair(on: group.loops[0], clientCloseTimeout: .seconds(30))
                defer { pair.close() }
                pair.client.connection.close(code: WebSocketCloseCode(rawValue: 4000), reason: "bye")
                try await pair.client.flush()
                #expect(try await pair.server.next() == .closeReceived(code: WebSocketCloseCode(rawValue: 4000), reason: "bye"))
                #expect(pair.server.connection.state == .closed)
                // A server closes TCP first (§7.1.1): its loop is over at once.
                #expect(try await pair.server.next() == nil)
                pair.server.stream.close()
                let clock = LoopClock()
                let start = clock.now
                #expect(try await pair.client.next() == .closeReceived(code: WebSocketCloseCode(rawValue: 4000), reason: ""))
                #expect(try await pair.client.next() == nil)
                // Below the pair's 10 s safety close, so a client that ignored the FIN and sat out its 30 s timeout
                // (or the safety close) fails here.
                #expect(start.duration(to: clock.now) < .seconds(5), "the client waited for its close timeout")
            }
        }
    }

    @Test("queueIfOpen queues a message while open; once the peer's close is read it returns false and queues nothing")
    func queueIfOpen() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await onLoop(group.loops[0]) {
                let pair = try await ChannelPair(on: group.loops[0], clientCloseTimeout: .milliseconds(100))
                defer { pair.close() }
                #expect(pair.client.queueIfOpen(.text("before")))
                try await pair.client.flush()
                #expect(try await pair.server.next() == .message(.text("before")))
                pair.server.connection.close(code: .normalClosure, reason: "")
                try await pair.server.flush()
                #expect(try await pair.client.next() == .closeReceived(code: .normalClosure, reason: ""))
                // The reply to the close went out with next(): a message now would be dropped unseen, so it is refused.
                #expect(!pair.client.queueIfOpen(.text("after")))
                #expect(!pair.client.connection.hasOutput)
            }
        }
    }

    @Test("the server closes: the client replies, then waits for the server's FIN at most closeTimeout")
    func serverStartsClose() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await onLoop(group.loops[0]) {
                let pair = try await ChannelPair(on: group.loops[0], clientCloseTimeout: .milliseconds(200))
                defer { pair.close() }
                pair.server.connection.close(code: WebSocketCloseCode(rawValue: 4001), reason: "chaos")
                try await pair.server.flush()
                #expect(try await pair.client.next() == .closeReceived(code: WebSocketCloseCode(rawValue: 4001), reason: "chaos"))
                // The client's reply echoes the code (§5.5.1); it completes the server's handshake.
                #expect(try await pair.server.next() == .closeReceived(code: WebSocketCloseCode(rawValue: 4001), reason: ""))
                // This server never closes TCP: the client's wait ends with its timer (which never fires early).
                let clock = LoopClock()
                let start = clock.now
                #expect(try await pair.client.next() == nil)
                // libuv keeps loop time in whole milliseconds: a timer may fire up to 1 ms before the nanosecond clock.
                #expect(start.duration(to: clock.now) >= .milliseconds(199))
                // The timer closed the client's stream: the server reads its FIN.
                var rest: [UInt8] = []
                #expect(try await pair.server.stream.read(into: &rest) == 0)
            }
        }
    }

    @Test("a frame over the limit is refused with 1009 from its header, the close frame written; then nil")
    func oversizeRefused() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await onLoop(group.loops[0]) {
                let pair = try await ChannelPair(on: group.loops[0], serverLimits: .init(maximumFrameSize: 1024))
                defer { pair.close() }
                // Only the header of a 64 MiB masked frame: the limit must fire before any payload arrives.
                try await pair.client.stream.write([0x82, 0xFF, 0, 0, 0, 0, 0x04, 0, 0, 0, 1, 2, 3, 4])
                guard case .failed(let error)? = try await pair.server.next() else {
                    Issue.record("the oversize frame was not refused")
                    return
                }
                #expect(error.closeCode == .messageTooBig)
                #expect(try await pair.server.next() == nil)
                var bytes: [UInt8] = []
                _ = try await pair.client.stream.read(into: &bytes)
                let frame = try firstFrame(bytes, parsedBy: .client)
                #expect(frame?.opcode == .close)
                #expect(frame?.payload.prefix(2) == [0x03, 0xF1])  // 1009
            }
        }
    }

    @Test("a protocol violation is .failed with its code and the close frame is written (a client's side)")
    func violation() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await onLoop(group.loops[0]) {
                let pair = try await ChannelPair(on: group.loops[0])
                defer { pair.close() }
                try await pair.server.stream.write([0x83, 0x00])  // a reserved opcode
                guard case .failed(let error)? = try await pair.client.next() else {
                    Issue.record("the violation was not reported")
                    return
                }
                #expect(error.closeCode == .protocolError)
                // A failure is no closing handshake: no wait for the server's FIN.
                #expect(try await pair.client.next() == nil)
                #expect(try await pair.server.next() == .closeReceived(code: .protocolError, reason: ""))
            }
        }
    }

    @Test("the transport ending without a close is nil; a held read is parsed only after the hold")
    func endAndHold() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await onLoop(group.loops[0]) {
                let pair = try await ChannelPair(on: group.loops[0])
                defer { pair.close() }
                let clock = LoopClock()
                let start = clock.now
                pair.server.readsHeldUntil = start.advanced(by: .milliseconds(150))
                pair.client.connection.send(.text("held"))
                try await pair.client.flush()
                #expect(try await pair.server.next() == .message(.text("held")))
                #expect(start.duration(to: clock.now) >= .milliseconds(149))  // whole-millisecond loop time, as above
                #expect(pair.server.readsHeldUntil == nil)
                pair.client.stream.close()
                #expect(try await pair.server.next() == nil)
            }
        }
    }
}

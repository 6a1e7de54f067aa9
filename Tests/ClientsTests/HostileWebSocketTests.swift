import Clients
import Runtime
import Synchronization
import TestSupport
import Testing
import WebSocket

/// The hostile WebSocket server kit (Tests/Peers/hostile_ws.py, one mode per path) against the client: each case
/// ends with the client alive, the right error (and close code sent, where one applies), within a deadline.
@Suite("A hostile WebSocket server (hostile_ws.py)", .serialized, .timeLimit(.minutes(4)))
struct HostileWebSocketTests {
    /// What one session against a mode showed: the events, and the close code the server saw from the client.
    struct Outcome {
        var log: EventLog
        var clientClose: String?
    }

    /// One run()+events() session against `mode` of a fresh peer; the peer's `client-close` line says what the
    /// client sent at the end.
    private func session(
        _ mode: String, configuration: WebSocketClientConfiguration = .init(closeTimeout: .seconds(2)),
        isExpectingClose: Bool = true,
        script: @escaping @Sendable (WebSocketManager, AsyncStream<WebSocketManager.Event>.Iterator) async throws -> Void = { _, _ in }
    ) async throws -> Outcome {
        let peer = try startPythonPeer("hostile_ws.py")
        defer { peer.process.stop() }
        return try await withLoopGroup(loopCount: 1) { group in
            let log = try await runSession(
                url: "ws://127.0.0.1:\(peer.port)/\(mode)", configuration: configuration, loop: group.loops[0], script: script)
            guard isExpectingClose else { return Outcome(log: log) }
            let line = peer.process.waitForLine(containing: "client-close", timeout: .seconds(60))
            return Outcome(log: log, clientClose: line.map { String($0.split(separator: " ").last ?? "") })
        }
    }

    @Test("a server flooding 100k messages at a consumer that does not read: the reader waits, pending stays at the mark, nothing is lost")
    func floodAtSlowConsumer() async throws {
        let peer = try startPythonPeer("hostile_ws.py")
        defer { peer.process.stop() }
        let total = 100_000
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let configuration = WebSocketClientConfiguration(closeTimeout: .seconds(5))
            let mark = configuration.maximumPendingMessages
            let manager = WebSocketManager(
                url: try WebSocketURL("ws://127.0.0.1:\(peer.port)/flood?n=\(total)"), configuration: configuration, loop: loop)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask(executorPreference: loop.taskExecutor) { await manager.run() }
                var iterator = manager.events().makeAsyncIterator()
                guard case .connected? = await iterator.next() else {
                    Issue.record("no connection")
                    return
                }
                // The consumer reads nothing for a while: the reader must stop at the mark, however long we wait.
                try await Deadline.waitUntil("the pending events to reach the mark") { manager.pendingEventCount >= mark }
                var highest = 0
                for _ in 0..<40 {
                    highest = max(highest, manager.pendingEventCount)
                    try await Task.sleep(for: .milliseconds(25))
                }
                #expect(highest <= mark, "pending grew to \(highest) with a mark of \(mark)")
                // The consumer resumes: every message arrives, in order, then the server's close.
                var received = 0
                var isInOrder = true
                var ending: WebSocketManager.Event?
                while let event = await iterator.next() {
                    switch event {
                    case .text(let text):
                        if text != "m\(received)" { isInOrder = false }
                        received += 1
                        highest = max(highest, manager.pendingEventCount)
                    default:
                        ending = event
                    }
                }
                #expect(received == total)
                #expect(isInOrder)
                #expect(highest <= mark, "pending grew to \(highest)")
                #expect(manager.discardedMessageCount == 0)
                if case .disconnected(let code, _)? = ending { #expect(code == .normalClosure) } else {
                    Issue.record("ended with \(String(describing: ending))")
                }
                try await tasks.waitForAll()
            }
        }
    }

    @Test("a protocol violation after a valid handshake fails the client with its close code, sent to the server", arguments: [
        ("random", 1002, "RSV"),
        ("huge-63", 1009, "exceeds"),
        ("huge-64", 1002, "most significant bit"),
        ("bad-close-code", 1002, "1005"),
        ("bad-close-utf8", 1007, "UTF-8"),
        ("ping-126", 1002, "125"),
    ] as [(String, UInt16, String)])
    func violation(mode: String, code: UInt16, detail: String) async throws {
        let start = ContinuousClock.now
        let outcome = try await session(mode)
        #expect(outcome.log.names == ["connected", "error(protocol)", "disconnected(\(code))"], "\(mode)")
        if case .error(let error)? = outcome.log.all.dropFirst().first {
            #expect(error.protocolError?.closeCode.rawValue == code)
            #expect(error.detail.contains(detail), "\(error.detail)")
        }
        #expect(outcome.clientClose == "\(code)", "the client's close frame, as the server saw it")
        #expect(ContinuousClock.now - start < .seconds(60), "the failure came within the deadline")
    }

    @Test("a reply that is not HTTP, and a 101 with a wrong Sec-WebSocket-Accept: a handshake error, nothing sent after")
    func handshakeRefused() async throws {
        for (mode, kind) in [("not-http", WebSocketHandshakeError.Kind.malformedResponse), ("bad-accept", .badAccept)] {
            let start = ContinuousClock.now
            let outcome = try await session(mode, configuration: .init(handshakeTimeout: .seconds(20)))
            #expect(outcome.log.names == ["error(handshake)"], "\(mode)")
            if case .error(let error)? = outcome.log.all.first {
                #expect(error.handshakeError?.kind == kind, "\(mode): \(error)")
            }
            #expect(outcome.clientClose == "none", "\(mode): no frame after a refused handshake")
            if mode == "not-http" {
                if case .error(let error)? = outcome.log.all.first { #expect(error.detail.contains("byte offset 0"), "\(error)") }
                #expect(ContinuousClock.now - start < .seconds(15), "refused at once, not at the 20 s handshake timeout")
            }
        }
    }

    @Test("an endless handshake head (headers forever) is refused at the head size limit, long before the timeout")
    func endlessHead() async throws {
        let start = ContinuousClock.now
        let outcome = try await session("endless-head", configuration: .init(handshakeTimeout: .seconds(60)), isExpectingClose: false)
        #expect(outcome.log.names == ["error(handshake)"])
        if case .error(let error)? = outcome.log.all.first { #expect(error.detail.contains("exceeds"), "\(error)") }
        #expect(ContinuousClock.now - start < .seconds(50), "refused by size, not by the 60 s handshake timeout")
    }

    @Test("an endless handshake head against a short handshake timeout: handshake_timeout, not a hang")
    func endlessHeadTimeout() async throws {
        // 1 KiB every 10 ms reaches 16 KiB in ~0.2 s; a 100 ms timeout fires first on any box speed that matters.
        let outcome = try await session("endless-head", configuration: .init(handshakeTimeout: .milliseconds(100)), isExpectingClose: false)
        #expect(outcome.log.names == ["error(handshake_timeout)"] || outcome.log.names == ["error(handshake)"], "\(outcome.log.names)")
    }

    @Test("a BFINAL deflate message with context takeover, then a second message against its window: both inflate")
    func bfinalDeflate() async throws {
        let outcome = try await session("bfinal", configuration: .init(compression: PerMessageDeflateOffer(), closeTimeout: .seconds(2)))
        #expect(outcome.log.names == ["connected", "text", "text", "disconnected(1000)"])
        let texts = outcome.log.all.compactMap { event -> String? in if case .text(let text) = event { text } else { nil } }
        #expect(texts == ["first message, first message", "second message refers to the first message"])
        #expect(outcome.clientClose == "1000")
    }

    @Test("a valid message trickled byte by byte arrives whole, then the server's close")
    func trickle() async throws {
        let outcome = try await session("trickle")
        #expect(outcome.log.names == ["connected", "text", "disconnected(1000)"])
        if case .text(let text)? = outcome.log.all.dropFirst().first {
            #expect(text == String((0..<1000).map { Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8($0 % 26))) }))
        }
        #expect(outcome.clientClose == "1000")
    }
}

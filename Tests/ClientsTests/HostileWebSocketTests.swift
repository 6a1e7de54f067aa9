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
}

import Clients
import Runtime
import Synchronization
import TestSupport
import Testing
import WebSocket

/// At most `limit` opening handshakes per loop are in flight; the rest wait in arrival order, and a waiter that is
/// cancelled leaves without taking a place.
@Suite("Handshake window", .timeLimit(.minutes(2)))
struct HandshakeWindowTests {
    @Test("places are taken up to the limit, then handed over in arrival order; a cancelled waiter takes none")
    func admission() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let window = HandshakeWindow(loops: [loop], limit: 2)
            let admitted = Lock<[Int]>([])
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for index in 0..<5 {
                    tasks.addTask(executorPreference: loop.taskExecutor) {
                        do {
                            _ = try await window.enter(on: loop)
                            admitted.withLock { $0.append(index) }
                        } catch is CancellationError {
                            admitted.withLock { $0.append(-index) }
                        }
                    }
                    // One at a time, so the arrival order is the index order.
                    try await Deadline.waitUntil("task \(index) to enter or wait") {
                        (try? await loop.submit { window.inFlight(on: loop) + window.waiting(on: loop) }) == index + 1
                    }
                }
                #expect(admitted.withLock { $0 } == [0, 1])
                #expect(try await loop.submit { window.waiting(on: loop) } == 3)
                try await loop.submit { window.leave(on: loop) }
                try await Deadline.waitUntil("the first waiter to be admitted") { admitted.withLock { $0.count } == 3 }
                #expect(admitted.withLock { $0 } == [0, 1, 2])
                #expect(try await loop.submit { window.inFlight(on: loop) } == 2)
                tasks.cancelAll()
                try await tasks.waitForAll()
            }
            // The two still waiting were cancelled: neither took a place.
            #expect(admitted.withLock { Set($0.suffix(2)) } == [-3, -4])
            #expect(try await loop.submit { (window.inFlight(on: loop), window.waiting(on: loop)) } == (2, 0))
            // Three were admitted and one place was handed over: two are held.
            try await loop.submit {
                window.leave(on: loop)
                window.leave(on: loop)
            }
            #expect(try await loop.submit { window.inFlight(on: loop) } == 0)
            // A loop the window does not cover passes through.
            let other = try EventLoop(index: 9)
            defer { _ = other.shutdown() }
            #expect(try await onLoop(other) { try await window.enter(on: other) } == false)
        }
    }

    @Test("a window of 3 lets 3 handshakes reach a silent server; the others start as those end")
    func managersWait() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let window = HandshakeWindow(loops: [loop], limit: 3)
            var configuration = WebSocketClientConfiguration(handshakeTimeout: .seconds(30))
            configuration.handshakeWindow = window
            let listener = try await loop.submit { try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop) }
            let url = try WebSocketURL("ws://127.0.0.1:\(listener.localAddress.port)/")
            let accepted = Lock<[TCPConnection]>([])
            let outcomes = Lock<[String]>([])
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                // A server that accepts and never answers: every handshake that started stays in flight.
                tasks.addTask(executorPreference: loop.taskExecutor) {
                    while let connection = try? await listener.accept() { accepted.withLock { $0.append(connection) } }
                }
                let managers = (0..<10).map { _ in WebSocketManager(url: url, configuration: configuration, loop: loop) }
                for manager in managers {
                    tasks.addTask(executorPreference: loop.taskExecutor) {
                        do throws(WebSocketClientError) {
                            try await manager.connect()
                            outcomes.withLock { $0.append("connected") }
                        } catch {
                            outcomes.withLock { $0.append(error.code.rawValue) }
                        }
                    }
                }
                try await Deadline.waitUntil("3 connections at the server") { accepted.withLock { $0.count } == 3 }
                try await Task.sleep(for: .milliseconds(200))
                #expect(accepted.withLock { $0.count } == 3, "only the window's 3 may have connected")
                #expect(try await loop.submit { (window.inFlight(on: loop), window.waiting(on: loop)) } == (3, 7))
                // The server hangs up on the three: their handshakes fail, and three more start.
                for connection in accepted.withLock({ $0 }) { connection.close() }
                try await Deadline.waitUntil("3 more connections at the server") { accepted.withLock { $0.count } == 6 }
                #expect(outcomes.withLock { $0.count } == 3)
                for manager in managers { await manager.disconnect() }
                try await Deadline.waitUntil("every connect to end") { outcomes.withLock { $0.count } == 10 }
                listener.close()
                for connection in accepted.withLock({ $0 }) { connection.close() }
                try await tasks.waitForAll()
            }
            #expect(outcomes.withLock { $0.contains("connected") } == false)
            #expect(try await loop.submit { (window.inFlight(on: loop), window.waiting(on: loop)) } == (0, 0))
        }
    }
}

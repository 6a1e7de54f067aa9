import Runtime
import TestSupport
import Testing

@Suite("Structured cancellation", .timeLimit(.minutes(2)))
struct CancellationTests {
    @Test("cancelling 10,000 children blocked on reads, accepts and timers ends them all, with no leaks")
    func cancelTenThousand() async throws {
        ResourceLimits.raiseOpenFileLimit()
        try await withLoopGroup(loopCount: 2) { group in
            let listeners = try await TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: group.loops)
            let target = listeners[0].localAddress
            let connectionCount = 2000
            let timerCount = 10_000 - 2 * connectionCount
            let connected = Counter()
            let ended = Counter()
            let runner = Task { () -> Int in
                await withThrowingTaskGroup(of: Void.self) { tasks -> Int in
                    for listener in listeners {
                        tasks.addTask(executorPreference: listener.loop.taskExecutor) {
                            try await withThrowingDiscardingTaskGroup { connections in
                                while true {
                                    let connection = try await listener.accept()
                                    connections.addTask(executorPreference: listener.loop.taskExecutor) {
                                        defer { ended.increment() }
                                        var buffer: [UInt8] = []
                                        _ = try await connection.read(into: &buffer)
                                    }
                                }
                            }
                        }
                    }
                    for index in 0..<connectionCount {
                        let loop = group.loop(for: index)
                        tasks.addTask(executorPreference: loop.taskExecutor) {
                            defer { ended.increment() }
                            let connection = try await TCPConnection.connect(to: target, on: loop)
                            connected.increment()
                            var buffer: [UInt8] = []
                            _ = try await connection.read(into: &buffer)
                        }
                    }
                    for index in 0..<timerCount {
                        let loop = group.loop(for: index)
                        tasks.addTask(executorPreference: loop.taskExecutor) {
                            defer { ended.increment() }
                            try await loop.sleep(for: .seconds(3600))
                        }
                    }
                    // Wait (boundedly) until everyone is parked: every child waiting in the runtime.
                    let deadline = ContinuousClock.now + .seconds(60)
                    // (Connects in flight count as waiting too, so also wait for every connection to be up.)
                    while (connected.value < connectionCount || group.waitingTaskCount < 10_000 + listeners.count)
                        && ContinuousClock.now < deadline
                    {
                        try? await Task.sleep(for: .milliseconds(5))
                    }
                    let parked = group.waitingTaskCount
                    tasks.cancelAll()
                    while (try? await tasks.next()) != nil {}
                    return parked
                }
            }
            let parked = await runner.value
            #expect(parked == 10_000 + listeners.count)
            #expect(connected.value == connectionCount)
            #expect(ended.value == 10_000)
            #expect(group.waitingTaskCount == 0)
            try await waitUntil { group.liveHandleCount == 0 }
            #expect(group.liveHandleCount == 0)
        }
    }

    @Test("a task cancelled before it awaits I/O fails at once and closes the stream")
    func cancelledBeforeAwait() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            try await onLoop(loop) {
                let (client, server, listener) = try await connectedPair(on: loop)
                let reader = Task(executorPreference: loop.taskExecutor) { () async throws -> Int in
                    withUnsafeCurrentTask { $0?.cancel() }
                    var buffer: [UInt8] = []
                    return try await client.read(into: &buffer)
                }
                await #expect(throws: CancellationError.self) { _ = try await reader.value }
                // The stream is closed for good: a later write fails too.
                await #expect(throws: (any Error).self) { try await client.write([1]) }
                let sleeper = Task(executorPreference: loop.taskExecutor) {
                    withUnsafeCurrentTask { $0?.cancel() }
                    try await loop.sleep(for: .seconds(3600))
                }
                await #expect(throws: CancellationError.self) { try await sleeper.value }
                server.close()
                listener.close()
            }
        }
    }

    @Test("closing a connection fails its pending read with code closed")
    func closeFailsPendingRead() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            try await onLoop(loop) {
                let (client, server, listener) = try await connectedPair(on: loop)
                let reader = Task(executorPreference: loop.taskExecutor) { () async throws -> Int in
                    var buffer: [UInt8] = []
                    return try await client.read(into: &buffer)
                }
                try await loop.sleep(for: .milliseconds(20))
                client.close()
                let error = await #expect(throws: RuntimeError.self) { _ = try await reader.value }
                #expect(error?.code == .closed)
                server.close()
                listener.close()
            }
        }
    }
}

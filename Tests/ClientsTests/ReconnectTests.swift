import Clients
import Crypto
import EmbeddedServer
import Lifecycle
import Runtime
import Synchronization
import TestSupport
import Testing
import WebSocket

@Suite("Reconnect policy", .timeLimit(.minutes(1)))
struct ReconnectPolicyTests {
    @Test("no jitter: exact exponential schedule with sub-second steps and a cap")
    func exactSchedule() {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(250), maximumDelay: .seconds(2), multiplier: 1.5, jitter: .none)
        var random = SeededRandomNumberGenerator(seed: 1)
        let delays = (1...8).map { policy.delay(attempt: $0, previousDelay: nil, using: &random) }
        #expect(delays == [.milliseconds(250), .milliseconds(375), .microseconds(562_500), .microseconds(843_750),
                           .nanoseconds(1_265_625_000), .nanoseconds(1_898_437_500), .seconds(2), .seconds(2)])
        // The reference truncated to whole seconds: 250 ms became 0 s. Ours never does.
        #expect(delays.allSatisfy { $0 > .zero })
    }

    @Test("each jitter strategy draws inside its bounds, reproducibly for a seed", arguments: ReconnectPolicy.Jitter.allCases)
    func jitterBounds(jitter: ReconnectPolicy.Jitter) {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(10), jitter: jitter)
        var first = SeededRandomNumberGenerator(seed: 42)
        var second = SeededRandomNumberGenerator(seed: 42)
        var previous: Duration?
        var previousAgain: Duration?
        for attempt in 1...12 {
            let bounds = policy.bounds(attempt: attempt, previousDelay: previous)
            let delay = policy.delay(attempt: attempt, previousDelay: previous, using: &first)
            let again = policy.delay(attempt: attempt, previousDelay: previousAgain, using: &second)
            #expect(bounds.contains(delay), "attempt \(attempt): \(delay) outside \(bounds)")
            #expect(delay == again)
            #expect(delay <= .seconds(10))
            previous = delay
            previousAgain = again
        }
        let base = policy.baseDelay(attempt: 4)
        switch jitter {
        case .none: #expect(policy.bounds(attempt: 4, previousDelay: nil) == base...base)
        case .full: #expect(policy.bounds(attempt: 4, previousDelay: nil) == .zero...base)
        case .equal: #expect(policy.bounds(attempt: 4, previousDelay: nil) == .milliseconds(400)...base)
        case .decorrelated: #expect(policy.bounds(attempt: 4, previousDelay: .milliseconds(300)) == .milliseconds(100)...(.milliseconds(900)))
        }
    }

    @Test("attempt limits")
    func limits() {
        #expect(ReconnectPolicy(maximumAttempts: 3).allows(attempt: 3))
        #expect(!ReconnectPolicy(maximumAttempts: 3).allows(attempt: 4))
        #expect(ReconnectPolicy(maximumAttempts: nil).allows(attempt: 1_000_000))
        #expect(ReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(30)).baseDelay(attempt: 10_000) == .seconds(30))
    }
}

/// Names of reconnecting events, with delays.
private func names(_ events: [ReconnectingWebSocket<ManualClock>.Event]) -> [String] {
    events.map { event in
        switch event {
        case .connected: "connected"
        case .text: "text"
        case .data: "data"
        case .disconnected(let code, _): "disconnected(\(code.rawValue))"
        case .error(let error): "error(\(error.code.rawValue))"
        case .reconnecting(let attempt, let delay): "reconnecting(\(attempt), \(delay))"
        case .gaveUp(let attempts): "gaveUp(\(attempts))"
        }
    }
}

@Suite("ReconnectingWebSocket", .serialized, .timeLimit(.minutes(2)))
struct ReconnectingWebSocketTests {
    @Test("reconnects after server closes with exact backoff; attempts reset after each success; intentional disconnect ends it")
    func reconnectsAndResets() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            // The test closes each connection itself (the server's chaos action, on command), so nothing depends on
            // how fast a loaded box gets from one step to the next: exactly three reconnects, then a disconnect.
            try await withEmbeddedServer(ServerConfiguration(), on: group) { server in
                let clock = ManualClock()
                let policy = ReconnectPolicy(initialDelay: .milliseconds(300), jitter: .none, maximumAttempts: 5)
                let socket = ReconnectingWebSocket(url: try WebSocketURL(server.url), policy: policy, loop: group.loops[0], clock: clock)
                let collected = Collected<ReconnectingWebSocket<ManualClock>.Event>()
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    tasks.addTask(executorPreference: group.loops[0].taskExecutor) { await socket.run() }
                    tasks.addTask {
                        for await event in socket.events() { collected.append(event) }
                    }
                    for round in 1...3 {
                        try await Deadline.waitUntil("connection \(round)") { await socket.connectionCount == round }
                        // The server registers a session once its 101 is out; close it as soon as it is there.
                        try await Deadline.waitUntil("the server to close connection \(round)") {
                            await server.perform(.close(code: .goingAway, fraction: 1)) == 1
                        }
                        await clock.waitForSleepers(count: 1)
                        #expect(clock.recordedDeadlines.count == round)
                        clock.advance(by: .milliseconds(300))
                    }
                    // Connected a fourth time: now disconnect on purpose; no further attempt may follow.
                    try await Deadline.waitUntil("connection 4") { await socket.connectionCount == 4 }
                    await socket.disconnect()
                    while try await tasks.next() != nil {}
                }
                #expect(await socket.connectionCount == 4)
                let events = names(collected.all)
                // Every reconnect is attempt 1 with the initial delay: attempts reset after success.
                #expect(events == [
                    "connected", "disconnected(1001)", "reconnecting(1, 0.3 seconds)",
                    "connected", "disconnected(1001)", "reconnecting(1, 0.3 seconds)",
                    "connected", "disconnected(1001)", "reconnecting(1, 0.3 seconds)",
                    "connected", "disconnected(1000)",
                ], "\(events)")
                // Exact backoff on the manual clock: one 300 ms wait per reconnect, back to back.
                #expect(clock.recordedDeadlines.map(\.offset) == (1...3).map { .milliseconds(300 * $0) })
                // The lifecycle's record says the same: attempts 0, 1, 1, 1, each connect at its backoff's end.
                let transitions = await socket.transitions
                let connects = transitions.filter { $0.to == .connecting }
                #expect(connects.map(\.attempt) == [0, 1, 1, 1])
                #expect(connects.map(\.instant) == (0...3).map { .milliseconds(300 * $0) })
                #expect(transitions.filter { $0.to == .backingOff }.map(\.delay) == Array(repeating: .milliseconds(300), count: 3))
                #expect(transitions.last?.to == .stopped(.intentional))
            }
        }
    }

    @Test("against a dead server: growing delays, then it gives up after maximumAttempts")
    func givesUp() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let port = try await loop.submit {
                let listener = try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop)
                defer { listener.close() }
                return listener.localAddress.port
            }
            let clock = ManualClock()
            let policy = ReconnectPolicy(initialDelay: .milliseconds(100), multiplier: 2, jitter: .none, maximumAttempts: 3)
            let socket = ReconnectingWebSocket(url: try WebSocketURL("ws://127.0.0.1:\(port)/"), policy: policy, loop: loop, clock: clock)
            let collected = Collected<ReconnectingWebSocket<ManualClock>.Event>()
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask(executorPreference: loop.taskExecutor) { await socket.run() }
                tasks.addTask { for await event in socket.events() { collected.append(event) } }
                for delay in [100, 200, 400] {
                    await clock.waitForSleepers(count: 1)
                    clock.advance(by: .milliseconds(delay))
                }
                while try await tasks.next() != nil {}
            }
            #expect(names(collected.all) == [
                "error(connect)", "reconnecting(1, 0.1 seconds)", "error(connect)", "reconnecting(2, 0.2 seconds)",
                "error(connect)", "reconnecting(3, 0.4 seconds)", "error(connect)", "gaveUp(3)",
            ])
            let transitions = await socket.transitions
            #expect(transitions.filter { $0.to == .connecting }.map(\.attempt) == [0, 1, 2, 3])
            #expect(transitions.last.map { ($0.to, $0.attempt, $0.instant) } ?? (.idle, 0, .zero) ==
                    (.stopped(.gaveUp), 3, .milliseconds(700)))
        }
    }

    @Test("disconnect during a backoff wait ends at once without another attempt")
    func disconnectWhileWaiting() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let clock = ManualClock()
            let socket = ReconnectingWebSocket(url: try WebSocketURL("ws://127.0.0.1:1/"),
                                               policy: ReconnectPolicy(initialDelay: .seconds(30), jitter: .none), loop: loop, clock: clock)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask(executorPreference: loop.taskExecutor) { await socket.run() }
                await clock.waitForSleepers(count: 1)
                await socket.disconnect()
                while try await tasks.next() != nil {}
            }
            #expect(await socket.connectionCount == 0)
            #expect(clock.recordedDeadlines.count == 1)
            let last = await socket.transitions.last
            #expect(last?.from == .backingOff && last?.to == .stopped(.intentional) && last?.event == .stopRequested)
        }
    }
}

import Crypto
import Lifecycle
import Runtime
import Testing

/// A driver as callers write one: perform the lifecycle's action, report what came of it. The "connection" is a
/// script of outcomes; time is a ManualClock, so every instant the machine records is exact.
private final class ScriptedDriver: Sendable {
    enum Outcome: Sendable { case refused, openThenDropped }

    let clock = ManualClock()
    private let state: Lock<(lifecycle: ConnectionLifecycle, script: [Outcome])>

    init(policy: ReconnectPolicy?, script: [Outcome]) {
        state = Lock((ConnectionLifecycle(policy: policy, recordLimit: 64), script))
    }

    var lifecycle: ConnectionLifecycle { state.withLock { $0.lifecycle } }

    private func handle(_ event: ConnectionLifecycle.Event) -> ConnectionLifecycle.Action {
        let instant = clock.now.offset
        var random = SeededRandomNumberGenerator(seed: 3)
        return state.withLock { $0.lifecycle.handle(event, at: instant, using: &random) }
    }

    private func nextOutcome() -> Outcome? {
        state.withLock { $0.script.isEmpty ? nil : $0.script.removeFirst() }
    }

    /// Runs until the lifecycle ends; a cancelled sleep is a stop request.
    func run() async {
        var action = handle(.start)
        while true {
            switch action {
            case .connect:
                switch nextOutcome() {
                case .refused, nil:
                    action = handle(.connectFailed)
                case .openThenDropped:
                    _ = handle(.connected)
                    action = handle(.dropped)
                }
            case .wait(let delay, _):
                do {
                    try await clock.sleep(for: delay)
                    action = handle(.backoffElapsed)
                } catch {
                    action = handle(.stopRequested)
                }
            case .close:
                action = handle(.closeFinished)
            case .giveUp, .none:
                return
            }
        }
    }
}

@Suite("Connection lifecycle driven on a ManualClock", .timeLimit(.minutes(1)))
struct LifecycleDriverTests {
    @Test("the backoffs are slept to the nanosecond; instants are the clock's; give-up after the last attempt")
    func exactTiming() async throws {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(250), maximumDelay: .seconds(1), multiplier: 3,
                                     jitter: .none, maximumAttempts: 3)
        let driver = ScriptedDriver(policy: policy, script: [.refused, .openThenDropped, .refused, .refused, .refused])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await driver.run() }
            // refused → 250 ms; open, dropped → attempts reset → 250 ms; refused → 750 ms; refused → 1 s (cap).
            for step in [Duration.milliseconds(250), .milliseconds(250), .milliseconds(750), .seconds(1)] {
                await driver.clock.waitForSleepers(count: 1)
                driver.clock.advance(by: step)
            }
            try await group.waitForAll()
        }
        let lifecycle = driver.lifecycle
        #expect(lifecycle.state == .stopped(.gaveUp))
        #expect(driver.clock.recordedDeadlines.map(\.offset) ==
                [.milliseconds(250), .milliseconds(500), .milliseconds(1_250), .milliseconds(2_250)])
        let connects = lifecycle.transitions.filter { $0.to == .connecting }
        #expect(connects.map(\.attempt) == [0, 1, 1, 2, 3])
        #expect(connects.map(\.instant) ==
                [.zero, .milliseconds(250), .milliseconds(500), .milliseconds(1_250), .milliseconds(2_250)])
        let backoffs = lifecycle.transitions.filter { $0.to == .backingOff }
        #expect(backoffs.map(\.delay) == [.milliseconds(250), .milliseconds(250), .milliseconds(750), .seconds(1)])
        #expect(lifecycle.lastTransition?.event == .connectFailed && lifecycle.lastTransition?.instant == .milliseconds(2_250))
    }

    @Test("a stop during a backoff ends the lifecycle at that instant, with no further attempt")
    func stopWhileWaiting() async throws {
        let driver = ScriptedDriver(policy: ReconnectPolicy(initialDelay: .seconds(30), jitter: .none), script: [.refused])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await driver.run() }
            await driver.clock.waitForSleepers(count: 1)
            driver.clock.advance(by: .seconds(10))
            group.cancelAll()
            try await group.waitForAll()
        }
        let lifecycle = driver.lifecycle
        #expect(lifecycle.state == .stopped(.intentional))
        #expect(lifecycle.attemptCount == 1)
        #expect(lifecycle.lastTransition == .init(from: .backingOff, to: .stopped(.intentional), event: .stopRequested,
                                                  attempt: 1, delay: nil, instant: .seconds(10)))
    }
}

import Crypto
import Lifecycle
import Testing

typealias Lifecycle = ConnectionLifecycle

/// A fixed schedule: 100 ms, 200 ms, 400 ms … capped at 1 s, at most 3 retries, no jitter.
private let exact = ReconnectPolicy(
    initialDelay: .milliseconds(100), maximumDelay: .seconds(1), multiplier: 2, jitter: .none, maximumAttempts: 3)

/// Feeds `events` one per millisecond (instants 0 ms, 1 ms, …) and returns the actions.
@discardableResult
private func feed(_ machine: inout Lifecycle, _ events: [Lifecycle.Event], seed: UInt64 = 1,
                  from start: Int = 0) -> [Lifecycle.Action] {
    var random = SeededRandomNumberGenerator(seed: seed)
    return events.enumerated().map { machine.handle($0.element, at: .milliseconds(start + $0.offset), using: &random) }
}

/// The states a lifecycle can be in, each reached by events from the start (policy `exact`, or none).
enum Situation: String, CaseIterable, CustomTestStringConvertible {
    case idle, connecting, open, draining, peerDraining, closed, backingOff
    case stoppedIntentional, stoppedGaveUp, stoppedFinished

    var testDescription: String { rawValue }

    func make() -> Lifecycle {
        var machine = Lifecycle(policy: self == .closed ? nil : exact)
        let path: [Lifecycle.Event] = switch self {
        case .idle: []
        case .connecting: [.start]
        case .open: [.start, .connected]
        case .draining: [.start, .connected, .stopRequested]
        case .peerDraining: [.start, .connected, .closeBegan]
        case .closed: [.start, .connected, .dropped]
        case .backingOff: [.start, .connected, .dropped]
        case .stoppedIntentional: [.stopRequested]
        case .stoppedGaveUp: [.start, .failed]
        case .stoppedFinished: [.finished]
        }
        feed(&machine, path)
        return machine
    }
}

/// What one event does in one situation: the state after it and the action.
private struct Expected {
    let state: Lifecycle.State
    let action: Lifecycle.Action
}

/// The whole transition table. A missing entry means "ignored": no change, action `none`, no transition.
private func expected(_ situation: Situation, _ event: Lifecycle.Event) -> Expected? {
    switch (situation, event) {
    case (.idle, .start): .init(state: .connecting, action: .connect(attempt: 0))
    case (.idle, .stopRequested): .init(state: .stopped(.intentional), action: .none)
    case (.idle, .finished): .init(state: .stopped(.finished), action: .none)

    case (.connecting, .connected): .init(state: .open, action: .none)
    case (.connecting, .connectFailed): .init(state: .backingOff, action: .wait(.milliseconds(100), beforeAttempt: 1))
    case (.connecting, .failed): .init(state: .stopped(.gaveUp), action: .giveUp(attempts: 0))
    case (.connecting, .finished): .init(state: .stopped(.finished), action: .none)
    case (.connecting, .stopRequested): .init(state: .connecting, action: .none)  // remembered, see below

    case (.open, .dropped), (.open, .closeFinished):
        .init(state: .backingOff, action: .wait(.milliseconds(100), beforeAttempt: 1))
    case (.open, .closeBegan): .init(state: .draining, action: .none)
    case (.open, .stopRequested), (.open, .finished): .init(state: .draining, action: .close)
    case (.open, .failed): .init(state: .stopped(.gaveUp), action: .giveUp(attempts: 0))

    case (.draining, .dropped), (.draining, .closeFinished): .init(state: .stopped(.intentional), action: .none)
    case (.draining, .failed): .init(state: .stopped(.intentional), action: .none)
    case (.draining, .stopRequested), (.draining, .finished): .init(state: .draining, action: .none)

    case (.peerDraining, .dropped), (.peerDraining, .closeFinished):
        .init(state: .backingOff, action: .wait(.milliseconds(100), beforeAttempt: 1))
    case (.peerDraining, .failed): .init(state: .stopped(.gaveUp), action: .giveUp(attempts: 0))
    case (.peerDraining, .stopRequested), (.peerDraining, .finished): .init(state: .draining, action: .none)

    case (.backingOff, .backoffElapsed): .init(state: .connecting, action: .connect(attempt: 1))
    case (.backingOff, .stopRequested): .init(state: .stopped(.intentional), action: .none)
    case (.backingOff, .finished): .init(state: .stopped(.finished), action: .none)
    case (.backingOff, .failed): .init(state: .stopped(.gaveUp), action: .giveUp(attempts: 1))
    default: nil
    }
}

@Suite("Connection lifecycle", .timeLimit(.minutes(1)))
struct ConnectionLifecycleTests {
    @Test("every state × event: the table's state and action, one transition recorded exactly when the state moves",
          arguments: Situation.allCases, Lifecycle.Event.allCases)
    func transitionTable(situation: Situation, event: Lifecycle.Event) {
        var machine = situation.make()
        let before = machine.state
        let lastBefore = machine.lastTransition
        var random = SeededRandomNumberGenerator(seed: 7)
        let action = machine.handle(event, at: .seconds(5), using: &random)
        guard let expected = expected(situation, event) else {
            #expect(action == .none)
            #expect(machine.state == before)
            #expect(machine.lastTransition == lastBefore, "an ignored event records nothing")
            return
        }
        #expect(action == expected.action)
        #expect(machine.state == expected.state)
        if expected.state == before {
            #expect(machine.lastTransition == lastBefore)
        } else {
            let transition = machine.lastTransition
            #expect(transition?.from == before && transition?.to == expected.state && transition?.event == event)
            #expect(transition?.instant == .seconds(5), "the instant is the caller's")
        }
    }

    @Test("the ended states are closed and stopped")
    func endedStates() {
        for situation in Situation.allCases {
            let machine = situation.make()
            let ended = [.closed, .stoppedIntentional, .stoppedGaveUp, .stoppedFinished].contains(situation)
            #expect(machine.isEnded == ended, "\(situation)")
        }
        #expect(Situation.closed.make().state == .closed)
    }

    @Test("a refused server: attempts 1, 2, 3 with growing delays, then give-up after maximumAttempts")
    func givesUpAfterMaximum() {
        var machine = Lifecycle(policy: exact, recordLimit: 32)
        let actions = feed(&machine, [.start, .connectFailed, .backoffElapsed, .connectFailed, .backoffElapsed,
                                      .connectFailed, .backoffElapsed, .connectFailed])
        #expect(actions == [
            .connect(attempt: 0), .wait(.milliseconds(100), beforeAttempt: 1), .connect(attempt: 1),
            .wait(.milliseconds(200), beforeAttempt: 2), .connect(attempt: 2), .wait(.milliseconds(400), beforeAttempt: 3),
            .connect(attempt: 3), .giveUp(attempts: 3),
        ])
        #expect(machine.state == .stopped(.gaveUp))
        #expect(machine.attemptCount == 4 && machine.connectionCount == 0)
        #expect(machine.transitions.map(\.attempt) == [0, 1, 1, 2, 2, 3, 3, 3])
        #expect(machine.transitions.map(\.delay) == [nil, .milliseconds(100), nil, .milliseconds(200), nil,
                                                     .milliseconds(400), nil, nil])
        #expect(machine.transitions.map(\.instant) == (0..<8).map { .milliseconds($0) })
        // Nothing after the give-up.
        #expect(feed(&machine, [.backoffElapsed, .start, .connected]) == [.none, .none, .none])
    }

    @Test("maximumAttempts 0 gives up at the first failure; nil retries forever")
    func attemptLimits() {
        var none = Lifecycle(policy: ReconnectPolicy(jitter: .none, maximumAttempts: 0))
        #expect(feed(&none, [.start, .connectFailed]) == [.connect(attempt: 0), .giveUp(attempts: 0)])
        var forever = Lifecycle(policy: ReconnectPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(8),
                                                        jitter: .none, maximumAttempts: nil))
        feed(&forever, [.start])
        for attempt in 1...500 {
            let actions = feed(&forever, [.connectFailed, .backoffElapsed])
            #expect(actions[1] == .connect(attempt: attempt))
        }
        #expect(forever.state == .connecting && forever.attemptCount == 501)
    }

    @Test("a successful connection resets the attempts and the previous delay")
    func resetOnSuccess() {
        var machine = Lifecycle(policy: exact, recordLimit: 16)
        let actions = feed(&machine, [.start, .connectFailed, .backoffElapsed, .connectFailed, .backoffElapsed,
                                      .connected, .dropped, .backoffElapsed, .connected, .closeBegan, .closeFinished])
        #expect(actions == [
            .connect(attempt: 0), .wait(.milliseconds(100), beforeAttempt: 1), .connect(attempt: 1),
            .wait(.milliseconds(200), beforeAttempt: 2), .connect(attempt: 2), .none,
            .wait(.milliseconds(100), beforeAttempt: 1), .connect(attempt: 1), .none, .none,
            .wait(.milliseconds(100), beforeAttempt: 1),
        ])
        #expect(machine.connectionCount == 2 && machine.attemptCount == 4)
        let opened = machine.transitions.filter { $0.to == .open }
        #expect(opened.map(\.attempt) == [0, 0], "attempts read 0 once connected")
    }

    @Test("no policy: a drop or a refused first connect stays down")
    func noPolicy() {
        var dropped = Lifecycle(policy: nil)
        #expect(feed(&dropped, [.start, .connected, .dropped, .backoffElapsed, .start]) ==
                [.connect(attempt: 0), .none, .none, .none, .none])
        #expect(dropped.state == .closed && dropped.isEnded)
        var refused = Lifecycle(policy: nil)
        feed(&refused, [.start, .connectFailed])
        #expect(refused.state == .closed && refused.attemptCount == 1)
        #expect(refused.lastTransition?.delay == nil)
    }

    @Test("an intentional stop: never another connect, from any state, even with a backoff drawn")
    func intentionalStop() {
        // Mid-backoff: the wait's end is ignored.
        var backingOff = Lifecycle(policy: exact)
        #expect(feed(&backingOff, [.start, .connectFailed, .stopRequested, .backoffElapsed]) ==
                [.connect(attempt: 0), .wait(.milliseconds(100), beforeAttempt: 1), .none, .none])
        #expect(backingOff.state == .stopped(.intentional) && backingOff.attemptCount == 1)
        // Mid-connect: a failure stops; a success closes at once.
        var failing = Lifecycle(policy: exact)
        #expect(feed(&failing, [.start, .stopRequested, .connectFailed]) == [.connect(attempt: 0), .none, .none])
        #expect(failing.state == .stopped(.intentional) && failing.isStopRequested)
        var succeeding = Lifecycle(policy: exact, recordLimit: 8)
        #expect(feed(&succeeding, [.start, .stopRequested, .connected, .closeFinished]) ==
                [.connect(attempt: 0), .none, .close, .none])
        #expect(succeeding.transitions.map(\.to) == [.connecting, .draining, .stopped(.intentional)])
        // Open: drain, and a drop during the close is still the stop's end.
        var open = Lifecycle(policy: exact)
        #expect(feed(&open, [.start, .connected, .stopRequested, .dropped, .start]) ==
                [.connect(attempt: 0), .none, .close, .none, .none])
        #expect(open.state == .stopped(.intentional))
        // The peer's close, then our stop: no reconnect when it ends.
        var peer = Lifecycle(policy: exact)
        feed(&peer, [.start, .connected, .closeBegan, .stopRequested, .closeFinished])
        #expect(peer.state == .stopped(.intentional))
        // A non-retryable failure after a stop is the stop's end, not a give-up.
        var failed = Lifecycle(policy: exact)
        #expect(feed(&failed, [.start, .stopRequested, .failed]) == [.connect(attempt: 0), .none, .none])
        #expect(failed.state == .stopped(.intentional))
    }

    @Test("finished: closes an open connection and stops without a reconnect")
    func finished() {
        var machine = Lifecycle(policy: exact, recordLimit: 8)
        #expect(feed(&machine, [.start, .connected, .finished, .closeFinished]) == [.connect(attempt: 0), .none, .close, .none])
        #expect(machine.state == .stopped(.finished))
        var peer = Lifecycle(policy: exact)
        feed(&peer, [.start, .connected, .closeBegan, .finished, .dropped])
        #expect(peer.state == .stopped(.finished) && peer.isFinishRequested)
    }

    @Test("a transfer: request = connect, retryable failure = connectFailed, success = finished, deadline = stop")
    func transferShape() {
        var success = Lifecycle(policy: exact)
        #expect(feed(&success, [.start, .connectFailed, .backoffElapsed, .finished]) ==
                [.connect(attempt: 0), .wait(.milliseconds(100), beforeAttempt: 1), .connect(attempt: 1), .none])
        #expect(success.state == .stopped(.finished) && success.attemptCount == 2)
        var fatal = Lifecycle(policy: exact)
        #expect(feed(&fatal, [.start, .connectFailed, .backoffElapsed, .failed]) ==
                [.connect(attempt: 0), .wait(.milliseconds(100), beforeAttempt: 1), .connect(attempt: 1), .giveUp(attempts: 1)])
        var deadline = Lifecycle(policy: exact)
        feed(&deadline, [.start, .stopRequested, .connectFailed])
        #expect(deadline.state == .stopped(.intentional))
    }

    @Test("delays are the policy's draws, byte-exact for a seed, each jitter", arguments: ReconnectPolicy.Jitter.allCases)
    func seededDelays(jitter: ReconnectPolicy.Jitter) {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(10), maximumDelay: .seconds(2), multiplier: 3,
                                     jitter: jitter, maximumAttempts: nil)
        var machine = Lifecycle(policy: policy)
        var random = SeededRandomNumberGenerator(seed: 2024)
        var reference = SeededRandomNumberGenerator(seed: 2024)
        var previous: Duration?
        _ = machine.handle(.start, at: .zero, using: &random)
        for attempt in 1...10 {
            let bounds = policy.bounds(attempt: attempt, previousDelay: previous)
            let expected = policy.delay(attempt: attempt, previousDelay: previous, using: &reference)
            previous = expected
            #expect(machine.handle(.connectFailed, at: .zero, using: &random) == .wait(expected, beforeAttempt: attempt))
            #expect(machine.previousDelay == expected && machine.delay == expected)
            #expect(machine.lastTransition?.delay == expected && bounds.contains(expected))
            _ = machine.handle(.backoffElapsed, at: .zero, using: &random)
        }
        // The same machine with the same seed draws the same numbers: no other source of randomness.
        #expect(random == reference)
    }

    @Test("pinned: decorrelated jitter's delays for seed 42, and the previous delay starts over after a success")
    func decorrelatedPinned() {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(10), jitter: .decorrelated,
                                     maximumAttempts: nil)
        var machine = Lifecycle(policy: policy, recordLimit: 64)
        var random = SeededRandomNumberGenerator(seed: 42)
        _ = machine.handle(.start, at: .zero, using: &random)
        var delays: [Duration] = []
        for _ in 1...4 {
            guard case .wait(let delay, _) = machine.handle(.connectFailed, at: .zero, using: &random) else {
                Issue.record("no wait"); return
            }
            delays.append(delay)
            _ = machine.handle(.backoffElapsed, at: .zero, using: &random)
        }
        #expect(delays == PinnedDelays.decorrelatedSeed42, "\(delays.map(\.components))")
        // Each draw lies in initial…min(cap, 3 × previous), previous starting at initial.
        var previous = Duration.milliseconds(100)
        for delay in delays {
            #expect(delay >= .milliseconds(100) && delay <= min(.seconds(10), max(.milliseconds(100), previous * 3)))
            previous = delay
        }
        _ = machine.handle(.connected, at: .zero, using: &random)
        #expect(machine.previousDelay == nil)
        var afterSuccess = random
        guard case .wait(let first, beforeAttempt: 1) = machine.handle(.dropped, at: .zero, using: &random) else {
            Issue.record("no wait after the drop"); return
        }
        #expect(first == policy.delay(attempt: 1, previousDelay: nil, using: &afterSuccess))
        #expect(first <= .milliseconds(300), "drawn from initial, not from the delays before the success")
    }

    @Test("recordLimit keeps the most recent transitions; 0 keeps only the last")
    func recording() {
        var kept = Lifecycle(policy: exact, recordLimit: 3)
        feed(&kept, [.start, .connected, .dropped, .backoffElapsed, .connected])
        #expect(kept.transitions.map(\.to) == [.backingOff, .connecting, .open])
        #expect(kept.transitions.map(\.event) == [.dropped, .backoffElapsed, .connected])
        var bare = Lifecycle(policy: exact)
        feed(&bare, [.start, .connected, .dropped])
        #expect(bare.transitions.isEmpty)
        #expect(bare.lastTransition == .init(from: .open, to: .backingOff, event: .dropped, attempt: 1,
                                             delay: .milliseconds(100), instant: .milliseconds(2)))
        #expect(Lifecycle(policy: nil, recordLimit: -4).recordLimit == 0)
    }
}

/// Delays pinned from one run of the machine (seed 42), so a change in how it draws shows up as a diff.
enum PinnedDelays {
    static let decorrelatedSeed42: [Duration] = [
        .nanoseconds(248_312_976), .nanoseconds(203_132_437), .nanoseconds(241_918_666), .nanoseconds(315_379_405),
    ]
}

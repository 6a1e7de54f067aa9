/// One connection's lifecycle as a pure state machine: connect, open, drain, close, back off, stop.
///
/// Modelled on hummingbird-websocket's `WebSocketStateMachine`: a value whose `mutating` ``handle(_:at:using:)``
/// takes an ``Event`` and returns the ``Action`` the caller performs. The machine does no I/O and reads no clock:
/// the caller says when each event happened (a `Duration` since it started) and lends it a random source for the
/// jitter of ``ReconnectPolicy``. It is the only place that decides whether and when to try again, so a caller's
/// loop is: perform the action, report what came of it, repeat until ``isEnded``.
///
/// - WebSocket connections: `start` → connect; `connected`; then `dropped` (or `closeBegan`/`closeFinished` for
///   a closing handshake the peer began) → back off or give up; `stopRequested` → drain and stop for good.
/// - Transfers (a request and its retries): a request is a connect attempt, a retryable failure is
///   `connectFailed`, a failure no retry can mend is `failed`, success is `finished`, and a resource deadline is
///   `stopRequested`.
///
/// Attempts count from 0 (the first connect) and then 1, 2, … for each retry since the last successful
/// connection; `connected` resets them (and the decorrelated jitter's previous delay). Without a policy an
/// unintended end leaves the machine `closed`: a drop stays down. With one, it backs off until the policy's
/// `maximumAttempts` is used up, then gives up. After `stopRequested` nothing connects again, not even from a
/// backoff that was already drawn. Events a state does not expect are ignored (action `none`, no transition).
package struct ConnectionLifecycle: Sendable {
    /// Where the connection is.
    package enum State: Sendable, Hashable {
        /// Not started.
        case idle
        /// A connect attempt (or a transfer's request) is in flight; ``ConnectionLifecycle/attempt`` says which.
        case connecting
        /// Connected; the connection does its work.
        case open
        /// A closing handshake is under way (ours after a stop or finish, or the peer's).
        case draining
        /// The connection ended unintendedly and, without a reconnect policy, stays down.
        case closed
        /// Waiting ``ConnectionLifecycle/delay`` before attempt ``ConnectionLifecycle/attempt``.
        case backingOff
        /// Ended for good, and why.
        case stopped(StopReason)
    }

    /// Why a lifecycle stopped.
    package enum StopReason: String, Sendable, Hashable {
        /// The owner stopped it on purpose (a run's end, a disconnect, a resource deadline).
        case intentional
        /// The policy's attempts were used up, or a failure no retry can mend.
        case gaveUp
        /// Its work was done (a message budget spent, a transfer complete).
        case finished
    }

    /// What happened, as the caller reports it.
    package enum Event: String, Sendable, Hashable, CaseIterable {
        /// Begin: the first connect attempt.
        case start
        /// The attempt in flight succeeded (a WebSocket's validated 101, a transfer's response).
        case connected
        /// The attempt in flight failed in a way a retry may mend.
        case connectFailed
        /// A failure no retry can mend (a transfer's non-retryable error).
        case failed
        /// The open connection ended without a closing handshake the owner asked for.
        case dropped
        /// A closing handshake began that the owner did not ask for (the peer's close).
        case closeBegan
        /// The closing handshake (ours or the peer's) is over; the connection has ended.
        case closeFinished
        /// The owner wants it stopped for good.
        case stopRequested
        /// The work is done: close (if open) and stop.
        case finished
        /// The backoff's delay has passed.
        case backoffElapsed
    }

    /// What the caller does next.
    package enum Action: Sendable, Hashable {
        /// Make connect attempt `attempt` (0: the first; n: the n-th retry since the last success).
        case connect(attempt: Int)
        /// Wait `delay`, then report `backoffElapsed` (or `stopRequested`, if stopped meanwhile).
        case wait(Duration, beforeAttempt: Int)
        /// Close the open connection gracefully, then report `closeFinished`.
        case close
        /// The policy's attempts are used up (`attempts` retries were made since the last success): stop.
        case giveUp(attempts: Int)
        /// Nothing to do (the event changed no plan, or the lifecycle has ended).
        case none
    }

    /// One change of state, as recorded: the oracle and callers read these instead of re-deriving attempts.
    package struct Transition: Sendable, Hashable {
        package var from: State
        package var to: State
        package var event: Event
        /// The machine's attempt after the event: the attempt being made (connecting) or waited for (backing off).
        package var attempt: Int
        /// The backoff drawn, for transitions into `backingOff`.
        package var delay: Duration?
        /// When it happened, as the caller reported it (time since the caller's start).
        package var instant: Duration

        package init(from: State, to: State, event: Event, attempt: Int, delay: Duration?, instant: Duration) {
            self.from = from
            self.to = to
            self.event = event
            self.attempt = attempt
            self.delay = delay
            self.instant = instant
        }
    }

    /// The backoff policy; nil: no reconnects, a drop stays down.
    package let policy: ReconnectPolicy?
    package private(set) var state: State = .idle
    /// The attempt in flight or waited for: 0 for the first connect, then retries since the last success.
    package private(set) var attempt = 0
    /// The delay of the backoff in progress (or the last one), nil before any.
    package private(set) var delay: Duration?
    /// The last delay drawn since the last success: decorrelated jitter draws the next from it.
    package private(set) var previousDelay: Duration?
    /// Successful connections so far.
    package private(set) var connectionCount = 0
    /// Connect attempts made so far (every `connect` action).
    package private(set) var attemptCount = 0
    /// A stop was requested while an attempt or a closing handshake was in flight.
    package private(set) var isStopRequested = false
    /// The work was declared done while an attempt or a closing handshake was in flight.
    package private(set) var isFinishRequested = false
    /// The most recent transition.
    package private(set) var lastTransition: Transition?
    /// The last `recordLimit` transitions, oldest first.
    package private(set) var transitions: [Transition] = []
    /// How many transitions ``transitions`` keeps (0: only ``lastTransition``, for callers that read each one as
    /// it happens and must stay small).
    package let recordLimit: Int

    /// A lifecycle that has not started; `recordLimit` transitions are kept in ``transitions``.
    package init(policy: ReconnectPolicy?, recordLimit: Int = 0) {
        self.policy = policy
        self.recordLimit = max(0, recordLimit)
    }

    /// Whether it has ended: stopped, or closed with no reconnect to come.
    package var isEnded: Bool {
        switch state {
        case .closed, .stopped: true
        case .idle, .connecting, .open, .draining, .backingOff: false
        }
    }

    /// Takes `event`, which happened at `instant` (time since the caller's start), and says what to do next.
    /// Delays are drawn with `random` (only when a backoff begins).
    package mutating func handle(
        _ event: Event, at instant: Duration, using random: inout some RandomNumberGenerator
    ) -> Action {
        switch (state, event) {
        case (.idle, .start):
            return beginAttempt(event, at: instant)
        case (.idle, .stopRequested):
            return move(to: .stopped(.intentional), event, at: instant)
        case (.idle, .finished), (.connecting, .finished), (.backingOff, .finished):
            return move(to: .stopped(.finished), event, at: instant)

        case (.connecting, .connected):
            attempt = 0
            previousDelay = nil
            connectionCount += 1
            if isStopRequested || isFinishRequested {
                _ = move(to: .draining, event, at: instant)
                return .close
            }
            return move(to: .open, event, at: instant)
        case (.connecting, .connectFailed):
            return ended(event, at: instant, using: &random)
        case (.connecting, .stopRequested), (.draining, .stopRequested):
            isStopRequested = true
            return .none
        case (.draining, .finished):
            isFinishRequested = true
            return .none

        case (.open, .stopRequested):
            isStopRequested = true
            _ = move(to: .draining, event, at: instant)
            return .close
        case (.open, .finished):
            isFinishRequested = true
            _ = move(to: .draining, event, at: instant)
            return .close
        case (.open, .closeBegan):
            return move(to: .draining, event, at: instant)
        case (.open, .dropped), (.open, .closeFinished), (.draining, .dropped), (.draining, .closeFinished):
            return ended(event, at: instant, using: &random)

        case (.connecting, .failed), (.open, .failed), (.draining, .failed), (.backingOff, .failed):
            if isStopRequested { return move(to: .stopped(.intentional), event, at: instant) }
            _ = move(to: .stopped(.gaveUp), event, at: instant)
            return .giveUp(attempts: attempt)

        case (.backingOff, .backoffElapsed):
            return beginAttempt(event, at: instant)
        case (.backingOff, .stopRequested):
            isStopRequested = true
            return move(to: .stopped(.intentional), event, at: instant)

        default:
            // Not expected in this state (a late event, or one after the end): nothing changes.
            return .none
        }
    }

    /// Enters `connecting` for the current attempt.
    private mutating func beginAttempt(_ event: Event, at instant: Duration) -> Action {
        attemptCount += 1
        _ = move(to: .connecting, event, at: instant)
        return .connect(attempt: attempt)
    }

    /// The connection (or the attempt) has ended: stop if that was asked for, else reconnect per the policy.
    private mutating func ended(_ event: Event, at instant: Duration, using random: inout some RandomNumberGenerator) -> Action {
        if isStopRequested { return move(to: .stopped(.intentional), event, at: instant) }
        if isFinishRequested { return move(to: .stopped(.finished), event, at: instant) }
        guard let policy else { return move(to: .closed, event, at: instant) }
        let next = attempt + 1
        guard policy.allows(attempt: next) else {
            _ = move(to: .stopped(.gaveUp), event, at: instant)
            return .giveUp(attempts: attempt)
        }
        let drawn = policy.delay(attempt: next, previousDelay: previousDelay, using: &random)
        attempt = next
        delay = drawn
        previousDelay = drawn
        _ = move(to: .backingOff, event, at: instant, delay: drawn)
        return .wait(drawn, beforeAttempt: next)
    }

    /// Records the transition to `next`; returns `none` (the callers that have an action return it instead).
    private mutating func move(to next: State, _ event: Event, at instant: Duration, delay: Duration? = nil) -> Action {
        let transition = Transition(from: state, to: next, event: event, attempt: attempt, delay: delay, instant: instant)
        state = next
        lastTransition = transition
        if recordLimit > 0 {
            if transitions.count == recordLimit { transitions.removeFirst() }
            transitions.append(transition)
        }
        return .none
    }
}

import Lifecycle

/// One transfer request and its retries, as the connection lifecycle decides them: what a download segment or
/// an upload does next after each attempt.
///
/// The tasks do the I/O and the sleeping; ``ConnectionLifecycle`` decides attempts, delays, give-up and stop.
/// A request is a connect attempt, a retryable ``TransferError`` is `connectFailed`, any other is `failed`,
/// success is `finished`, and the resource deadline is `stopRequested` (after which nothing is tried again,
/// not even when a backoff already drawn ends). Pure: the caller passes the instant (time since it started)
/// and the random source for the jitter.
package struct TransferRetries: Sendable {
    /// What the task does next.
    package enum Step: Sendable, Hashable {
        /// Make request `attempt` (0: the first; n: the n-th retry).
        case attempt(Int)
        /// Sleep this long, then report ``TransferRetries/backoffElapsed(at:using:)``.
        case wait(Duration)
        /// Stop trying: give up with ``TransferRetries/lastFailure`` (or stopped by the deadline when
        /// ``TransferRetries/isStopped`` is true).
        case end
    }

    package private(set) var lifecycle: ConnectionLifecycle
    /// The failure of the latest attempt, thrown when the lifecycle gives up.
    package private(set) var lastFailure: TransferError?

    /// Retries of one request under `policy` (a transfer configuration's `retry`).
    package init(policy: ReconnectPolicy) {
        lifecycle = ConnectionLifecycle(policy: policy)
    }

    /// Whether it was stopped on purpose (the resource deadline), as opposed to given up or done.
    package var isStopped: Bool { lifecycle.state == .stopped(.intentional) }

    /// Retries drawn so far (every backoff begun): exactly the delays the task sleeps.
    package private(set) var retries = 0

    /// The first request, unless a stop came first.
    package mutating func begin(at instant: Duration, using random: inout some RandomNumberGenerator) -> Step {
        step(lifecycle.handle(.start, at: instant, using: &random))
    }

    /// The attempt failed with `failure`: back off, or end (not retryable, attempts used up, or stopped).
    package mutating func attemptFailed(
        _ failure: TransferError, at instant: Duration, using random: inout some RandomNumberGenerator
    ) -> Step {
        lastFailure = failure
        return step(lifecycle.handle(failure.isRetryable ? .connectFailed : .failed, at: instant, using: &random))
    }

    /// The attempt succeeded: the request is done.
    package mutating func attemptSucceeded(at instant: Duration) {
        var unused = NoRandomNumbers()
        _ = lifecycle.handle(.finished, at: instant, using: &unused)
    }

    /// The backoff's delay has passed: the next attempt, unless stopped meanwhile.
    package mutating func backoffElapsed(at instant: Duration, using random: inout some RandomNumberGenerator) -> Step {
        step(lifecycle.handle(.backoffElapsed, at: instant, using: &random))
    }

    /// How long to sleep for a backoff of `delay` drawn at `elapsed`: never past the resource `deadline`, so a
    /// deadline that falls inside a backoff ends the transfer when it passes, not when the backoff would have.
    /// `endsAtDeadline`: the sleep runs to the deadline, so the caller expires the resource when it wakes instead of
    /// racing the deadline's own timer (loop timers round to the millisecond; this wake may come first).
    package static func sleep(
        for delay: Duration, at elapsed: Duration, deadline: Duration
    ) -> (duration: Duration, endsAtDeadline: Bool) {
        let remaining = max(.zero, deadline - elapsed)
        return delay >= remaining ? (remaining, true) : (delay, false)
    }

    /// The resource deadline passed: no attempt after the one in flight (which the caller cuts short).
    package mutating func stop(at instant: Duration) {
        var unused = NoRandomNumbers()
        _ = lifecycle.handle(.stopRequested, at: instant, using: &unused)
    }

    private mutating func step(_ action: ConnectionLifecycle.Action) -> Step {
        switch action {
        case .connect(let attempt):
            return .attempt(attempt)
        case .wait(let delay, _):
            retries += 1
            return .wait(delay)
        case .giveUp, .close, .none:
            return .end
        }
    }
}

/// A random source for lifecycle events that draw no delay (`finished`, `stopRequested`); drawing from it is a
/// programming error.
private struct NoRandomNumbers: RandomNumberGenerator {
    mutating func next() -> UInt64 { preconditionFailure("finished and stopRequested draw no backoff") }
}

import Lifecycle
import Profile

/// The oracle's reconnect checks. They read the attempts and delays from the connection lifecycle's recorded
/// transitions, and hold them against what the actor saw itself (the run's stop, its own successes, the time it
/// waited) and against the scenario's policy, never against the lifecycle's own view of the policy.
extension InvariantLedger {
    /// A connect attempt (the lifecycle's `connect` action): not after the run stopped the actor,
    /// and (for a reconnect, numbered by the actor's own count since its last success — not the lifecycle's, which
    /// is what is checked) not beyond the scenario's `maximumAttempts`.
    func checkConnectAttempt(isStopped: Bool, reconnect: Int?, maximumAttempts: Int?, actor: ActorHistory) {
        check(.noReconnectAfterIntentional, !isStopped, actor: actor, "connect attempt after the run stopped this actor")
        if let reconnect, let maximumAttempts {
            check(.maximumAttempts, reconnect <= maximumAttempts, actor: actor,
                  "reconnect attempt \(reconnect) since the last success, of at most \(maximumAttempts)")
        }
    }

    /// A backoff the actor is about to wait, at the lifecycle's transition into `backingOff`: the first after a
    /// success is attempt 1, and the delay waited lies in the policy's bounds for its attempt.
    func checkBackoff(
        _ transition: ConnectionLifecycle.Transition, waiting delay: Duration, policy: ReconnectPolicy,
        previousDelay: Duration?, isFirstAfterSuccess: Bool, actor: ActorHistory
    ) {
        let attempt = transition.attempt
        if isFirstAfterSuccess {
            check(.attemptsReset, attempt == 1, actor: actor, "first reconnect after a success is attempt \(attempt)")
        }
        let bounds = policy.bounds(attempt: attempt, previousDelay: previousDelay)
        check(.reconnectDelay, bounds.contains(delay), actor: actor,
              "delay \(formatDuration(delay)) outside \(formatDuration(bounds.lowerBound))–\(formatDuration(bounds.upperBound)) for attempt \(attempt)")
    }

    /// The actor waited its whole backoff (to the millisecond the loop's timers round to).
    func checkBackoffWaited(_ waited: Duration, of delay: Duration, actor: ActorHistory) {
        check(.reconnectDelay, waited >= delay - .milliseconds(1), actor: actor,
              "waited \(formatDuration(waited)) of a \(formatDuration(delay)) backoff")
    }
}

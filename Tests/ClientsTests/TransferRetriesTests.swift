import Clients
import Crypto
import Lifecycle
import Runtime
import Testing

/// Time since the manual clock's origin: the instants the tasks report to the lifecycle.
private func elapsed(_ clock: ManualClock) -> Duration { clock.now.offset }

private let refused = TransferError(.network, "connect refused", runtimeCode: "refused")

@Suite("Transfer retries driven by the connection lifecycle", .timeLimit(.minutes(1)))
struct TransferRetriesTests {
    private let policy = ReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(1), multiplier: 2, jitter: .none,
                                         maximumAttempts: 3)

    @Test("retryable failures back off per the policy until its attempts are used up, then end with the last failure")
    func givesUp() {
        let clock = ManualClock()
        var random = SeededRandomNumberGenerator(seed: 1)
        var retries = TransferRetries(policy: policy)
        #expect(retries.begin(at: elapsed(clock), using: &random) == .attempt(0))
        var waits: [Duration] = []
        for attempt in 1...3 {
            guard case .wait(let delay) = retries.attemptFailed(refused, at: elapsed(clock), using: &random) else {
                Issue.record("attempt \(attempt - 1) did not back off")
                return
            }
            waits.append(delay)
            #expect(retries.lifecycle.state == .backingOff)
            clock.advance(by: delay)
            #expect(retries.backoffElapsed(at: elapsed(clock), using: &random) == .attempt(attempt))
        }
        #expect(waits == [.milliseconds(100), .milliseconds(200), .milliseconds(400)])
        let last = TransferError(.httpStatus, "503", status: 503)
        #expect(retries.attemptFailed(last, at: elapsed(clock), using: &random) == .end)
        #expect(retries.retries == 3 && retries.lifecycle.attemptCount == 4)
        #expect(retries.lifecycle.state == .stopped(.gaveUp) && !retries.isStopped)
        #expect(retries.lastFailure?.status == 503)
        #expect(retries.lifecycle.lastTransition?.instant == .milliseconds(700))
    }

    @Test("a failure no retry can mend ends at once; no policy attempts (maximumAttempts 0) end after the first")
    func notRetryable() {
        var random = SeededRandomNumberGenerator(seed: 2)
        var retries = TransferRetries(policy: policy)
        _ = retries.begin(at: .zero, using: &random)
        #expect(retries.attemptFailed(TransferError(.httpStatus, "404", status: 404), at: .zero, using: &random) == .end)
        #expect(retries.retries == 0 && retries.lifecycle.state == .stopped(.gaveUp) && retries.lastFailure?.status == 404)

        var none = TransferRetries(policy: ReconnectPolicy(maximumAttempts: 0))
        _ = none.begin(at: .zero, using: &random)
        #expect(none.attemptFailed(refused, at: .zero, using: &random) == .end)
        #expect(none.retries == 0 && none.lastFailure?.runtimeCode == "refused")
    }

    @Test("a success after retries finishes the request; the retries are counted exactly")
    func succeedsAfterRetry() {
        let clock = ManualClock()
        var random = SeededRandomNumberGenerator(seed: 3)
        var retries = TransferRetries(policy: policy)
        _ = retries.begin(at: elapsed(clock), using: &random)
        guard case .wait(let delay) = retries.attemptFailed(refused, at: elapsed(clock), using: &random) else {
            Issue.record("no backoff")
            return
        }
        clock.advance(by: delay)
        #expect(retries.backoffElapsed(at: elapsed(clock), using: &random) == .attempt(1))
        retries.attemptSucceeded(at: elapsed(clock))
        #expect(retries.lifecycle.state == .stopped(.finished) && retries.retries == 1 && !retries.isStopped)
        // A deadline after the end changes nothing.
        retries.stop(at: elapsed(clock))
        #expect(retries.lifecycle.state == .stopped(.finished))
    }

    @Test("the resource deadline stops: mid-attempt the failure ends it, mid-backoff nothing follows, before the start nothing begins")
    func deadlineStops() {
        var random = SeededRandomNumberGenerator(seed: 4)
        var midAttempt = TransferRetries(policy: policy)
        _ = midAttempt.begin(at: .zero, using: &random)
        midAttempt.stop(at: .milliseconds(5))
        #expect(midAttempt.attemptFailed(refused, at: .milliseconds(6), using: &random) == .end)
        #expect(midAttempt.isStopped && midAttempt.retries == 0)

        var midBackoff = TransferRetries(policy: policy)
        _ = midBackoff.begin(at: .zero, using: &random)
        #expect(midBackoff.attemptFailed(refused, at: .zero, using: &random) == .wait(.milliseconds(100)))
        midBackoff.stop(at: .milliseconds(50))
        #expect(midBackoff.isStopped)
        #expect(midBackoff.backoffElapsed(at: .milliseconds(100), using: &random) == .end)
        #expect(midBackoff.retries == 1 && midBackoff.lifecycle.attemptCount == 1)

        var early = TransferRetries(policy: policy)
        early.stop(at: .zero)
        #expect(early.begin(at: .zero, using: &random) == .end)
        #expect(early.isStopped && early.lifecycle.attemptCount == 0 && early.lastFailure == nil)
    }

    @Test("the delays are the policy's draws in order from the same random source (decorrelated jitter included)")
    func delaysMatchThePolicy() {
        let decorrelated = ReconnectPolicy(initialDelay: .milliseconds(10), maximumDelay: .seconds(2), jitter: .decorrelated,
                                           maximumAttempts: 8)
        var random = SeededRandomNumberGenerator(seed: 5)
        var shadow = SeededRandomNumberGenerator(seed: 5)
        var retries = TransferRetries(policy: decorrelated)
        _ = retries.begin(at: .zero, using: &random)
        var previous: Duration?
        for attempt in 1...8 {
            let expected = decorrelated.delay(attempt: attempt, previousDelay: previous, using: &shadow)
            previous = expected
            #expect(retries.attemptFailed(refused, at: .zero, using: &random) == .wait(expected), "attempt \(attempt)")
            #expect(retries.backoffElapsed(at: .zero, using: &random) == .attempt(attempt))
        }
        #expect(retries.attemptFailed(refused, at: .zero, using: &random) == .end)
        #expect(retries.retries == 8)
    }
}

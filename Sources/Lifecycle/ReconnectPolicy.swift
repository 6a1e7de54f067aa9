/// Exponential backoff with a cap, jitter and an attempt limit: the delays between reconnect attempts.
///
/// Pure arithmetic in nanoseconds, so sub-second delays are exact (the reference's backoff truncated
/// them to whole seconds). The delay for an attempt is drawn uniformly from ``bounds(attempt:previousDelay:)``,
/// which the correctness oracle also uses to check observed schedules. Jitter strategies follow
/// "Exponential Backoff And Jitter" (AWS Architecture Blog): with `base = min(cap, initial × multiplier^(n−1))`,
/// - `none`: exactly `base`;
/// - `full`: uniform in `0…base`;
/// - `equal`: uniform in `base/2…base`;
/// - `decorrelated`: uniform in `initial…min(cap, 3 × previous)` (previous starts at `initial`).
package struct ReconnectPolicy: Sendable, Hashable {
    /// How the delay is spread below its exponential base (see the type's comment).
    package enum Jitter: String, Sendable, Hashable, CaseIterable {
        case none, full, equal, decorrelated
    }

    package var initialDelay: Duration
    package var maximumDelay: Duration
    package var multiplier: Double
    package var jitter: Jitter
    /// Attempts allowed after one disconnect before giving up; nil retries forever. Reset by a successful
    /// connection.
    package var maximumAttempts: Int?

    package init(
        initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(60), multiplier: Double = 2,
        jitter: Jitter = .full, maximumAttempts: Int? = 10
    ) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
        self.jitter = jitter
        self.maximumAttempts = maximumAttempts
    }

    /// The un-jittered delay before attempt `attempt` (1-based).
    package func baseDelay(attempt: Int) -> Duration {
        let initial = Double(initialDelay.wholeNanoseconds)
        let cap = Double(maximumDelay.wholeNanoseconds)
        let exponent = Double(max(0, attempt - 1))
        // pow can overflow to infinity for large attempts; the cap bounds it.
        let scaled = initial * pow(multiplier, exponent)
        return .nanoseconds(Int64(min(cap, scaled.isFinite ? scaled : cap).rounded()))
    }

    /// The range the delay before `attempt` is drawn from; `previousDelay` matters for `decorrelated`.
    package func bounds(attempt: Int, previousDelay: Duration?) -> ClosedRange<Duration> {
        let base = baseDelay(attempt: attempt)
        switch jitter {
        case .none:
            return base...base
        case .full:
            return .zero...base
        case .equal:
            return .nanoseconds(base.wholeNanoseconds / 2)...base
        case .decorrelated:
            let previous = previousDelay ?? initialDelay
            let upper = min(maximumDelay, max(initialDelay, .nanoseconds(previous.wholeNanoseconds.multipliedReportingOverflow(by: 3).overflow ? .max : previous.wholeNanoseconds * 3)))
            return min(initialDelay, upper)...upper
        }
    }

    /// The delay before `attempt`, drawn uniformly from its bounds with `random`.
    package func delay(attempt: Int, previousDelay: Duration?, using random: inout some RandomNumberGenerator) -> Duration {
        let range = bounds(attempt: attempt, previousDelay: previousDelay)
        let lower = range.lowerBound.wholeNanoseconds
        let upper = range.upperBound.wholeNanoseconds
        guard upper > lower else { return range.lowerBound }
        return .nanoseconds(Int64.random(in: lower...upper, using: &random))
    }

    /// Whether `attempt` (1-based) may be made.
    package func allows(attempt: Int) -> Bool {
        maximumAttempts.map { attempt <= $0 } ?? true
    }
}

private func pow(_ base: Double, _ exponent: Double) -> Double {
    // Exact for the small integer exponents backoff uses; avoids a Foundation dependency.
    var result = 1.0
    var remaining = Int(exponent)
    var factor = base
    while remaining > 0 {
        if remaining & 1 == 1 { result *= factor }
        factor *= factor
        remaining >>= 1
        if !result.isFinite { return .infinity }
    }
    return result
}

extension Duration {
    /// Whole nanoseconds (truncated), saturating: the policy's arithmetic unit. Internal, so it never
    /// meets Runtime's public `nanoseconds` in a file that imports both.
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}

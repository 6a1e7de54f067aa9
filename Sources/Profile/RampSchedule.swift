/// The connection target of a ramp at a moment: stages go linearly from the previous target (0 at the
/// start) to their own over their duration; after the last stage the last target holds. Without stages,
/// every connection starts at once.
package struct RampSchedule: Sendable, Equatable {
    package var connections: Int
    package var stages: [WebSocketScenario.Stage]

    package init(connections: Int, stages: [WebSocketScenario.Stage]) {
        self.connections = connections
        self.stages = stages
    }

    package func target(at elapsed: Duration) -> Int {
        guard !stages.isEmpty else { return connections }
        var start = Duration.zero
        var from = 0
        for stage in stages {
            let end = start + stage.duration
            if elapsed < end {
                let fraction = stage.duration == .zero ? 1 : (elapsed - start).seconds / stage.duration.seconds
                // Toward zero: a ramp up reaches a count at its moment, a ramp down leaves it at its moment.
                return from + Int((Double(stage.target - from) * max(0, fraction)).rounded(.towardZero))
            }
            start = end
            from = stage.target
        }
        return from
    }

    /// The highest target at any moment of `range`: a coarse tick must not skip a stage's peak.
    package func peak(in range: ClosedRange<Duration>) -> Int {
        var peak = max(target(at: range.lowerBound), target(at: range.upperBound))
        var boundary = Duration.zero
        for stage in stages {
            boundary += stage.duration
            if range.contains(boundary) { peak = max(peak, stage.target) }
        }
        return peak
    }

    /// The first moment after `elapsed` at which ``target(at:)`` may differ from its value at `elapsed`: when
    /// a linear stage reaches its next whole connection, or the next stage boundary. nil once the target holds
    /// for good (after the last stage, or without stages). A caller that wakes then sees the change.
    package func nextChange(after elapsed: Duration) -> Duration? {
        var start = Duration.zero
        var from = 0
        for stage in stages {
            let end = start + stage.duration
            if elapsed < end {
                let steps = abs(stage.target - from)
                let done = Self.stepsDone(elapsed - start, of: stage.duration, steps: steps)
                guard done < steps else { return end }
                // Step k is due at start + duration × k / steps; target(at:) computes in floating point, which
                // may reach it a nanosecond later than that exact moment.
                var next = start + stage.duration * (done + 1) / steps
                while next < end && Self.stepsDone(next - start, of: stage.duration, steps: steps) <= done {
                    next += .nanoseconds(1)
                }
                return min(next, end)
            }
            start = end
            from = stage.target
        }
        return nil
    }

    /// How many of a stage's `steps` whole connections ``target(at:)`` counts `offset` into it: the same
    /// arithmetic, so the two never disagree.
    private static func stepsDone(_ offset: Duration, of duration: Duration, steps: Int) -> Int {
        guard steps > 0 else { return 0 }
        let fraction = duration == .zero ? 1 : offset.seconds / duration.seconds
        return Int((Double(steps) * max(0, fraction)).rounded(.towardZero))
    }

    /// When the stages end (zero without stages).
    package var totalDuration: Duration { stages.reduce(.zero) { $0 + $1.duration } }
}

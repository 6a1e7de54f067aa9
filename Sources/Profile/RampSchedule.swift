/// The connection target of a ramp at a moment: stages go linearly from the previous target (0 at the
/// start) to their own over their duration; after the last stage the last target holds. Without stages,
/// every connection starts at once.
public struct RampSchedule: Sendable, Equatable {
    public var connections: Int
    public var stages: [WebSocketScenario.Stage]

    public init(connections: Int, stages: [WebSocketScenario.Stage]) {
        self.connections = connections
        self.stages = stages
    }

    public func target(at elapsed: Duration) -> Int {
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
    public func peak(in range: ClosedRange<Duration>) -> Int {
        var peak = max(target(at: range.lowerBound), target(at: range.upperBound))
        var boundary = Duration.zero
        for stage in stages {
            boundary += stage.duration
            if range.contains(boundary) { peak = max(peak, stage.target) }
        }
        return peak
    }

    /// When the stages end (zero without stages).
    public var totalDuration: Duration { stages.reduce(.zero) { $0 + $1.duration } }
}

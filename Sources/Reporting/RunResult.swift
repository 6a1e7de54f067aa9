import Foundation
import Profile

/// The outcome of a run, ready to be written as a report.
public struct RunResult: Sendable {
    /// One report interval: its span of the run, the connections live at its end, and what it measured.
    public struct Interval: Sendable {
        public var start: Duration
        public var end: Duration
        public var liveConnections: Int
        public var metrics: MetricSet

        package init(start: Duration, end: Duration, liveConnections: Int, metrics: MetricSet) {
            self.start = start
            self.end = end
            self.liveConnections = liveConnections
            self.metrics = metrics
        }
    }

    /// One scenario's share of the run: the scenario as it ran (a shard's connections) and its metrics.
    public struct ScenarioResult: Sendable {
        public var scenario: Scenario
        public var metrics: MetricSet
        /// The highest connection target the coordinator followed: the ramp's top within the run's duration
        /// (a coordinator that woke late still follows every step due before the end). Not part of the report
        /// (0 for a report read back).
        public var peakTarget = 0

        package init(scenario: Scenario, metrics: MetricSet, peakTarget: Int = 0) {
            self.scenario = scenario
            self.metrics = metrics
            self.peakTarget = peakTarget
        }
    }

    /// One threshold of the profile, with the value it was checked against.
    public struct ThresholdResult: Sendable {
        public var threshold: Threshold
        /// nil when the metric had no samples (a latency threshold then passes vacuously).
        public var actual: Double?
        public var passed: Bool

        package init(threshold: Threshold, actual: Double?, passed: Bool) {
            self.threshold = threshold
            self.actual = actual
            self.passed = passed
        }
    }

    public var profile: Profile
    public var seed: UInt64
    public var loops: Int
    public var startedAt: Date
    public var endedAt: Date
    public var elapsed: Duration
    /// The signal that interrupted the run, if one did.
    public var interruptedBy: String?
    /// The threshold whose failure aborted the run early.
    public var abortedBy: String?
    public var scenarios: [ScenarioResult]
    public var total: MetricSet
    public var intervals: [Interval]
    public var thresholds: [ThresholdResult]
    /// Connections still running when the graceful stop ran out (they were cancelled).
    public var unfinishedConnections: Int
    /// Runtime handles and parked tasks left once everything stopped (0 and 0 when nothing leaked).
    public var liveHandlesAfterStop: Int
    public var waitingTasksAfterStop: Int
    /// The slice of the profile this process ran (`--shard i/n`), if only a slice.
    public var shard: Shard?
    /// For a merged result: the reports it was merged from.
    public var mergedFrom: [String] = []
    /// What the correctness oracle checked and found.
    public var invariants = InvariantReport()
    /// The chaos timeline as it happened.
    public var chaos: [ChaosRecord] = []
    /// How synchronized reconnects were, when there were any.
    public var reconnectStorm: ReconnectStorm?

    /// The one way a result is assembled — by the run's coordinator and by the report reader — so a new field
    /// is a new parameter both must pass. Thresholds are not passed: they are evaluated here, against the
    /// totals over the planned part of the run (``evaluateThresholds()``).
    package init(
        profile: Profile, seed: UInt64, loops: Int, startedAt: Date, endedAt: Date, elapsed: Duration,
        interruptedBy: String?, abortedBy: String?, scenarios: [ScenarioResult], total: MetricSet, intervals: [Interval],
        unfinishedConnections: Int, liveHandlesAfterStop: Int, waitingTasksAfterStop: Int, shard: Shard?,
        mergedFrom: [String], invariants: InvariantReport, chaos: [ChaosRecord], reconnectStorm: ReconnectStorm?
    ) {
        self.profile = profile
        self.seed = seed
        self.loops = loops
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.elapsed = elapsed
        self.interruptedBy = interruptedBy
        self.abortedBy = abortedBy
        self.scenarios = scenarios
        self.total = total
        self.intervals = intervals
        self.thresholds = []
        self.unfinishedConnections = unfinishedConnections
        self.liveHandlesAfterStop = liveHandlesAfterStop
        self.waitingTasksAfterStop = waitingTasksAfterStop
        self.shard = shard
        self.mergedFrom = mergedFrom
        self.invariants = invariants
        self.chaos = chaos
        self.reconnectStorm = reconnectStorm
        evaluateThresholds()
    }

    /// Evaluates the profile's thresholds against the totals, per second of the planned duration at most (a
    /// run that overran its duration while stopping is not credited the extra time). Called again by whatever
    /// changes the totals (a merge).
    package mutating func evaluateThresholds() {
        thresholds = ThresholdEvaluator.evaluate(
            profile.thresholds, total: total, scenarios: scenarios.map { ($0.scenario.name, $0.metrics) },
            seconds: min(elapsed, profile.duration).seconds)
    }

    /// The busiest 100 ms of reconnect attempts against the busiest 100 ms of unintended drops. Without
    /// jitter every client dropped together retries together, so the drop peak is the bound a storm's
    /// reconnect peak reaches; jitter spreads them below it.
    public struct ReconnectStorm: Sendable, Equatable {
        public var peakReconnectsPer100ms: UInt64
        public var peakDropsPer100ms: UInt64

        package init(peakReconnectsPer100ms: UInt64, peakDropsPer100ms: UInt64) {
            self.peakReconnectsPer100ms = peakReconnectsPer100ms
            self.peakDropsPer100ms = peakDropsPer100ms
        }
    }

    /// One chaos event of the run: when it was planned, when it fired, and how many connections it hit.
    public struct ChaosRecord: Sendable, Equatable {
        public var at: Duration
        public var firedAt: Duration
        public var action: String
        public var affected: Int

        package init(at: Duration, firedAt: Duration, action: String, affected: Int) {
            self.at = at
            self.firedAt = firedAt
            self.action = action
            self.affected = affected
        }
    }

    public var thresholdsPassed: Bool { thresholds.allSatisfy(\.passed) }
    public var invariantsHeld: Bool { invariants.isHeld }
}

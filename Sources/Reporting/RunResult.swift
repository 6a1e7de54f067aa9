import Crypto
import Foundation
import Profile

/// The outcome of a run, ready to be written as a report.
package struct RunResult: Sendable {
    /// What the report's interval series is (`intervalSeries` in the report): how many base intervals of
    /// `report.interval` it covers, how many each entry merges, and the file beside the report that holds every one.
    package struct IntervalLog: Sendable, Equatable {
        /// The full-resolution interval log beside the report (a plain file name, in the run journal's format), or nil
        /// when the report's intervals are every base interval (factor 1) or no single file holds them (a merge).
        package var file: String?
        /// Base intervals the series covers (at least its entries).
        package var count: Int
        /// The length of a base interval (`report.interval`), in seconds.
        package var baseSeconds: Double
        /// Base intervals per entry: a power of two, 1 when nothing was merged (only the last entry may cover fewer).
        package var factor: Int
        /// Why ``file`` is nil although the series is downsampled (`intervalSeries.fileMissing`: a merge whose inputs
        /// do not all have their logs); nil otherwise.
        package var fileMissing: String? = nil

        package init(file: String?, count: Int, baseSeconds: Double, factor: Int) {
            self.file = file
            self.count = count
            self.baseSeconds = baseSeconds
            self.factor = factor
        }
    }

    /// One scenario's share of the run: the scenario as it ran (a shard's connections) and its metrics.
    package struct ScenarioResult: Sendable {
        package var scenario: Scenario
        package var metrics: MetricSet
        /// The highest connection target the coordinator followed: the ramp's top within the run's duration
        /// (a coordinator that woke late still follows every step due before the end). Not part of the report
        /// (0 for a report read back).
        package var peakTarget = 0

        package init(scenario: Scenario, metrics: MetricSet, peakTarget: Int = 0) {
            self.scenario = scenario
            self.metrics = metrics
            self.peakTarget = peakTarget
        }
    }

    /// One threshold of the profile, with the value it was checked against.
    package struct ThresholdResult: Sendable {
        package var threshold: Threshold
        /// nil when the metric had no samples (a latency threshold then passes vacuously).
        package var actual: Double?
        package var passed: Bool
        /// Why there is no `actual`, for the report: nil means "no samples"; a step latency threshold whose step
        /// only failed says so ("no successful execution (3 failed)").
        package var note: String?

        package init(threshold: Threshold, actual: Double?, passed: Bool, note: String? = nil) {
            self.threshold = threshold
            self.actual = actual
            self.passed = passed
            self.note = note
        }
    }

    package var profile: Profile
    package var seed: UInt64
    package var loops: Int
    package var startedAt: Date
    package var endedAt: Date
    package var elapsed: Duration
    /// The signal that interrupted the run, if one did.
    package var interruptedBy: String?
    /// The threshold whose failure aborted the run early.
    package var abortedBy: String?
    package var scenarios: [ScenarioResult]
    package var total: MetricSet
    /// The bounded interval series (at most `report.maxIntervals` entries; ``IntervalSeries``).
    package var intervals: [Interval]
    /// What the series is and where every base interval is; nil for a report from before interval series (read as
    /// factor 1: every interval).
    package var intervalLog: IntervalLog?
    /// Base intervals per entry of ``intervals`` (1 when the result does not say).
    package var intervalFactor: Int { intervalLog?.factor ?? 1 }
    package var thresholds: [ThresholdResult]
    /// Connections still running when the graceful stop ran out (they were cancelled).
    package var unfinishedConnections: Int
    /// Runtime handles and parked tasks left once everything stopped (0 and 0 when nothing leaked).
    package var liveHandlesAfterStop: Int
    package var waitingTasksAfterStop: Int
    /// The slice of the profile this process ran (`--shard i/n`), if only a slice.
    package var shard: Shard?
    /// For a merged result: the reports it was merged from.
    package var mergedFrom: [String] = []
    /// The start time the run was given (`--start-at`) and how late it started; nil without one.
    package var scheduledStart: ScheduledStart?
    /// For a merged result: seconds from the earliest input's actual start to the latest's (`run.startSkew`).
    package var startSkew: Double?
    /// The run's random identity (`run.id`, 32 hex digits from OpenSSL's CSPRNG): merge refuses to count one
    /// run twice. nil for a report read back that was written before reports had ids.
    package var runID: String? = RunResult.newRunID()
    /// For a merged result: the ids of every run it adds up (`run.mergedRunIds`; an id-less report counts as
    /// `sha256:` of its document).
    package var mergedRunIDs: [String] = []
    /// For a merged result: the shards of the split that were not there (`run.missingShards`; `wsload run --processes`
    /// merges what it got when a child died).
    package var missingShards: [Shard] = []

    /// A fresh run id: 16 random bytes as lowercase hex.
    package static func newRunID() -> String { Crypto.hex(Crypto.randomBytes(16)) }
    /// What the correctness oracle checked and found.
    package var invariants = InvariantReport()
    /// The chaos timeline as it happened.
    package var chaos: [ChaosRecord] = []
    /// How synchronized reconnects were, when there were any.
    package var reconnectStorm: ReconnectStorm?
    /// For a report recovered from a run journal (`wsload report --recover`): the journal's file name. Such a
    /// report is incomplete: it holds the intervals closed before the run died, nothing after.
    package var recoveredFrom: String?
    /// Recovered from a journal: its totals cover only the journaled intervals.
    package var isIncomplete: Bool { recoveredFrom != nil }

    /// The one way a result is assembled — by the run's coordinator and by the report reader — so a new field
    /// is a new parameter both must pass. Thresholds are not passed: they are evaluated here, against the
    /// totals over the planned part of the run (``evaluateThresholds()``). `intervalLog` and `scheduledStart` alone have
    /// defaults (nil: read as factor 1; no start time), for results built by hand in tests; the run, the reader and a
    /// recovery pass theirs.
    package init(
        profile: Profile, seed: UInt64, loops: Int, startedAt: Date, endedAt: Date, elapsed: Duration,
        interruptedBy: String?, abortedBy: String?, scenarios: [ScenarioResult], total: MetricSet, intervals: [Interval],
        intervalLog: IntervalLog? = nil, unfinishedConnections: Int, liveHandlesAfterStop: Int, waitingTasksAfterStop: Int,
        shard: Shard?, mergedFrom: [String], invariants: InvariantReport, chaos: [ChaosRecord], reconnectStorm: ReconnectStorm?,
        scheduledStart: ScheduledStart? = nil
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
        self.intervalLog = intervalLog
        self.thresholds = []
        self.unfinishedConnections = unfinishedConnections
        self.liveHandlesAfterStop = liveHandlesAfterStop
        self.waitingTasksAfterStop = waitingTasksAfterStop
        self.shard = shard
        self.mergedFrom = mergedFrom
        self.scheduledStart = scheduledStart
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
    package struct ReconnectStorm: Sendable, Equatable {
        package var peakReconnectsPer100ms: UInt64
        package var peakDropsPer100ms: UInt64

        package init(peakReconnectsPer100ms: UInt64, peakDropsPer100ms: UInt64) {
            self.peakReconnectsPer100ms = peakReconnectsPer100ms
            self.peakDropsPer100ms = peakDropsPer100ms
        }
    }

    /// One chaos event of the run: when it was planned, when it fired, and how many connections it hit.
    package struct ChaosRecord: Sendable, Equatable {
        package var at: Duration
        package var firedAt: Duration
        package var action: String
        package var affected: Int

        package init(at: Duration, firedAt: Duration, action: String, affected: Int) {
            self.at = at
            self.firedAt = firedAt
            self.action = action
            self.affected = affected
        }
    }

    package var thresholdsPassed: Bool { thresholds.allSatisfy(\.passed) }
    package var invariantsHeld: Bool { invariants.isHeld }
}

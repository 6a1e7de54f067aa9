import Profile
import Reporting
import Runtime

/// What the run measured so far, summed from the loops' recorder snapshots: totals per scenario and for the
/// run, the closed report intervals and the one in progress, the invariant ledgers, and reconnect-storm slots.
struct RunTally {
    private(set) var scenarioTotals: [MetricSet]
    private(set) var total = MetricSet()
    private(set) var intervals: [RunResult.Interval] = []
    private var currentInterval = MetricSet()
    /// The interval in progress per scenario and the invariant checks made during it: what the run journal
    /// records of each interval besides its run-wide metrics.
    private var currentScenarioIntervals: [MetricSet]
    private var currentInvariants = InvariantReport()
    private var intervalStart = Duration.zero
    /// Live connections per scenario at the last gather.
    private(set) var scenarioLive: [Int]
    private(set) var invariants = InvariantReport()
    /// Reconnect attempts and unintended drops per 100 ms, summed over the loops.
    private var reconnectsByTick: [UInt64: UInt64] = [:]
    private var dropsByTick: [UInt64: UInt64] = [:]

    init(scenarioCount: Int) {
        scenarioTotals = Array(repeating: MetricSet(), count: scenarioCount)
        currentScenarioIntervals = scenarioTotals
        scenarioLive = Array(repeating: 0, count: scenarioCount)
    }

    /// Takes every recorder's snapshot (on its loop) and every ledger's, and adds them in. Returns what was
    /// recorded since the previous gather and the connections live now.
    mutating func gather(from fleet: ConnectionFleet) async -> (recent: MetricSet, live: Int) {
        for (index, ledger) in fleet.ledgers.enumerated() {
            let snapshot = await onLoop(fleet.loops[index]) { ledger.takeSnapshot() }
            invariants.add(snapshot)
            currentInvariants.add(snapshot)
        }
        var recent = MetricSet()
        var live = 0
        for (scenarioIndex, loopRecorders) in fleet.recorders.enumerated() {
            scenarioLive[scenarioIndex] = 0
            for (loopIndex, recorder) in loopRecorders.enumerated() {
                let snapshot = await onLoop(fleet.loops[loopIndex]) { recorder.takeSnapshot() }
                Self.add(snapshot.metrics, to: &scenarioTotals[scenarioIndex])
                Self.add(snapshot.metrics, to: &currentScenarioIntervals[scenarioIndex])
                Self.add(snapshot.metrics, to: &recent)
                live += snapshot.liveConnections
                scenarioLive[scenarioIndex] += snapshot.liveConnections
                for (tick, count) in snapshot.reconnectsByTick { reconnectsByTick[tick, default: 0] += count }
                for (tick, count) in snapshot.dropsByTick { dropsByTick[tick, default: 0] += count }
            }
        }
        Self.add(recent, to: &total)
        Self.add(recent, to: &currentInterval)
        return (recent, live)
    }

    /// Closes the interval in progress at `elapsed`, with the connections live then; returns it with its
    /// per-scenario metrics and the invariant checks made during it (what the run journal appends).
    @discardableResult
    mutating func closeInterval(at elapsed: Duration, liveConnections: Int) -> ClosedInterval {
        let interval = RunResult.Interval(start: intervalStart, end: elapsed, liveConnections: liveConnections, metrics: currentInterval)
        intervals.append(interval)
        let closed = ClosedInterval(interval: interval, scenarios: currentScenarioIntervals, invariants: currentInvariants)
        currentInterval = MetricSet()
        currentScenarioIntervals = Array(repeating: MetricSet(), count: currentScenarioIntervals.count)
        currentInvariants = InvariantReport()
        intervalStart = elapsed
        return closed
    }

    /// One closed interval as the journal records it.
    struct ClosedInterval {
        var interval: RunResult.Interval
        /// Per scenario, in the plans' order.
        var scenarios: [MetricSet]
        var invariants: InvariantReport
    }

    /// Counts connections the graceful stop had to cancel.
    mutating func countUnfinished(_ count: Int) {
        guard count > 0 else { return }
        total.counters[Metric.unfinishedAtStop.name, default: 0] += UInt64(count)
    }

    /// The busiest 100 ms of reconnects against the busiest of drops; nil when nothing reconnected.
    var reconnectStorm: RunResult.ReconnectStorm? {
        reconnectsByTick.values.max().map {
            RunResult.ReconnectStorm(peakReconnectsPer100ms: $0, peakDropsPer100ms: dropsByTick.values.max() ?? 0)
        }
    }

    private static func add(_ other: MetricSet, to metrics: inout MetricSet) {
        // Every histogram a recorder makes has the default layout, so adding is exact and cannot fail; the
        // error (another layout) is only possible for histograms read from reports, which never come here.
        try? metrics.add(other)
    }
}

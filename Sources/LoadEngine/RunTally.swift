import Profile
import Reporting
import Runtime

/// What the run measured so far, summed from the loops' recorder snapshots: totals per scenario and for the
/// run, the bounded series of closed report intervals and the one in progress, the invariant ledgers, and the
/// reconnect-storm peaks. Nothing in it grows with the run's duration: the series holds at most `report.maxIntervals`
/// entries (every closed interval goes to the run journal on disk), and the storm slots only the recent seconds.
struct RunTally {
    private(set) var scenarioTotals: [MetricSet]
    private(set) var total = MetricSet()
    /// The closed intervals, downsampled when they pass `report.maxIntervals`.
    private(set) var series: IntervalSeries
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
    private var reconnectSlots = SlotPeak()
    private var dropSlots = SlotPeak()

    init(scenarioCount: Int, maximumIntervals: Int) {
        series = IntervalSeries(maximumCount: maximumIntervals)
        scenarioTotals = Array(repeating: MetricSet(), count: scenarioCount)
        currentScenarioIntervals = scenarioTotals
        scenarioLive = Array(repeating: 0, count: scenarioCount)
    }

    /// Takes every recorder's snapshot (on its loop) and every ledger's, and adds them in. Returns what was
    /// recorded since the previous gather and the connections live now.
    mutating func gather(from fleet: ConnectionFleet) async -> (recent: MetricSet, live: Int) {
        // Every storm event before this instant is in the snapshots about to be taken (each recorder stamps an event
        // with the clock and counts it in one job on its loop; the snapshot is a later job there).
        let settled = LoopRecorder.tick(LoopClock().now)
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
                reconnectSlots.add(snapshot.reconnectsByTick)
                dropSlots.add(snapshot.dropsByTick)
            }
        }
        reconnectSlots.settle(before: settled)
        dropSlots.settle(before: settled)
        Self.add(recent, to: &total)
        Self.add(recent, to: &currentInterval)
        return (recent, live)
    }

    /// Closes the interval in progress at `elapsed`, with the connections live then; returns it with its
    /// per-scenario metrics and the invariant checks made during it (what the run journal appends).
    @discardableResult
    mutating func closeInterval(at elapsed: Duration, liveConnections: Int) -> ClosedInterval {
        let interval = RunResult.Interval(start: intervalStart, end: elapsed, liveConnections: liveConnections, metrics: currentInterval)
        // A recorder's histograms all have the default layout: appending cannot fail (see `add`).
        try? series.append(interval)
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
        reconnectSlots.peak.map { RunResult.ReconnectStorm(peakReconnectsPer100ms: $0, peakDropsPer100ms: dropSlots.peak ?? 0) }
    }

    private static func add(_ other: MetricSet, to metrics: inout MetricSet) {
        // Every histogram a recorder makes has the default layout, so adding is exact and cannot fail; the
        // error (another layout) is only possible for histograms read from reports, which never come here.
        try? metrics.add(other)
    }
}

/// The busiest 100 ms slot of some event, summed over the loops, with only the slots that can still grow kept: a slot
/// older than the last gather's start is complete (every loop's snapshot since holds all of it), so it is folded into
/// the peak and forgotten. Memory is the slots of about one gather, whatever the duration.
package struct SlotPeak: Sendable {
    private var open: [UInt64: UInt64] = [:]
    private var settledPeak: UInt64?

    package init() {}

    /// Adds a loop's counts per slot.
    package mutating func add(_ slots: [UInt64: UInt64]) {
        for (slot, count) in slots { open[slot, default: 0] &+= count }
    }

    /// Folds the slots before `slot` into the peak and forgets them.
    package mutating func settle(before slot: UInt64) {
        for (key, count) in open where key < slot {
            settledPeak = max(settledPeak ?? 0, count)
            open[key] = nil
        }
    }

    /// The busiest slot so far; nil when nothing was counted.
    package var peak: UInt64? {
        switch (settledPeak, open.values.max()) {
        case (let settled?, let current?): max(settled, current)
        case (let settled, let current): settled ?? current
        }
    }

    /// The slots still open (for tests: bounded by a gather's span, not the run's).
    package var openSlotCount: Int { open.count }
}

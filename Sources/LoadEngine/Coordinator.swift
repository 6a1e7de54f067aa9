import Crypto
import Profile
import EmbeddedServer
import Foundation
import Reporting
import Runtime
import Synchronization

/// The run's conductor, on the calling task: starts and stops connections to follow each scenario's
/// ramp, gathers the loops' recorders every second, closes report intervals, watches for Ctrl-C and
/// aborting thresholds, then stops everything gracefully.
struct Coordinator {
    let profile: Profile
    let plans: [ScenarioPlan]
    let group: EventLoopGroup
    var random: SeededRandomNumberGenerator
    let shutdown: GracefulShutdown?
    let onProgress: (@Sendable (RunProgress) -> Void)?
    let seed: UInt64
    let faults: FaultSwitches
    /// Applies a chaos action to the embedded server; nil when the target is not embedded.
    var chaosHandler: (@Sendable (ServerChaosAction, UInt64) async -> Int)?
    private var nextChaos = 0
    /// Reconnect attempts and unintended drops per 100 ms, summed over the loops.
    private var reconnectsByTick: [UInt64: UInt64] = [:]
    private var dropsByTick: [UInt64: UInt64] = [:]
    private let chaosLog = ChaosLog()

    /// How often the ramp is followed.
    static let tick: Duration = .milliseconds(50)

    // The loops' side: recorders per (scenario, loop) and a latch per loop.
    private var recorders: [[LoopRecorder]] = []
    private var latches: [StopLatch] = []
    private var ledgers: [InvariantLedger] = []
    private var invariants = InvariantReport()
    private var ramps: [RampSchedule] = []
    /// Connection ids per scenario, in start order, not ramped down.
    private var active: [[Int]] = []
    private var everStarted: [Int] = []
    /// Per scenario, the highest connection target a tick followed (see ``RunResult/ScenarioResult/peakTarget``).
    private var peakTargets: [Int] = []
    private var nextID = 0
    private var launched = 0
    private let finished = FinishedCount()
    private var previousTick = Duration.zero

    // The measurements, summed from the loops' snapshots.
    private var scenarioTotals: [MetricSet] = []
    private var total = MetricSet()
    private var intervals: [RunResult.Interval] = []
    private var currentInterval = MetricSet()
    private var intervalStart = Duration.zero
    private var lastGather = Duration.zero
    private var nextGather = Duration.zero
    private var nextIntervalEnd = Duration.zero
    private var abortedBy: String?

    init(profile: Profile, plans: [ScenarioPlan], group: EventLoopGroup, random: SeededRandomNumberGenerator,
         shutdown: GracefulShutdown?, onProgress: (@Sendable (RunProgress) -> Void)?, seed: UInt64, faults: FaultSwitches) {
        self.faults = faults
        self.profile = profile
        self.plans = plans
        self.group = group
        self.random = random
        self.shutdown = shutdown
        self.onProgress = onProgress
        self.seed = seed
        recorders = plans.map { _ in group.loops.map { _ in LoopRecorder() } }
        latches = group.loops.map { _ in StopLatch() }
        ledgers = group.loops.map { _ in InvariantLedger() }
        ramps = plans.map { RampSchedule(connections: $0.websocket.connections, stages: $0.websocket.stages) }
        active = plans.map { _ in [] }
        everStarted = plans.map { _ in 0 }
        peakTargets = plans.map { _ in 0 }
        scenarioTotals = plans.map { _ in MetricSet() }
        nextGather = gatherEvery
        nextIntervalEnd = profile.report.interval
    }

    /// How often recorders are gathered (and progress reported): every second, or every report interval if
    /// that is shorter. Gathers fall on fixed boundaries (k × period), so a late tick does not shift them.
    private var gatherEvery: Duration { min(.seconds(1), profile.report.interval) }

    private var running: Int { launched - finished.value }

    mutating func run() async -> RunResult {
        let startedAt = Date()
        let clock = ContinuousClock()
        let start = clock.now
        var unfinished = 0
        await withTaskGroup(of: Void.self) { connections in
            while true {
                let elapsed = clock.now - start
                if elapsed >= profile.duration || shutdown?.isRequested == true || abortedBy != nil { break }
                fireChaos(at: elapsed, runStart: start, in: &connections)
                followRamps(at: elapsed, in: &connections)
                let isRampDone = plans.indices.allSatisfy {
                    everStarted[$0] >= plans[$0].websocket.connections
                        && elapsed >= plans[$0].scenario.startAfter + ramps[$0].totalDuration
                }
                if isRampDone && running == 0 { break }  // every connection spent its budget (or gave up)
                if elapsed >= nextGather { await gatherAndReport(at: elapsed) }
                try? await Task.sleep(for: Self.tick)
            }
            unfinished = await stopEverything(in: &connections, runStart: start)
        }
        let elapsed = clock.now - start
        let (recent, perScenario, _) = await gather()
        add(recent, perScenario)
        intervals.append(.init(start: intervalStart, end: elapsed, liveConnections: 0, metrics: currentInterval))
        if unfinished > 0 { total.counters[Metric.unfinishedAtStop.name, default: 0] += UInt64(unfinished) }
        let thresholds = ThresholdEvaluator.evaluate(
            profile.thresholds, total: total, scenarios: namedTotals, seconds: min(elapsed, profile.duration).seconds)
        var result = RunResult(
            profile: profile, seed: seed, loops: group.loops.count, startedAt: startedAt, endedAt: Date(), elapsed: elapsed,
            interruptedBy: shutdown?.signal.map { $0 == 0 ? "request" : signalName($0) }, abortedBy: abortedBy,
            scenarios: plans.indices.map {
                .init(scenario: plans[$0].scenario, metrics: scenarioTotals[$0], peakTarget: peakTargets[$0])
            }, total: total,
            intervals: intervals, thresholds: thresholds, unfinishedConnections: unfinished, liveHandlesAfterStop: 0,
            waitingTasksAfterStop: 0, invariants: invariants)
        result.chaos = chaosLog.records.sorted { $0.at < $1.at }
        if let peak = reconnectsByTick.values.max() {
            result.reconnectStorm = .init(peakReconnectsPer100ms: peak, peakDropsPer100ms: dropsByTick.values.max() ?? 0)
        }
        return result
    }

    /// Fires the chaos events that fell due (each in a task of its own: a restart's pause must not hold the ticks),
    /// recording when each was applied (on a busy box its task may start after the tick that found it due).
    private mutating func fireChaos(at elapsed: Duration, runStart: ContinuousClock.Instant, in connections: inout TaskGroup<Void>) {
        guard let handler = chaosHandler else { return }
        while nextChaos < profile.chaos.count && profile.chaos[nextChaos].at <= elapsed {
            let event = profile.chaos[nextChaos]
            let eventSeed = seed &+ UInt64(nextChaos) &* 0x9E37_79B9
            nextChaos += 1
            let log = chaosLog
            connections.addTask {
                let firedAt = max(elapsed, ContinuousClock.now - runStart)
                let affected = await handler(event.action, eventSeed)
                log.append(.init(at: event.at, firedAt: firedAt, action: event.action.description, affected: affected))
            }
        }
    }

    /// Starts connections up to the highest target since the last tick (a stage's peak between two ticks
    /// counts), then stops the newest ones down to the target now.
    private mutating func followRamps(at elapsed: Duration, in connections: inout TaskGroup<Void>) {
        let loops = group.loops
        for (index, plan) in plans.enumerated() where elapsed >= plan.scenario.startAfter {
            let now = elapsed - plan.scenario.startAfter
            let since = max(.zero, previousTick - plan.scenario.startAfter)
            let target = min(ramps[index].target(at: now), plan.websocket.connections)
            let peak = min(ramps[index].peak(in: since...now), plan.websocket.connections)
            peakTargets[index] = max(peakTargets[index], peak)
            while active[index].count < peak {
                let id = nextID
                nextID += 1
                let loopIndex = id % loops.count
                let loop = loops[loopIndex]
                active[index].append(id)
                everStarted[index] += 1
                launched += 1
                let finished = self.finished
                let (recorder, latch, ledger) = (recorders[index][loopIndex], latches[loopIndex], ledgers[loopIndex])
                let userRandom = random.split()
                let faults = self.faults
                connections.addTask(executorPreference: loop.taskExecutor) {
                    // A download or upload slot, or a WebSocket client.
                    if plan.transfer != nil {
                        var user = TransferUser(id: id, plan: plan, loop: loop, recorder: recorder, latch: latch, ledger: ledger,
                                                faults: faults, random: userRandom)
                        await user.run()
                    } else {
                        var user = VirtualUser(id: id, plan: plan, loop: loop, recorder: recorder, latch: latch, ledger: ledger,
                                               faults: faults, random: userRandom)
                        await user.run()
                    }
                    finished.increment()
                }
            }
            if active[index].count > target {
                let instant = LoopClock().now.nanoseconds
                for id in active[index][target...] {
                    let latch = latches[id % loops.count]
                    loops[id % loops.count].execute { latch.stop(id, at: instant) }
                }
                active[index].removeSubrange(target...)
            }
        }
        previousTick = elapsed
    }

    /// Collects every loop's recorders, closes the interval when its boundary passed, checks aborting
    /// thresholds, and reports progress.
    private mutating func gatherAndReport(at elapsed: Duration) async {
        while nextGather <= elapsed { nextGather += gatherEvery }
        let (recent, perScenario, live) = await gather()
        add(recent, perScenario)
        let seconds = (elapsed - lastGather).seconds
        lastGather = elapsed
        if elapsed >= nextIntervalEnd {
            while nextIntervalEnd <= elapsed { nextIntervalEnd += profile.report.interval }
            intervals.append(.init(start: intervalStart, end: elapsed, liveConnections: live, metrics: currentInterval))
            currentInterval = MetricSet()
            intervalStart = elapsed
        }
        abortedBy = ThresholdEvaluator.firstAbort(profile.thresholds, total: total, scenarios: namedTotals, elapsed: elapsed)
        onProgress?(RunProgress(
            elapsed: elapsed, duration: profile.duration, liveConnections: live,
            targetConnections: active.reduce(0) { $0 + $1.count }, recent: recent, recentSeconds: seconds, total: total,
            isStopping: false))
    }

    /// Stops every connection gracefully and waits up to `gracefulStop`; cancels what is still running
    /// then. Returns how many had to be cancelled.
    private mutating func stopEverything(in connections: inout TaskGroup<Void>, runStart: ContinuousClock.Instant) async -> Int {
        let clock = ContinuousClock()
        let stopInstant = LoopClock().now.nanoseconds
        for (index, loop) in group.loops.enumerated() {
            let latch = latches[index]
            loop.execute { latch.stopEverything(at: stopInstant) }
        }
        let stopStarted = clock.now
        var lastReport = stopStarted - .seconds(1)
        var unfinished = 0
        while running > 0 {
            let waited = clock.now - stopStarted
            if waited >= profile.gracefulStop {
                unfinished = running
                connections.cancelAll()
                break
            }
            if clock.now - lastReport >= .milliseconds(250) {
                lastReport = clock.now
                var progress = RunProgress(
                    elapsed: clock.now - runStart, duration: profile.duration, liveConnections: running,
                    targetConnections: 0, recent: MetricSet(), recentSeconds: 0, total: total, isStopping: true)
                progress.stopTimeLeft = profile.gracefulStop - waited
                onProgress?(progress)
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        await connections.waitForAll()
        return unfinished
    }

    /// Takes every recorder's snapshot (on its loop): the sum, per scenario, and live connections; adds the
    /// loops' invariant ledgers to the run's.
    private mutating func gather() async -> (MetricSet, [MetricSet], Int) {
        for (index, ledger) in ledgers.enumerated() {
            if let snapshot = try? await group.loops[index].submit({ ledger.takeSnapshot() }) { invariants.add(snapshot) }
        }
        var combined = MetricSet()
        var perScenario = plans.map { _ in MetricSet() }
        var live = 0
        for (scenarioIndex, loopRecorders) in recorders.enumerated() {
            for (loopIndex, recorder) in loopRecorders.enumerated() {
                guard let snapshot = try? await group.loops[loopIndex].submit({ recorder.takeSnapshot() }) else { continue }
                // Every histogram has the default layout: adding cannot fail.
                try? perScenario[scenarioIndex].add(snapshot.metrics)
                try? combined.add(snapshot.metrics)
                live += snapshot.liveConnections
                for (tick, count) in snapshot.reconnectsByTick { reconnectsByTick[tick, default: 0] += count }
                for (tick, count) in snapshot.dropsByTick { dropsByTick[tick, default: 0] += count }
            }
        }
        return (combined, perScenario, live)
    }

    private mutating func add(_ recent: MetricSet, _ perScenario: [MetricSet]) {
        for index in plans.indices { try? scenarioTotals[index].add(perScenario[index]) }
        try? total.add(recent)
        try? currentInterval.add(recent)
    }

    private var namedTotals: [(String, MetricSet)] { zip(plans, scenarioTotals).map { ($0.scenario.name, $1) } }
}

/// The chaos events that fired, recorded from their tasks.
private final class ChaosLog: Sendable {
    private let storage = Mutex<[RunResult.ChaosRecord]>([])
    var records: [RunResult.ChaosRecord] { storage.withLock { $0 } }
    func append(_ record: RunResult.ChaosRecord) { storage.withLock { $0.append(record) } }
}

/// Connections that have ended, counted from their own tasks.
private final class FinishedCount: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .acquiring) }
    func increment() { count.add(1, ordering: .releasing) }
}

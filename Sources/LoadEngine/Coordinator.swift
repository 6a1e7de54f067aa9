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

    /// How often the ramp is followed.
    static let tick: Duration = .milliseconds(50)
    /// How often recorders are gathered (and progress reported): every second, or every report interval if
    /// that is shorter. Gathers fall on fixed boundaries (k × period), so a late tick does not shift them.
    var gatherEvery: Duration { min(.seconds(1), profile.report.interval) }

    private struct Slot {
        var scenario: Int
        var loop: Int
    }

    mutating func run() async -> RunResult {
        let loops = group.loops
        let recorders = plans.map { _ in loops.map { _ in LoopRecorder() } }
        let latches = loops.map { _ in StopLatch() }
        let ramps = plans.map { RampSchedule(connections: $0.websocket.connections, stages: $0.websocket.stages) }
        var active = [[Int]](repeating: [], count: plans.count)  // ids per scenario, in start order, not ramped down
        var everStarted = [Int](repeating: 0, count: plans.count)
        let finished = FinishedCount()
        var nextID = 0
        var scenarioTotals = plans.map { _ in MetricSet() }
        var total = MetricSet()
        var intervals: [RunResult.Interval] = []
        var currentInterval = MetricSet()
        var intervalStart = Duration.zero
        var lastGather = Duration.zero
        var nextGather = gatherEvery
        var nextIntervalEnd = profile.report.interval
        var previousTick = Duration.zero
        var liveConnections = 0
        var abortedBy: String?
        let startedAt = Date()
        let clock = ContinuousClock()
        let start = clock.now
        var unfinished = 0

        func gather() async -> (MetricSet, [MetricSet], Int) {
            var combined = MetricSet()
            var perScenario = plans.map { _ in MetricSet() }
            var live = 0
            for (scenarioIndex, loopRecorders) in recorders.enumerated() {
                for (loopIndex, recorder) in loopRecorders.enumerated() {
                    guard let snapshot = try? await loops[loopIndex].submit({ recorder.takeSnapshot() }) else { continue }
                    try? perScenario[scenarioIndex].add(snapshot.metrics)
                    try? combined.add(snapshot.metrics)
                    live += snapshot.liveConnections
                }
            }
            return (combined, perScenario, live)
        }

        await withTaskGroup(of: Void.self) { connections in
            var launched = 0
            var running: Int { launched - finished.value }
            var deadlineReached = false
            while true {
                let elapsed = clock.now - start
                let stopRequested = shutdown?.isRequested == true
                if elapsed >= profile.duration || stopRequested || abortedBy != nil { break }
                // Follow each ramp.
                for (index, plan) in plans.enumerated() where elapsed >= plan.scenario.startAfter {
                    let now = elapsed - plan.scenario.startAfter
                    let since = max(.zero, previousTick - plan.scenario.startAfter)
                    let target = min(ramps[index].target(at: now), plan.websocket.connections)
                    // Up to the highest point since the last tick (a stage peak between ticks), then down to now.
                    let peak = min(ramps[index].peak(in: since...now), plan.websocket.connections)
                    let current = active[index].count
                    if current < peak {
                        for _ in current..<peak {
                            let id = nextID
                            nextID += 1
                            let loopIndex = id % loops.count
                            let loop = loops[loopIndex]
                            let user = VirtualUser(
                                id: id, plan: plan, loop: loop, recorder: recorders[index][loopIndex],
                                latch: latches[loopIndex], random: random.split())
                            active[index].append(id)
                            everStarted[index] += 1
                            launched += 1
                            connections.addTask(executorPreference: loop.taskExecutor) {
                                var user = user
                                await user.run()
                                finished.increment()
                            }
                        }
                    }
                    if active[index].count > target {
                        // Ramp down: the newest connections close first.
                        let instant = LoopClock().now.nanoseconds
                        for id in active[index][target...] {
                            let latch = latches[id % loops.count]
                            loops[id % loops.count].execute { latch.stop(id, at: instant) }
                        }
                        active[index].removeSubrange(target...)
                    }
                }
                previousTick = elapsed
                let isRampDone = plans.indices.allSatisfy {
                    everStarted[$0] >= plans[$0].websocket.connections
                        && elapsed >= plans[$0].scenario.startAfter + ramps[$0].totalDuration
                }
                if isRampDone && running == 0 { break }  // every connection spent its budget (or gave up)
                if elapsed >= nextGather {
                    while nextGather <= elapsed { nextGather += gatherEvery }
                    let (recent, perScenario, live) = await gather()
                    liveConnections = live
                    for index in plans.indices { try? scenarioTotals[index].add(perScenario[index]) }
                    try? total.add(recent)
                    try? currentInterval.add(recent)
                    let seconds = (elapsed - lastGather).seconds
                    lastGather = elapsed
                    if elapsed >= nextIntervalEnd {
                        while nextIntervalEnd <= elapsed { nextIntervalEnd += profile.report.interval }
                        intervals.append(.init(start: intervalStart, end: elapsed, liveConnections: live, metrics: currentInterval))
                        currentInterval = MetricSet()
                        intervalStart = elapsed
                    }
                    abortedBy = ThresholdEvaluator.firstAbort(
                        profile.thresholds, total: total, scenarios: zip(plans, scenarioTotals).map { ($0.scenario.name, $1) },
                        elapsed: elapsed)
                    onProgress?(RunProgress(
                        elapsed: elapsed, duration: profile.duration, liveConnections: live,
                        targetConnections: plans.indices.reduce(0) { $0 + active[$1].count }, recent: recent,
                        recentSeconds: seconds, total: total, isStopping: false))
                }
                try? await Task.sleep(for: Self.tick)
            }
            // Stop: every connection closes gracefully; whatever is still running after gracefulStop is cancelled.
            let stopInstant = LoopClock().now.nanoseconds
            for (index, loop) in loops.enumerated() {
                let latch = latches[index]
                loop.execute { latch.stopEverything(at: stopInstant) }
            }
            let stopStarted = clock.now
            var lastStopReport = stopStarted - .seconds(1)
            while running > 0 {
                if clock.now - stopStarted >= profile.gracefulStop {
                    deadlineReached = true
                    break
                }
                if clock.now - lastStopReport >= .milliseconds(250) {
                    lastStopReport = clock.now
                    var progress = RunProgress(
                        elapsed: clock.now - start, duration: profile.duration, liveConnections: running,
                        targetConnections: 0, recent: MetricSet(), recentSeconds: 0, total: total, isStopping: true)
                    progress.stopTimeLeft = profile.gracefulStop - (clock.now - stopStarted)
                    onProgress?(progress)
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
            if deadlineReached {
                unfinished = running
                connections.cancelAll()
            }
            await connections.waitForAll()
        }
        let elapsed = clock.now - start
        let (recent, perScenario, _) = await gather()
        for index in plans.indices { try? scenarioTotals[index].add(perScenario[index]) }
        try? total.add(recent)
        try? currentInterval.add(recent)
        intervals.append(.init(start: intervalStart, end: elapsed, liveConnections: 0, metrics: currentInterval))
        if unfinished > 0 { total.counters["ws.unfinished_at_stop", default: 0] += UInt64(unfinished) }
        let activeSeconds = min(elapsed, profile.duration).seconds
        let thresholds = ThresholdEvaluator.evaluate(
            profile.thresholds, total: total, scenarios: zip(plans, scenarioTotals).map { ($0.scenario.name, $1) },
            seconds: activeSeconds)
        return RunResult(
            profile: profile, seed: seed, loops: loops.count, startedAt: startedAt, endedAt: Date(), elapsed: elapsed,
            interruptedBy: shutdown?.signal.map { $0 == 0 ? "request" : signalName($0) }, abortedBy: abortedBy,
            scenarios: zip(plans, scenarioTotals).map { .init(scenario: $0.scenario, metrics: $1) }, total: total,
            intervals: intervals, thresholds: thresholds, unfinishedConnections: unfinished, liveHandlesAfterStop: 0,
            waitingTasksAfterStop: 0)
    }
}

/// Connections that have ended, counted from their own tasks.
private final class FinishedCount: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .acquiring) }
    func increment() { count.add(1, ordering: .releasing) }
}

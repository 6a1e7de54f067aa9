import Crypto
import Foundation
import Profile
import Reporting
import Runtime

/// The run's conductor, on the control loop: sleeps until the next thing falls due (a ramp step, a gather,
/// an interval end, a chaos event, the end of the duration) or something happens (a stop request, the last
/// connection ending), does what is due, and at the end stops everything gracefully. It reads one clock, the
/// loop clock; the agenda decides what is due.
struct Coordinator {
    let profile: Profile
    let control: EventLoop
    let shutdown: GracefulShutdown?
    let onProgress: (@Sendable (RunProgress) -> Void)?
    let seed: UInt64
    /// Applies the chaos timeline's actions; nil when the target is not the embedded server.
    let chaos: (any ChaosController)?
    /// Where the header and every closed interval are appended as the run goes; nil: no journal.
    let journal: RunJournal?
    /// The slice of the profile this process runs, for the journal's header.
    let shard: Shard?

    private var agenda: RunAgenda
    private var fleet: ConnectionFleet
    private var tally: RunTally
    private let wakeup = CoordinatorWakeup()
    private let chaosLog = ChaosLog()
    private var lastGather = Duration.zero
    private var abortedBy: String?

    /// - Parameter control: the loop the coordinator runs on (its wake-ups are that loop's timers).
    init(profile: Profile, plans: [ScenarioPlan], group: EventLoopGroup, control: EventLoop,
         random: SeededRandomNumberGenerator, shutdown: GracefulShutdown?, onProgress: (@Sendable (RunProgress) -> Void)?,
         seed: UInt64, chaos: (any ChaosController)?, journal: RunJournal? = nil, shard: Shard? = nil) {
        self.profile = profile
        self.control = control
        self.shutdown = shutdown
        self.onProgress = onProgress
        self.seed = seed
        self.chaos = chaos
        self.journal = journal
        self.shard = shard
        agenda = RunAgenda(profile: profile)
        fleet = ConnectionFleet(plans: plans, loops: group.loops, random: random, running: RunningConnections(wakeup: wakeup))
        tally = RunTally(scenarioCount: plans.count, maximumIntervals: profile.report.maxIntervals)
    }

    /// Runs the load to its end (the duration, a stop request, an aborting threshold, or every connection
    /// spent) and returns what it measured. Call on the control loop.
    mutating func run() async -> CoordinatorOutcome {
        precondition(control.inLoopThread, "the coordinator runs on its control loop")
        let startedAt = Date()
        let clock = LoopClock()
        let start = clock.now
        journal?.begin(profile: profile, seed: seed, shard: shard, loops: fleet.loops.count, startedAt: startedAt)
        var unfinished = 0
        let wakeup = self.wakeup
        await withTaskGroup(of: Void.self) { watchers in
            // A stop request wakes the coordinator at once (wait() returns nil when cancelled at the end).
            if let shutdown { watchers.addTask { if await shutdown.wait() != nil { wakeup.ring() } } }
            await withTaskGroup(of: Void.self) { connections in
                while shutdown?.isRequested != true {
                    let elapsed = start.duration(to: clock.now)
                    let due = agenda.advance(to: elapsed)
                    fleet.beginPass()
                    fireChaos(due.chaos, decidedAt: elapsed, runStart: start, in: &connections)
                    for (index, step) in due.ramps.enumerated() {
                        guard let step else { continue }
                        // Past the end (a late wake), a step's peak counts as followed but nobody starts: whoever
                        // started now would connect after the run and only be stopped.
                        if due.isOver { fleet.notePeak(step, scenario: index) } else { fleet.follow(step, scenario: index, in: &connections) }
                    }
                    if due.isOver { break }
                    if agenda.areRampsOver(at: elapsed) && fleet.isSpent { break }  // every connection spent its budget
                    if due.isGatherDue {
                        await gatherAndReport(at: elapsed, closesInterval: due.closesInterval)
                        if abortedBy != nil { break }
                    }
                    // Starts held back: a loop rings once it started what it was handed (the timer is a fallback).
                    let next = fleet.isHoldingStarts ? min(agenda.nextDue, elapsed + Self.heldStartsRecheck) : agenda.nextDue
                    await wakeup.wait(until: start.advanced(by: next), on: control)
                }
                unfinished = await stopEverything(in: &connections, runStart: start)
            }
            watchers.cancelAll()
        }
        let elapsed = start.duration(to: clock.now)
        _ = await tally.gather(from: fleet)
        journalInterval(tally.closeInterval(at: elapsed, liveConnections: 0))
        tally.countUnfinished(unfinished)
        return CoordinatorOutcome(
            startedAt: startedAt, endedAt: startedAt.addingTimeInterval(start.duration(to: clock.now).seconds), elapsed: elapsed,
            abortedBy: abortedBy,
            scenarios: fleet.plans.indices.map {
                .init(scenario: fleet.plans[$0].scenario, metrics: tally.scenarioTotals[$0], peakTarget: fleet.peakTargets[$0])
            },
            total: tally.total, intervals: tally.series.entries,
            intervalLog: tally.series.log(baseSeconds: profile.report.interval.seconds), unfinishedConnections: unfinished,
            invariants: tally.invariants,
            chaos: chaosLog.records.sorted { $0.at < $1.at }, reconnectStorm: tally.reconnectStorm)
    }

    /// Fires the chaos events that fell due, each in a task of its own (a restart's pause must not hold the
    /// coordinator), recording when each was applied: the wake that found it due, or later if its task
    /// started later (a busy box).
    private func fireChaos(_ indices: [Int], decidedAt elapsed: Duration, runStart: LoopClock.Instant,
                           in connections: inout TaskGroup<Void>) {
        guard let chaos else { return }
        for index in indices {
            let event = profile.chaos[index]
            let eventSeed = ChaosEvent.seed(run: seed, index: index)
            let log = chaosLog
            connections.addTask {
                let firedAt = max(elapsed, runStart.duration(to: LoopClock().now))
                let affected = await chaos.apply(event.action, seed: eventSeed)
                log.append(.init(at: event.at, firedAt: firedAt, action: event.action.description, affected: affected))
            }
        }
    }

    /// Gathers the recorders, closes the interval if its boundary passed, checks aborting thresholds, and
    /// reports progress.
    private mutating func gatherAndReport(at elapsed: Duration, closesInterval: Bool) async {
        let (recent, live) = await tally.gather(from: fleet)
        let seconds = (elapsed - lastGather).seconds
        lastGather = elapsed
        if closesInterval { journalInterval(tally.closeInterval(at: elapsed, liveConnections: live)) }
        abortedBy = ThresholdEvaluator.firstAbort(profile.thresholds, total: tally.total, scenarios: namedTotals, elapsed: elapsed)
        guard let onProgress else { return }
        var progress = RunProgress(
            elapsed: elapsed, duration: profile.duration, liveConnections: live, targetConnections: fleet.targetCount,
            recent: recent, recentSeconds: seconds, total: tally.total, isStopping: false)
        progress.scenarios = fleet.plans.indices.map {
            ScenarioProgress(name: fleet.plans[$0].scenario.name, liveConnections: tally.scenarioLive[$0],
                             targetConnections: fleet.targetCount(scenario: $0), total: tally.scenarioTotals[$0])
        }
        progress.invariants = tally.invariants
        onProgress(progress)
    }

    /// Appends a closed interval to the journal (one write and one fsync per interval, never per message).
    private func journalInterval(_ closed: RunTally.ClosedInterval) {
        guard let journal else { return }
        journal.append(closed.interval, scenarios: zip(fleet.plans, closed.scenarios).map { ($0.scenario.name, $1) },
                       invariants: closed.invariants)
    }

    /// With starts held back, the coordinator looks again after this at the latest (a loop's ring is the rule).
    static let heldStartsRecheck: Duration = .milliseconds(5)

    /// How often progress is reported while connections close.
    static let stopProgressEvery: Duration = .milliseconds(250)

    /// Stops every connection gracefully and waits until they have all ended, or `gracefulStop` ran out
    /// (then cancels the rest). Returns how many had to be cancelled.
    private func stopEverything(in connections: inout TaskGroup<Void>, runStart: LoopClock.Instant) async -> Int {
        let clock = LoopClock()
        let stopStarted = clock.now
        fleet.stopEverything(at: stopStarted)
        let deadline = stopStarted.advanced(by: profile.gracefulStop)
        var nextReport = stopStarted
        var unfinished = 0
        while fleet.running.value > 0 {
            let now = clock.now
            if now >= deadline {
                unfinished = fleet.running.value
                connections.cancelAll()
                break
            }
            if now >= nextReport {
                nextReport = now.advanced(by: Self.stopProgressEvery)
                var progress = RunProgress(
                    elapsed: runStart.duration(to: now), duration: profile.duration, liveConnections: fleet.running.value,
                    targetConnections: 0, recent: MetricSet(), recentSeconds: 0, total: tally.total, isStopping: true)
                progress.stopTimeLeft = now.duration(to: deadline)
                onProgress?(progress)
            }
            await wakeup.wait(until: min(nextReport, deadline), on: control)
        }
        await connections.waitForAll()
        return unfinished
    }

    private var namedTotals: [(String, MetricSet)] {
        zip(fleet.plans, tally.scenarioTotals).map { ($0.scenario.name, $1) }
    }
}

/// What the coordinator measured; the run adds what it checks after the loops are quiet and assembles the
/// ``RunResult``.
struct CoordinatorOutcome {
    var startedAt: Date
    var endedAt: Date
    var elapsed: Duration
    var abortedBy: String?
    var scenarios: [RunResult.ScenarioResult]
    var total: MetricSet
    /// The bounded interval series at the end (every closed interval is in the journal).
    var intervals: [RunResult.Interval]
    var intervalLog: RunResult.IntervalLog
    var unfinishedConnections: Int
    var invariants: InvariantReport
    var chaos: [RunResult.ChaosRecord]
    var reconnectStorm: RunResult.ReconnectStorm?
}

/// The chaos events that fired, recorded from their tasks.
private final class ChaosLog: Sendable {
    private let storage = Lock<[RunResult.ChaosRecord]>([])
    var records: [RunResult.ChaosRecord] { storage.withLock { $0 } }
    func append(_ record: RunResult.ChaosRecord) { storage.withLock { $0.append(record) } }
}

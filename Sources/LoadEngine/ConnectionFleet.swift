import Crypto
import Runtime
import Synchronization

/// The run's clients: starts and stops connections (and transfer slots) to follow each scenario's ramp,
/// and owns what the loops share with them — a recorder per (scenario, loop), a stop latch and an
/// invariant ledger per loop.
struct ConnectionFleet {
    let plans: [ScenarioPlan]
    let loops: [EventLoop]
    private var random: SeededRandomNumberGenerator
    let running: RunningConnections

    /// Per scenario, then per loop: confined to that loop.
    let recorders: [[LoopRecorder]]
    let latches: [StopLatch]
    let ledgers: [InvariantLedger]
    /// Per loop: the connections handed to it whose task has not started yet.
    let startQueues: [StartQueue]
    /// The last ``follow(_:scenario:in:)`` left connections unstarted because their loop had
    /// ``startsPerLoop`` not yet started: the coordinator comes back when that loop has started them.
    private(set) var isHoldingStarts = false

    /// Connection ids per scenario, in start order, not ramped down.
    private var active: [[Int]]
    private var everStarted: [Int]
    /// Per scenario, the highest target followed (see ``RunResult/ScenarioResult/peakTarget``).
    private(set) var peakTargets: [Int]
    private var nextID = 0

    init(plans: [ScenarioPlan], loops: [EventLoop], random: SeededRandomNumberGenerator, running: RunningConnections) {
        self.plans = plans
        self.loops = loops
        self.random = random
        self.running = running
        recorders = plans.map { plan in loops.map { _ in LoopRecorder(flow: plan.flow) } }
        latches = loops.map { _ in StopLatch() }
        ledgers = loops.map { _ in InvariantLedger() }
        startQueues = loops.map { _ in StartQueue(wakeup: running.wakeup) }
        active = plans.map { _ in [] }
        everStarted = plans.map { _ in 0 }
        peakTargets = plans.map { _ in 0 }
    }

    /// Connections the ramps want now (the progress line's target).
    var targetCount: Int { active.reduce(0) { $0 + $1.count } }
    /// Connections scenario `index`'s ramp wants now.
    func targetCount(scenario index: Int) -> Int { active[index].count }

    /// Whether every scenario has started all its connections and every one has ended (spent its budget or
    /// gave up): nothing is left to run.
    var isSpent: Bool {
        running.value == 0 && plans.indices.allSatisfy { everStarted[$0] >= plans[$0].websocket.connections }
    }

    /// Counts `step`'s peak as followed (``RunResult/ScenarioResult/peakTarget``).
    mutating func notePeak(_ step: RunAgenda.RampStep, scenario index: Int) {
        peakTargets[index] = max(peakTargets[index], step.peak)
    }

    /// Connections handed to one loop and not yet started, at most: a ramp steeper than the loops can start
    /// (a stage of 0 s: all at once) is started as fast as they start them, `startsPerLoop` at a time, so a
    /// loop answers the I/O of the connections it started between batches instead of starting thousands in
    /// one go while their connects wait for it.
    static let startsPerLoop = 64

    /// Forgets the last pass's hold (at the start of each coordinator pass).
    mutating func beginPass() { isHoldingStarts = false }

    /// Starts connections of scenario `index` up to the step's peak (as many as their loops take now: see
    /// ``startsPerLoop``; the rest on a later pass), then stops the newest down to its target.
    ///
    /// The connections a loop is handed in one call start as one batch: a task on that loop whose own group runs
    /// them. A task group keeps its children in a list it searches to remove one that ended, so 19,000 children
    /// of one group cost 19,000²/2 steps as they end at the stop (measured: 1.2 s on the control loop); batches of
    /// at most ``startsPerLoop`` keep both lists short. The loop also creates the connections' tasks itself,
    /// without a hop from the control loop per connection.
    mutating func follow(_ step: RunAgenda.RampStep, scenario index: Int, in connections: inout TaskGroup<Void>) {
        let plan = plans[index]
        notePeak(step, scenario: index)
        var batches: [[UserStart]] = loops.map { _ in [] }
        while active[index].count < step.peak {
            let id = nextID
            let loopIndex = id % loops.count
            guard startQueues[loopIndex].hand(limit: Self.startsPerLoop) else {
                isHoldingStarts = true
                break
            }
            nextID += 1
            batches[loopIndex].append(UserStart(id: id, connection: everStarted[index], random: random.split()))
            active[index].append(id)
            everStarted[index] += 1
            running.started()
        }
        for (loopIndex, batch) in batches.enumerated() where !batch.isEmpty {
            let loop = loops[loopIndex]
            let (queue, running) = (startQueues[loopIndex], self.running)
            let (recorder, latch, ledger) = (recorders[index][loopIndex], latches[loopIndex], ledgers[loopIndex])
            connections.addTask(executorPreference: loop.taskExecutor) {
                await withDiscardingTaskGroup { users in
                    for start in batch {
                        users.addTask(executorPreference: loop.taskExecutor) {
                            queue.started()
                            // A download or upload slot, or a WebSocket client.
                            if plan.transfer != nil {
                                await Self.runTransferUser(start, plan: plan, loop: loop, recorder: recorder,
                                                           latch: latch, ledger: ledger)
                            } else {
                                await TaskSlabReserve.reserve(tls: plan.url.isSecure)
                                await Self.runWebSocketUser(start, plan: plan, loop: loop, recorder: recorder,
                                                            latch: latch, ledger: ledger)
                            }
                            running.ended()
                        }
                    }
                }
            }
        }
        if active[index].count > step.target {
            let instant = LoopClock().now.nanoseconds
            for id in active[index][step.target...] {
                let latch = latches[id % loops.count]
                loops[id % loops.count].execute { latch.stop(id, at: instant) }
            }
            active[index].removeSubrange(step.target...)
        }
    }

    /// A WebSocket client, from its start to its end. Out of line, as is ``runTransferUser``: the task's first frame
    /// holds the one user it runs, not room for both kinds (and a WebSocket client's is held while it is idle).
    @inline(never)
    private static func runWebSocketUser(_ start: UserStart, plan: ScenarioPlan, loop: EventLoop,
                                         recorder: LoopRecorder, latch: StopLatch, ledger: InvariantLedger) async {
        var user = VirtualUser(id: start.id, plan: plan, loop: loop, recorder: recorder, latch: latch, ledger: ledger,
                               random: start.random, connection: start.connection)
        await user.run()
    }

    /// A download or upload slot, from its start to its end.
    @inline(never)
    private static func runTransferUser(_ start: UserStart, plan: ScenarioPlan, loop: EventLoop, recorder: LoopRecorder,
                                        latch: StopLatch, ledger: InvariantLedger) async {
        var user = TransferUser(id: start.id, plan: plan, loop: loop, recorder: recorder, latch: latch, ledger: ledger,
                                random: start.random)
        await user.run()
    }

    /// Tells every connection to stop (closing handshakes; the open model counts its schedule up to `instant`).
    func stopEverything(at instant: LoopClock.Instant) {
        for (index, loop) in loops.enumerated() {
            let latch = latches[index]
            loop.execute { latch.stopEverything(at: instant.nanoseconds) }
        }
    }
}

/// What one connection is started with: its id, its number among its scenario's connections, its random source.
private struct UserStart: Sendable {
    var id: Int
    var connection: Int
    var random: SeededRandomNumberGenerator
}

/// The connections handed to one loop whose task has not started yet (their jobs wait in the loop's queue). The
/// coordinator hands a loop at most a limit of them; when the loop has started the last, it rings the coordinator
/// if it holds more back.
final class StartQueue: Sendable {
    private let count = Atomic<Int>(0)
    /// The coordinator holds starts back for this loop: the loop rings it once its queue is empty.
    private let isHolding = Atomic<Bool>(false)
    private let wakeup: CoordinatorWakeup

    init(wakeup: CoordinatorWakeup) { self.wakeup = wakeup }

    /// Not yet started now.
    var value: Int { count.load(ordering: .sequentiallyConsistent) }

    /// Counts one more handed to the loop, unless `limit` wait already: then marks the queue as held (the loop
    /// rings when it is empty) and returns false. On the coordinator's thread.
    func hand(limit: Int) -> Bool {
        if count.load(ordering: .sequentiallyConsistent) < limit {
            count.add(1, ordering: .sequentiallyConsistent)
            return true
        }
        isHolding.store(true, ordering: .sequentiallyConsistent)
        // The loop may have emptied the queue between the load and the store (and not rung): look again.
        guard count.load(ordering: .sequentiallyConsistent) < limit else { return false }
        count.add(1, ordering: .sequentiallyConsistent)
        return true
    }

    /// One handed connection's task started (on its loop).
    func started() {
        if count.subtract(1, ordering: .sequentiallyConsistent).newValue == 0,
            isHolding.exchange(false, ordering: .sequentiallyConsistent)
        {
            wakeup.ring()
        }
    }
}

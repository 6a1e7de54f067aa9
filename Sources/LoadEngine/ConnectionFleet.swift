import Crypto
import Runtime

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

    /// Starts connections of scenario `index` up to the step's peak, then stops the newest down to its target.
    mutating func follow(_ step: RunAgenda.RampStep, scenario index: Int, in connections: inout TaskGroup<Void>) {
        let plan = plans[index]
        notePeak(step, scenario: index)
        while active[index].count < step.peak {
            let id = nextID
            nextID += 1
            let connection = everStarted[index]
            let loopIndex = id % loops.count
            let loop = loops[loopIndex]
            active[index].append(id)
            everStarted[index] += 1
            running.started()
            let running = self.running
            let (recorder, latch, ledger) = (recorders[index][loopIndex], latches[loopIndex], ledgers[loopIndex])
            let userRandom = random.split()
            connections.addTask(executorPreference: loop.taskExecutor) {
                // A download or upload slot, or a WebSocket client.
                if plan.transfer != nil {
                    var user = TransferUser(id: id, plan: plan, loop: loop, recorder: recorder, latch: latch, ledger: ledger,
                                            random: userRandom)
                    await user.run()
                } else {
                    var user = VirtualUser(id: id, plan: plan, loop: loop, recorder: recorder, latch: latch, ledger: ledger,
                                           random: userRandom, connection: connection)
                    await user.run()
                }
                running.ended()
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

    /// Tells every connection to stop (closing handshakes; the open model counts its schedule up to `instant`).
    func stopEverything(at instant: LoopClock.Instant) {
        for (index, loop) in loops.enumerated() {
            let latch = latches[index]
            loop.execute { latch.stopEverything(at: instant.nanoseconds) }
        }
    }
}

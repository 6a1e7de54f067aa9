import Clients
import Crypto
import Lifecycle
import Profile
import Runtime
import WebSocket

/// What every connection of a scenario shares (immutable). A class: connections hold a reference, so
/// their long-lived async frames stay small (a task keeps the memory of its deepest frames).
final class ScenarioPlan: Sendable {
    let index: Int
    let scenario: Scenario
    let websocket: WebSocketScenario
    let url: WebSocketURL
    /// In the box every connection of the scenario holds (a flow whose handshake sets headers makes its own).
    let sharedConfiguration: SharedWebSocketConfiguration
    var configuration: WebSocketClientConfiguration { sharedConfiguration.value }
    /// Printable filler the messages are cut from (text-safe, so one buffer serves both formats).
    let filler: [UInt8]
    /// For download and upload scenarios.
    let transfer: TransferPlan?
    /// How long a stopped client may take to end (the profile's `gracefulStop`).
    let stopBound: Duration
    /// The seams a test bends (empty in real runs). Here, not in each connection: the plan is shared, so an
    /// honest run pays nothing per connection for them.
    let faults: RunFaults
    /// For flow scenarios: the steps made ready to run.
    let flow: FlowPlan?

    init(index: Int, scenario: Scenario, url: WebSocketURL, configuration: WebSocketClientConfiguration, filler: [UInt8],
         transfer: TransferPlan? = nil, stopBound: Duration, faults: RunFaults = RunFaults(), flow: FlowPlan? = nil) {
        self.flow = flow
        self.stopBound = stopBound
        self.faults = faults
        self.index = index
        self.scenario = scenario
        websocket = scenario.websocket
        self.url = url
        sharedConfiguration = SharedWebSocketConfiguration(configuration)
        self.filler = filler
        self.transfer = transfer
    }
}

/// Where a simulated client's connect-and-reconnect loop can be bent, for the oracle's proofs: the conformances
/// that break something live in the tests; the defaults (a protocol extension) are the honest client. Each
/// method is asked at most once per connection, connect attempt or backoff.
package protocol ReconnectFaults: Sendable {
    /// The reconnect attempts the actor's lifecycle allows, for a scenario allowing `scenarioMaximum` (the
    /// checker holds the scenario's own). Honest: `scenarioMaximum`.
    func maximumAttempts(allowing scenarioMaximum: Int) -> Int
    /// The run stopped this actor before it started: whether it connects anyway. Honest: false.
    func connectsThoughStoppedBeforeStart() -> Bool
    /// This actor's connection number `number` (1 for its first) just opened: whether the actor leaves it
    /// open, undriven, and connects again from a fresh lifecycle. Honest: false.
    func connectsAgain(afterOpening number: Int) -> Bool
    /// A connection opened: whether the lifecycle is told (which resets its attempts). Honest: true.
    func tellsLifecycleOfSuccess() -> Bool
    /// A connection the run stopped has closed, and this actor has connected again after a stop `earlier`
    /// times: whether it connects again from a fresh lifecycle. Honest: false.
    func connectsAgainAfterStop(earlier: Int) -> Bool
    /// The backoff the actor takes (and the checker sees), for the one the lifecycle drew. Honest: `drawn`.
    func backoff(drawn: Duration) -> Duration
    /// How long the actor really waits before it reconnects, for a backoff of `delay`. Honest: `delay`.
    func wait(forBackoff delay: Duration) -> Duration
}

extension ReconnectFaults {
    package func maximumAttempts(allowing scenarioMaximum: Int) -> Int { scenarioMaximum }
    package func connectsThoughStoppedBeforeStart() -> Bool { false }
    package func connectsAgain(afterOpening number: Int) -> Bool { false }
    package func tellsLifecycleOfSuccess() -> Bool { true }
    package func connectsAgainAfterStop(earlier: Int) -> Bool { false }
    package func backoff(drawn: Duration) -> Duration { drawn }
    package func wait(forBackoff delay: Duration) -> Duration { delay }
}

/// One simulated client: connects, drives its pattern, and reconnects with the scenario's backoff after
/// every unintended disconnect, until the run stops it (graceful close), its message budget is spent, or
/// its reconnect attempts run out. Runs on its loop (task executor preference), records into the loop's
/// recorder.
struct VirtualUser {
    let id: Int
    let plan: ScenarioPlan
    let loop: EventLoop
    let recorder: LoopRecorder
    let latch: StopLatch
    let ledger: InvariantLedger
    var random: SeededRandomNumberGenerator
    let clock = LoopClock()
    /// Created when the actor starts (on its loop).
    private(set) var history: ActorHistory!
    private var startedAt: LoopClock.Instant
    /// Decides every connect, backoff and give-up; the checkers read its transitions.
    private var lifecycle: ConnectionLifecycle
    /// Whether this actor saw a connection succeed since its last backoff (its own observation, not the lifecycle's).
    private var hasConnectedSinceBackoff = false
    /// The last backoff waited since the last success, as the checker derives the decorrelated bounds.
    private var previousBackoff: Duration?
    /// Reconnect attempts this actor made since its last successful connection, counted by the actor itself: the
    /// maximum-attempts check holds this, not the lifecycle's own count, against the scenario's policy.
    private var reconnectsSinceSuccess = 0
    /// How often a fault seam made this actor connect again after the run stopped it (never, in real runs).
    private var connectsAfterStop = 0
    /// How many connections of this actor have opened.
    private var openedCount = 0
    /// This actor's connections that have opened and were not yet seen closed: the one-live-connection
    /// checker counts them by their own state, not by how this loop means to use them.
    private var openedConnections: [WebSocketManager] = []
    /// The actor's number among its scenario's connections, in start order (a flow's `${vu}`, after its
    /// shard's offset).
    let connection: Int
    /// A flow scenario's per-client state (captures, marks, feeder rows), kept across reconnects.
    private(set) var flowState: FlowState?

    init(
        id: Int, plan: ScenarioPlan, loop: EventLoop, recorder: LoopRecorder, latch: StopLatch, ledger: InvariantLedger,
        random: SeededRandomNumberGenerator, connection: Int = 0
    ) {
        self.connection = connection
        self.id = id
        self.plan = plan
        self.loop = loop
        self.recorder = recorder
        self.latch = latch
        self.ledger = ledger
        self.random = random
        startedAt = clock.now
        lifecycle = ConnectionLifecycle(policy: Self.lifecyclePolicy(plan))
    }

    enum Ending {
        case stopped, finished, dropped
        /// A flow's `reconnect` step closed the connection on purpose: a new one follows at once, outside the
        /// reconnect policy.
        case reconnectRequested
    }

    mutating func run() async {
        startedAt = clock.now
        history = ActorHistory(id: id, scenario: plan.scenario.name, start: startedAt)
        if let flow = plan.flow { flowState = FlowState(vu: flow.vuOffset + connection, plan: flow, random: random.split()) }
        defer {
            recorder.recordEnd(of: id, latch: latch, ledger: ledger, history: history, bound: plan.stopBound)
            latch.remove(id)
        }
        await connectUntilDone()
        // Every driven connection is closed by now; one a fault seam left open undriven is closed here.
        for connection in openedConnections { await connection.disconnect(code: .normalClosure, reason: "done") }
    }

    /// Connects, drives, and reconnects after unintended drops until the actor is done. The lifecycle decides
    /// every connect, backoff and give-up; this loop performs its actions and records what happened.
    private mutating func connectUntilDone() async {
        var downSince: LoopClock.Instant?
        // Stopped before it ran (the end of the run or a ramp-down overtook its start): it never connects.
        if latch.isStopped(id) && plan.faults.reconnect?.connectsThoughStoppedBeforeStart() != true {
            history.note("stopped before connecting")
            return
        }
        var action = advance(.start)
        while true {
            switch action {
            case .connect(let attempt):
                action = await connectAndDrive(attempt: attempt, downSince: &downSince)
            case .wait(let delay, _):
                action = await backOff(delay)
            case .giveUp:
                recorder.recordError(EngineErrorCode.reconnectGaveUp)
                return
            case .close, .none:
                return  // ended: stopped, finished, or (without a reconnect policy) down for good
            }
        }
    }

    /// Feeds `event` to the lifecycle at the loop clock's instant.
    private mutating func advance(_ event: ConnectionLifecycle.Event) -> ConnectionLifecycle.Action {
        lifecycle.handle(event, at: startedAt.duration(to: clock.now), using: &random)
    }

    /// The scenario's reconnect policy as the lifecycle applies it (a fault seam may change its maximum; the
    /// checker holds the scenario's own).
    private static func lifecyclePolicy(_ plan: ScenarioPlan) -> ReconnectPolicy? {
        var policy = plan.websocket.reconnect
        if let faults = plan.faults.reconnect, let maximum = policy?.maximumAttempts {
            policy?.maximumAttempts = faults.maximumAttempts(allowing: maximum)
        }
        return policy
    }

    /// The lifecycle starts over, forgetting its past: how a fault seam makes the actor connect when it must not.
    private mutating func forgetLifecycle() -> ConnectionLifecycle.Action {
        lifecycle = ConnectionLifecycle(policy: Self.lifecyclePolicy(plan))
        return advance(.start)
    }

    /// What an attempt to open a connection came to.
    private enum Opening {
        /// Open and checked: drive it.
        case opened(WebSocketManager)
        /// Not to be driven (the connect failed, or a fault seam left it undriven): the lifecycle's next action.
        case ended(ConnectionLifecycle.Action)
    }

    /// Connect attempt `attempt`; on success drives the connection until it ends. Returns the lifecycle's next action.
    ///
    /// Opening, driving and accounting for the end are three functions, none inlined here: a task keeps every slab
    /// its deepest frames ever needed, and the opening and closing frames are large (about 6 KB together, measured
    /// with heaptrack), so they must not sit under the frames that wait out the connection's whole life. Kept apart,
    /// the driving frames reuse the slab the opening frame left behind.
    private mutating func connectAndDrive(attempt: Int, downSince: inout LoopClock.Instant?) async -> ConnectionLifecycle.Action {
        switch await open(attempt: attempt, downSince: &downSince) {
        case .ended(let action):
            return action
        case .opened(let manager):
            recorder.liveConnections += 1
            let ending = await drive(manager)
            recorder.liveConnections -= 1
            return await accountForEnd(of: manager, ending: ending, downSince: &downSince)
        }
    }

    /// Connect attempt `attempt`: the connect, the handshake checks and the handshake's figures.
    ///
    /// Its one await is the handshake, whose child task also reads what the checks need from the manager: every
    /// value this frame holds across an await is held by the connection's task slab for the connection's life.
    @inline(never)
    private mutating func open(attempt: Int, downSince: inout LoopClock.Instant?) async -> Opening {
        guard let manager = makeManager(attempt: attempt, isReconnect: downSince != nil) else { return .ended(.none) }
        let outcome = await Self.connect(manager, besides: openedConnections, on: loop)
        return opened(manager, outcome, downSince: &downSince)
    }

    /// What the connect attempt came to: its checks and figures, out of line, so that their values (the checks'
    /// messages, the figures) are not in the async frame of ``open(attempt:downSince:)`` (a task keeps the slab
    /// its deepest frames needed).
    @inline(never)
    private mutating func opened(_ manager: WebSocketManager, _ outcome: HandshakeOutcome,
                                 downSince: inout LoopClock.Instant?) -> Opening {
        if let error = outcome.error {
            recorder.recordError(error.code)
            history.note("connect failed: \(error.code.rawValue)")
            if downSince == nil { downSince = clock.now }
            return .ended(advance(.connectFailed))
        }
        let timings = outcome.timings
        ledger.check(.connectedAfterHandshake, outcome.isOpen && timings != nil && outcome.connectedAt != nil,
                     actor: history, "connect() returned without an open, timed handshake")
        if let timings, let connectedAt = outcome.connectedAt {
            ledger.check(.connectedAfterHandshake, connectedAt >= timings.completedAt, actor: history,
                         "connected \(formatDuration(connectedAt.duration(to: timings.completedAt))) before the 101 was validated")
        }
        openedConnections = outcome.live
        ledger.check(.oneLiveConnection, outcome.live.count == 1, actor: history, "\(outcome.live.count) live connections")
        history.note("connected")
        openedCount += 1
        let faults = plan.faults.reconnect
        if faults?.connectsAgain(afterOpening: openedCount) == true {
            return .ended(forgetLifecycle())  // a fault: this connection stays open, undriven, until the actor ends
        }
        hasConnectedSinceBackoff = true
        if let timings {
            recorder.connect.record(microseconds: timings.tcpConnect)
            if let tls = timings.tlsHandshake { recorder.tlsHandshake.record(microseconds: tls) }
            recorder.upgrade.record(microseconds: timings.upgrade)
        }
        if let since = downSince { recorder.reconnectRecovery.record(microseconds: since.duration(to: clock.now)) }
        downSince = nil
        previousBackoff = nil
        reconnectsSinceSuccess = 0
        // A fault seam may hide the success from the lifecycle, so its attempts run on.
        if faults?.tellsLifecycleOfSuccess() ?? true { _ = advance(.connected) }
        recorder.connectionsOpened += 1
        return .opened(manager)
    }

    /// The checks and counts before connect attempt `attempt`, and its manager; nil when a flow's handshake template
    /// names a value the client lacks (no connect then).
    private mutating func makeManager(attempt: Int, isReconnect: Bool) -> WebSocketManager? {
        if isReconnect { reconnectsSinceSuccess += 1 }
        ledger.checkConnectAttempt(isStopped: latch.isStopped(id), reconnect: isReconnect ? reconnectsSinceSuccess : nil,
                                   maximumAttempts: plan.websocket.reconnect?.maximumAttempts, actor: history)
        let manager: WebSocketManager
        if let flow = plan.flow, let flowState {
            var url = plan.url
            var configuration = plan.configuration
            guard flowHandshake(flow, state: flowState, url: &url, configuration: &configuration) else { return nil }
            manager = WebSocketManager(url: url, configuration: configuration, loop: loop)
        } else {
            manager = WebSocketManager(url: plan.url, sharedConfiguration: plan.sharedConfiguration, loop: loop)
        }
        recorder.connectAttempts += 1
        if isReconnect {
            recorder.reconnects += 1
            recorder.reconnectsByTick[LoopRecorder.tick(clock.now), default: 0] += 1
        }
        history.note(attempt == 0 ? "connect" : "reconnect attempt \(attempt)")
        return manager
    }

    /// A driven connection has ended: its close outcome, the checks on it, and the lifecycle's next action.
    @inline(never)
    private mutating func accountForEnd(
        of manager: WebSocketManager, ending: Ending, downSince: inout LoopClock.Instant?
    ) async -> ConnectionLifecycle.Action {
        _ = await pruneClosedConnections()
        let closeCode = await manager.closeCode
        let closeReason = await manager.closeReason
        if let closeCode { recorder.disconnects[closeCode.rawValue, default: 0] += 1 }
        ledger.check(.closeAccounted, closeCode.map { $0 != .abnormalClosure || !(closeReason ?? "").isEmpty } ?? false,
                     actor: history, closeCode == nil ? "the connection ended without a close outcome"
                         : "closed 1006 without a reason")
        if closeCode != nil {
            // The pull-mode counterpart of "no event after `.disconnected`": a read after the end must fail.
            let lateMessage = try? await manager.receive()
            ledger.check(.nothingAfterDisconnect, lateMessage == nil, actor: history,
                         "a message was delivered after the connection ended")
        }
        history.note("disconnected \(closeCode.map { String($0.rawValue) } ?? "-") (\(ending))")
        let faults = plan.faults.reconnect
        if ending == .stopped, faults?.connectsAgainAfterStop(earlier: connectsAfterStop) == true {
            connectsAfterStop += 1
            return forgetLifecycle()  // a fault: connect again after the run stopped this actor
        }
        if ending == .dropped {
            downSince = clock.now
            recorder.dropsByTick[LoopRecorder.tick(clock.now), default: 0] += 1
        }
        return endConnection(ending)
    }

    /// Tells the lifecycle how the connection ended; returns its next action.
    private mutating func endConnection(_ ending: Ending) -> ConnectionLifecycle.Action {
        switch ending {
        case .stopped: _ = advance(.stopRequested)  // drive closed it gracefully already
        case .finished: _ = advance(.finished)
        case .dropped: break
        case .reconnectRequested:
            // Intentional: the lifecycle sees this connection finish, and a fresh one starts (no backoff, no
            // reconnect count), unless the run stopped the actor meanwhile.
            _ = advance(.finished)
            return latch.isStopped(id) ? .none : forgetLifecycle()
        }
        switch lifecycle.state {
        case .open: return advance(.dropped)
        case .draining: return advance(.closeFinished)
        case .connecting: return advance(.connectFailed)  // the success was hidden from it (a fault)
        case .idle, .closed, .backingOff, .stopped: return .none
        }
    }

    /// Forgets the connections that have closed; returns how many are still live.
    private mutating func pruneClosedConnections() async -> Int {
        var live: [WebSocketManager] = []
        for connection in openedConnections {
            if await connection.state != .closed { live.append(connection) }
        }
        openedConnections = live
        return live.count
    }

    /// What a connect attempt came to, as the handshake's child task read it from the manager.
    private struct HandshakeOutcome: Sendable {
        var error: WebSocketClientError?
        var isOpen = false
        var timings: WebSocketManager.HandshakeTimings?
        var connectedAt: LoopClock.Instant?
        /// The actor's connections not closed: those opened before (`besides`), then this one once it opened.
        var live: [WebSocketManager] = []
    }

    /// Connects in a short-lived child task. A task's allocator keeps the slabs its deepest frames needed
    /// until the task ends; the handshake's frames are deep, and the connection's own task lives for
    /// hours, so the handshake runs in a task of its own and gives its memory back. The child also reads what
    /// ``open(attempt:downSince:)`` checks, so the opening frame holds nothing across a hop to the manager.
    private static func connect(
        _ manager: WebSocketManager, besides earlier: [WebSocketManager], on loop: EventLoop
    ) async -> HandshakeOutcome {
        await withTaskGroup(of: HandshakeOutcome.self) { group in
            group.addTask(executorPreference: loop.taskExecutor) {
                var outcome = HandshakeOutcome()
                do throws(WebSocketClientError) {
                    try await manager.connect()
                } catch {
                    outcome.error = error
                    return outcome
                }
                outcome.isOpen = await manager.state == .open
                outcome.timings = await manager.handshakeTimings
                outcome.connectedAt = await manager.connectedAt
                for connection in earlier + [manager] where await connection.state != .closed {
                    outcome.live.append(connection)
                }
                return outcome
            }
            return await group.next()!
        }
    }

    /// Waits the backoff the lifecycle drew (or less, if stopped meanwhile); returns the lifecycle's next action.
    private mutating func backOff(_ drawn: Duration) async -> ConnectionLifecycle.Action {
        guard let transition = lifecycle.lastTransition, let policy = plan.websocket.reconnect else {
            return advance(.stopRequested)  // unreachable: a wait follows a backoff drawn from the scenario's policy
        }
        let faults = plan.faults.reconnect
        let delay = faults?.backoff(drawn: drawn) ?? drawn
        ledger.checkBackoff(transition, waiting: delay, policy: policy, previousDelay: previousBackoff,
                            isFirstAfterSuccess: hasConnectedSinceBackoff, actor: history)
        hasConnectedSinceBackoff = false
        history.note("backoff \(formatDuration(delay)) before attempt \(transition.attempt)")
        previousBackoff = delay
        // A wake left over from the connection (a flow's reader that ended, say) must not cut the backoff short:
        // the delay is the lifecycle's, to the nanosecond.
        latch.discardPendingWake(id)
        let started = clock.now
        let deadline = started.advanced(by: faults?.wait(forBackoff: delay) ?? delay)
        while !latch.isStopped(id) && clock.now < deadline { await waitForLatch(until: deadline) }
        if latch.isStopped(id) { return advance(.stopRequested) }
        ledger.checkBackoffWaited(started.duration(to: clock.now), of: delay, actor: history)
        return advance(.backoffElapsed)
    }

    /// Waits until this connection is stopped or woken, or `deadline` passes (a loop timer wakes it). Mutating though
    /// it changes nothing: called from mutating methods, a non-mutating async method costs a copy of `self` in the
    /// caller's frame (docs/ARCHITECTURE.md, "Memory"); so is ``driveFlow(_:)``.
    private mutating func waitForLatch(until deadline: LoopClock.Instant) async {
        guard clock.now < deadline else { return }
        let latch = self.latch
        let id = self.id
        let timer = LoopTimer(on: loop) { latch.wake(id) }
        timer.schedule(at: deadline)
        await latch.wait(id)
        timer.cancel()
    }

    /// Runs the pattern on an open connection until it ends, in this task: it reads, while the loop's timers ping,
    /// pace the sends and, when the run stops this client, queue the close (``ConnectionRun``). One task per
    /// connection: an idle connection holds this task's frames and nothing else that waits.
    @inline(never)
    private mutating func drive(_ manager: WebSocketManager) async -> Ending {
        if plan.flow != nil && flowState != nil { return await driveFlow(manager) }
        let connection = makeRun(manager)
        let ending = await connection.run(manager)
        if await manager.state != .closed { await manager.disconnect(code: .normalClosure, reason: "done") }
        return latch.isStopped(id) ? .stopped : ending
    }

    /// The pattern's run on `manager`; built out of line, so that none of its construction is in ``drive(_:)``'s frame.
    @inline(never)
    private mutating func makeRun(_ manager: WebSocketManager) -> ConnectionRun {
        ConnectionRun(id: id, plan: plan, manager: manager, recorder: recorder, latch: latch, random: random.split(),
                      loop: loop, ledger: ledger, history: history)
    }
}

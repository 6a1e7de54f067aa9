import Clients
import Crypto
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
    let configuration: WebSocketClientConfiguration
    /// Printable filler the messages are cut from (text-safe, so one buffer serves both formats).
    let filler: [UInt8]
    /// For download and upload scenarios.
    let transfer: TransferPlan?
    /// How long a stopped client may take to end (the profile's `gracefulStop`).
    let stopBound: Duration

    init(index: Int, scenario: Scenario, url: WebSocketURL, configuration: WebSocketClientConfiguration, filler: [UInt8],
         transfer: TransferPlan? = nil, stopBound: Duration) {
        self.stopBound = stopBound
        self.index = index
        self.scenario = scenario
        websocket = scenario.websocket
        self.url = url
        self.configuration = configuration
        self.filler = filler
        self.transfer = transfer
    }
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
    let faults: FaultSwitches
    var random: SeededRandomNumberGenerator
    let clock = LoopClock()
    /// Created when the actor starts (on its loop).
    private var history: ActorHistory!
    private var hasConnectedSinceBackoff = false
    /// This actor's connections that have opened and were not yet seen closed: the one-live-connection
    /// checker counts them by their own state, not by how this loop means to use them.
    private var openedConnections: [WebSocketManager] = []
    /// The `connectWhileLive` fault's first connection, left open until the actor ends.
    private var strayConnection: WebSocketManager?

    init(
        id: Int, plan: ScenarioPlan, loop: EventLoop, recorder: LoopRecorder, latch: StopLatch, ledger: InvariantLedger,
        faults: FaultSwitches, random: SeededRandomNumberGenerator
    ) {
        self.id = id
        self.plan = plan
        self.loop = loop
        self.recorder = recorder
        self.latch = latch
        self.ledger = ledger
        self.faults = faults
        self.random = random
    }

    enum Ending { case stopped, finished, dropped }

    mutating func run() async {
        history = ActorHistory(id: id, scenario: plan.scenario.name, start: clock.now)
        defer {
            recorder.recordEnd(of: id, latch: latch, ledger: ledger, history: history, bound: plan.stopBound)
            latch.remove(id)
        }
        await connectUntilDone()
        if let stray = strayConnection { await stray.disconnect(code: .normalClosure, reason: "done") }
    }

    /// Connects, drives, and reconnects after unintended drops until the actor is done.
    private mutating func connectUntilDone() async {
        var attempt = 0
        /// Reconnect attempts seen since the last successful connection (counted where they are made,
        /// apart from the `attempt` the policy is asked about).
        var reconnectsSinceSuccess = 0
        var previousDelay: Duration?
        var downSince: LoopClock.Instant?
        var isFaultSpent = false
        while !latch.isStopped(id) || (faults.reconnectAfterIntentionalDisconnect && !isFaultSpent) {
            if latch.isStopped(id) { isFaultSpent = true }
            ledger.check(.noReconnectAfterIntentional, !latch.isStopped(id), actor: history,
                         "connect attempt after the run stopped this actor")
            let manager = WebSocketManager(url: plan.url, configuration: plan.configuration, loop: loop)
            recorder.connectAttempts += 1
            if downSince != nil {
                recorder.reconnects += 1
                recorder.reconnectsByTick[LoopRecorder.tick(clock.now), default: 0] += 1
                reconnectsSinceSuccess += 1
                if let maximum = plan.websocket.reconnect?.maximumAttempts {
                    ledger.check(.maximumAttempts, reconnectsSinceSuccess <= maximum, actor: history,
                                 "reconnect attempt \(reconnectsSinceSuccess) since the last success, of at most \(maximum)")
                }
            }
            history.note(attempt == 0 ? "connect" : "reconnect attempt \(attempt)")
            if let error = await Self.connect(manager, on: loop) {
                recorder.recordError(error.code)
                history.note("connect failed: \(error.code.rawValue)")
                if downSince == nil { downSince = clock.now }
                guard await backOff(attempt: &attempt, previousDelay: &previousDelay) else { return }
                continue
            }
            let isOpen = await manager.state == .open
            let timings = await manager.handshakeTimings
            let connectedAt = await manager.connectedAt
            ledger.check(.connectedAfterHandshake, isOpen && timings != nil && connectedAt != nil, actor: history,
                         "connect() returned without an open, timed handshake")
            if let timings, let connectedAt {
                ledger.check(.connectedAfterHandshake, connectedAt >= timings.completedAt, actor: history,
                             "connected \(formatDuration(connectedAt.duration(to: timings.completedAt))) before the 101 was validated")
            }
            openedConnections.append(manager)
            let live = await pruneClosedConnections()
            ledger.check(.oneLiveConnection, live == 1, actor: history, "\(live) live connections")
            history.note("connected")
            if faults.connectWhileLive && strayConnection == nil {
                strayConnection = manager  // the fault: connect again while this connection stays open
                continue
            }
            hasConnectedSinceBackoff = true
            if let timings {
                recorder.connect.record(microseconds: timings.tcpConnect)
                if let tls = timings.tlsHandshake { recorder.tlsHandshake.record(microseconds: tls) }
                recorder.upgrade.record(microseconds: timings.upgrade)
            }
            if let since = downSince { recorder.reconnectRecovery.record(microseconds: since.duration(to: clock.now)) }
            downSince = nil
            reconnectsSinceSuccess = 0
            if !faults.keepAttemptsAfterSuccess { attempt = 0 }
            previousDelay = nil
            recorder.connectionsOpened += 1
            recorder.liveConnections += 1
            let ending = await drive(manager)
            recorder.liveConnections -= 1
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
            if ending == .stopped && faults.reconnectAfterIntentionalDisconnect && !isFaultSpent { continue }
            guard ending == .dropped else { return }
            downSince = clock.now
            recorder.dropsByTick[LoopRecorder.tick(clock.now), default: 0] += 1
            guard await backOff(attempt: &attempt, previousDelay: &previousDelay) else { return }
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

    /// Connects in a short-lived child task. A task's allocator keeps the slabs its deepest frames needed
    /// until the task ends; the handshake's frames are deep, and the connection's own task lives for
    /// hours, so the handshake runs in a task of its own and gives its memory back.
    private static func connect(_ manager: WebSocketManager, on loop: EventLoop) async -> WebSocketClientError? {
        await withTaskGroup(of: WebSocketClientError?.self) { group in
            group.addTask(executorPreference: loop.taskExecutor) {
                do throws(WebSocketClientError) {
                    try await manager.connect()
                    return nil
                } catch {
                    return error
                }
            }
            return await group.next()!
        }
    }

    /// Waits the policy's next delay (or less, if stopped meanwhile); false when there is no next attempt.
    private mutating func backOff(attempt: inout Int, previousDelay: inout Duration?) async -> Bool {
        // The `attemptBeyondMaximum` fault asks the policy about the attempt before the next one.
        let next = faults.attemptBeyondMaximum ? attempt : attempt + 1
        guard let policy = plan.websocket.reconnect, policy.allows(attempt: next) else {
            if plan.websocket.reconnect != nil { recorder.recordError(EngineErrorCode.reconnectGaveUp) }
            return false
        }
        attempt += 1
        if hasConnectedSinceBackoff {
            ledger.check(.attemptsReset, attempt == 1, actor: history, "first reconnect after a success is attempt \(attempt)")
            hasConnectedSinceBackoff = false
        }
        let bounds = policy.bounds(attempt: attempt, previousDelay: previousDelay)
        var delay = policy.delay(attempt: attempt, previousDelay: previousDelay, using: &random)
        if faults.truncateBackoffToWholeSeconds { delay = .seconds(delay.components.seconds) }
        ledger.check(.reconnectDelay, bounds.contains(delay), actor: history,
                     "delay \(formatDuration(delay)) outside \(formatDuration(bounds.lowerBound))–\(formatDuration(bounds.upperBound)) for attempt \(attempt)")
        history.note("backoff \(formatDuration(delay)) before attempt \(attempt)")
        previousDelay = delay
        // A wake left over from the connection (a ping timer that fired as the reader ended) must not cut
        // the backoff short: the delay is the policy's, to the nanosecond.
        latch.discardPendingWake(id)
        let started = clock.now
        let deadline = started.advanced(by: faults.cutBackoffShort ? delay / 2 : delay)
        while !latch.isStopped(id) && clock.now < deadline { await waitForLatch(until: deadline) }
        if !latch.isStopped(id) {
            let waited = started.duration(to: clock.now)
            ledger.check(.reconnectDelay, waited >= delay - .milliseconds(1), actor: history,
                         "waited \(formatDuration(waited)) of a \(formatDuration(delay)) backoff")
        }
        return !latch.isStopped(id)
    }

    /// Waits until this connection is stopped or woken, or `deadline` passes.
    private func waitForLatch(until deadline: LoopClock.Instant?) async {
        guard let deadline else { return await latch.wait(id) }
        let delay = clock.now.duration(to: deadline)
        guard delay > .zero else { return }
        let latch = self.latch
        let id = self.id
        let timer = ScheduledTimer(on: loop, after: delay) { latch.wake(id) }
        await latch.wait(id)
        timer.cancel()
    }

    /// Runs the pattern on an open connection until it ends; closes it gracefully when stopped.
    private mutating func drive(_ manager: WebSocketManager) async -> Ending {
        let connection = ConnectionRun(
            id: id, plan: plan, recorder: recorder, latch: latch, random: random.split(), loop: loop, ledger: ledger,
            history: history, faults: faults)
        let latch = self.latch
        let id = self.id
        let loop = self.loop
        let bodyEnding = await withTaskGroup(of: Ending?.self) { group -> Ending in
            group.addTask(executorPreference: loop.taskExecutor) {
                let ending = await connection.runPattern(manager)
                latch.wake(id)
                return ending
            }
            if plan.websocket.pattern == .echo || plan.websocket.pattern == .typed {
                switch plan.websocket.schedule {
                case .open(let rate):
                    group.addTask(executorPreference: loop.taskExecutor) {
                        await connection.sendOnSchedule(manager, rate: rate)
                        return nil
                    }
                case .closed(let think) where think > .zero:
                    group.addTask(executorPreference: loop.taskExecutor) {
                        await connection.sendWithThinkTime(manager, think: think)
                        return nil
                    }
                case .closed:
                    break  // the reader sends too
                }
            }
            // This task waits for the stop or the reader's end, pinging when a ping is due (one task fewer per
            // connection than a separate pinger: idle connections are what memory is spent on).
            let interval = plan.websocket.pingInterval
            var nextPing = interval.map { clock.now.advanced(by: $0) }
            while true {
                await waitForLatch(until: nextPing)
                if latch.isStopped(id) || connection.hasReaderEnded { break }
                if let due = nextPing, let interval, clock.now >= due {
                    await connection.ping(manager)
                    nextPing = clock.now.advanced(by: interval)
                }
            }
            if latch.isStopped(id) {
                // Graceful: no new requests (the senders see the stop), the replies in flight arrive, then the
                // closing handshake. gracefulStop bounds it all: past it the run cancels, which ends the reader.
                await connection.waitUntilAnswered(manager)
                await manager.beginClosing(code: .normalClosure, reason: "run stopped")
            }
            var ending = Ending.dropped
            while let result = await group.next() {
                guard let result else { continue }
                ending = result
                group.cancelAll()  // the sender ends with the reader
            }
            return ending
        }
        if await manager.state != .closed { await manager.disconnect(code: .normalClosure, reason: "done") }
        return latch.isStopped(id) ? .stopped : bodyEnding
    }
}

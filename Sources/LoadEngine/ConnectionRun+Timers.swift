import Clients
import Runtime
import WebSocket

/// What falls due on a clock while the connection's one task reads: pings and their pong deadlines, the open model's
/// timetable, the think time between closed-model requests, and the run's stop. Each is a ``LoopTimer`` (or the
/// latch's stop hook) whose callback runs on the loop thread, enters the manager's isolation (`isolatedCallback`: the
/// check `assumeIsolated` makes, without its two allocations per call), and writes without waiting
/// (`…WithoutWaiting`): no task, no libuv timer and no continuation per deadline.
extension ConnectionRun {
    /// Arms what the scenario needs as the connection starts: the first ping, the first request of a paced sender,
    /// and the stop hook (run at once when the run stopped this client already).
    func startTimers(_ manager: isolated WebSocketManager) {
        if let interval = plan.websocket.pingInterval {
            pingTimer = LoopTimer(on: loop, manager.isolatedCallback { [unowned self] in self.pingDue($0) })
            pongDeadline = LoopTimer(on: loop, manager.isolatedCallback { [unowned self] in self.pongOverdue($0) })
            manager.pongObserver = { [unowned self] id, roundTrip in self.didReceivePong(id: id, roundTrip: roundTrip) }
            pingTimer?.schedule(after: interval)
        }
        if plan.websocket.pattern == .echo || plan.websocket.pattern == .typed {
            switch plan.websocket.schedule {
            case .open(let rate):
                slotInterval = UInt64(max(1, (1e9 / rate).rounded()))
                nextSlot = clock.now.nanoseconds + UInt64.random(in: 0..<slotInterval, using: &random)
                isPacing = true
                sendTimer = LoopTimer(on: loop, manager.isolatedCallback { [unowned self] in self.slotsDue($0) })
                sendTimer?.schedule(at: LoopClock.Instant(nanoseconds: nextSlot))
            case .closed(let think) where think > .zero:
                isPacing = true
                sendTimer = LoopTimer(on: loop, manager.isolatedCallback { [unowned self] in self.thinkOver($0) })
                thinkOver(manager)  // the first request goes at once
            case .closed:
                break  // the reader sends too
            }
        }
        latch.onStop(id, manager.isolatedCallback { [unowned self] in self.stopRequested($0) })
        if isStopping { stopRequested(manager) }
    }

    // MARK: The stop and the close

    /// The run stopped this client: no new requests or pings; the open model counts the slots it never reached;
    /// the close goes out once the requests in flight are answered (gracefulStop bounds the wait: past it the run
    /// cancels, which ends the reader).
    func stopRequested(_ manager: isolated WebSocketManager) {
        guard !isStopHandled, !isReaderDone else { return }
        isStopHandled = true
        pingTimer?.cancel()
        if isPacing {
            isPacing = false
            sendTimer?.cancel()
            // Slots due before the stop that a lagging sender never reached are part of the schedule too: the
            // delivered fraction must show them as missed, not pretend they were never due.
            if case .open = plan.websocket.schedule, let stop = latch.stopInstant(id), nextSlot < stop {
                let missed = (stop - nextSlot + slotInterval - 1) / slotInterval
                recorder.messagesScheduled += missed
                recorder.messagesMissed += missed
            }
        }
        closeOnceAnswered(manager, reason: "run stopped")
    }

    /// Starts the closing handshake now if no request is unanswered, else as the last reply arrives.
    func closeOnceAnswered(_ manager: isolated WebSocketManager, reason: String) {
        if outstanding == 0 {
            manager.beginClosingWithoutWaiting(code: .normalClosure, reason: reason)
        } else {
            closeReasonOnceAnswered = reason
        }
    }

    /// A request was answered (or its write failed): the close that waited for it, or the next think time.
    func didAnswer(_ manager: isolated WebSocketManager) {
        guard outstanding == 0, !isReaderDone else { return }
        if let reason = closeReasonOnceAnswered {
            closeReasonOnceAnswered = nil
            manager.beginClosingWithoutWaiting(code: .normalClosure, reason: reason)
        } else if isPacing, case .closed(let think) = plan.websocket.schedule {
            sendTimer?.schedule(after: think)
        }
    }

    // MARK: Paced requests

    /// Open model: every slot due by now — late ones go out at once and are measured from when they were due; past
    /// ``maximumOutstanding`` unanswered a slot is dropped (and counted) — then the timer for the next.
    func slotsDue(_ manager: isolated WebSocketManager) {
        guard isPacing else { return }
        let now = clock.now.nanoseconds
        while nextSlot <= now && !isStopping && !isBudgetSpent {
            recorder.messagesScheduled += 1
            if outstanding >= Self.maximumOutstanding {
                recorder.messagesDropped += 1  // no sequence number spent: a drop is not a loss
            } else {
                do {
                    try sendWithoutWaiting(manager, intended: nextSlot)
                } catch {
                    isPacing = false  // the connection is ending: the reader records how
                    return
                }
            }
            nextSlot += slotInterval
        }
        guard !isStopping else { return }  // the stop hook accounts for the rest
        if isBudgetSpent {
            isPacing = false
            closeOnceAnswered(manager, reason: "done")  // a spent budget ends the connection once the replies are in
            return
        }
        sendTimer?.schedule(at: LoopClock.Instant(nanoseconds: nextSlot))
    }

    /// Closed model with think time: the think time after a reply is over (or the connection just opened): the next
    /// request, whose reply arms the next think time (``didAnswer(_:)``); a spent budget closes instead.
    func thinkOver(_ manager: isolated WebSocketManager) {
        guard isPacing, !isStopping else { return }
        if isBudgetSpent {
            isPacing = false
            closeOnceAnswered(manager, reason: "done")
            return
        }
        do {
            try sendWithoutWaiting(manager, intended: clock.now.nanoseconds)
        } catch {
            isPacing = false
            return
        }
        if outstanding == 0 { didAnswer(manager) }  // nothing was written (a test's fault): think, then go on
    }

    // MARK: Pings

    /// A ping is due: sent with its pong deadline armed; the pong arms the next ping.
    func pingDue(_ manager: isolated WebSocketManager) {
        guard !isStopping, !isReaderDone, let id = manager.sendPingWithoutWaiting() else { return }
        pendingPing = id
        pongDeadline?.schedule(after: plan.websocket.pingTimeout)
    }

    /// A pong arrived (read by this connection's task): its round trip; the next ping `pingInterval` from now.
    func didReceivePong(id: UInt64, roundTrip: Duration) {
        guard id == pendingPing else { return }
        pendingPing = nil
        pongDeadline?.cancel()
        recorder.pingRoundTrip.record(microseconds: roundTrip)
        if let interval = plan.websocket.pingInterval, !isStopping, !isReaderDone { pingTimer?.schedule(after: interval) }
    }

    /// No pong within the scenario's `pingTimeout`: counts a `pong_timeout` and drops the connection (its reader then
    /// ends with 1006).
    func pongOverdue(_ manager: isolated WebSocketManager) {
        guard pendingPing != nil, manager.state == .open else { return }
        pendingPing = nil
        recorder.recordError(WebSocketClientError.Code.pongTimeout)
        manager.abort(reason: "no pong within \(plan.websocket.pingTimeout)")
    }
}

import Clients
import Flow
import JSON
import Profile
import Runtime
import WebSocket

/// An inbound message waiting in a flow connection's inbox, with the instant it arrived.
struct FlowItem {
    var message: ParsedMessage
    var arrival: LoopClock.Instant
    var byteCount: Int
    /// socketio: the event this frame carries (its name, and its arguments without the name).
    var event: (name: String, arguments: JSONValue)?
}

/// What a flow wait takes from the reader.
enum FlowWant {
    /// An `expect`: a message.
    case message(FlowExpectation)
    /// A socketio `on`: an event by name.
    case event(SocketIOOn)
    /// A socketio `emit` with `ack`: the ack of this id.
    case ack(UInt64, SocketIOEmit)
    /// The preset's handshake (socketio namespace connect, graphql-ws `connection_ack`).
    case handshake
    /// graphql-ws: an event of the operation with this id.
    case operation(String)
}

/// How a flow's wait (an expect, a think, a paced loop's next start) ended. Every wait ends exactly once.
enum WaitOutcome {
    /// An expect's message arrived: when, and the captures it made.
    case matched(LoopClock.Instant, [(variable: String, value: JSONValue)])
    /// The step failed with this code (timeout, skip limit, missing capture).
    case failed(EngineErrorCode)
    /// A think or a pacing wait reached its deadline.
    case elapsed
    /// The run stopped the connection (never counted as a timeout).
    case stopped
    /// The connection ended.
    case closed
}

/// What an expect makes of one message.
private enum Verdict {
    case take([(variable: String, value: JSONValue)])
    case skip
    case fail(EngineErrorCode)
}

// The reader, the inbox and the one wait in progress. Messages are buffered in arrival order, so several arriving
// at once are each seen by the expect they belong to (the capture bug of artillery#3476 cannot happen here).
extension FlowRun {
    /// Reads every message until the connection ends; each goes to the waiting expect or into the inbox. A raw flow's
    /// messages are offered where they are read (``WebSocketManager/receiveEach(_:)``: the reader's task stays parked,
    /// and only the step that waited is woken); a preset's frames may need a reply written, so its reader reads them.
    func read(_ manager: isolated WebSocketManager) async -> VirtualUser.Ending {
        defer { readerEnded() }
        do throws(WebSocketClientError) {
            if flow.scenario.preset == .raw {
                try await manager.receiveEach { _, message throws(WebSocketClientError) in
                    self.offer(self.arrived(message))
                    return true
                }
            }
            while true {
                let item = arrived(try await manager.receive())
                switch flow.scenario.preset {
                case .socketio: await socketIOFrame(manager, item)
                case .graphqlWS: await graphQLFrame(manager, item)
                case .raw: offer(item)
                }
            }
        } catch {
            if isStopRequested || latch.isStopped(id) { return .stopped }
            if error.code != .notConnected { recorder.recordError(error.code) }
            return isClosingOnPurpose ? .finished : .dropped
        }
    }

    /// A message read: counted, and made the inbox's item.
    private func arrived(_ message: WebSocketConnection.Message) -> FlowItem {
        recorder.messagesReceived += 1
        recorder.bytesReceived += UInt64(message.byteCount)
        let flowMessage: FlowMessage = switch message {
        case .text(let text): .text(text)
        case .binary(let bytes): .binary(bytes)
        }
        return FlowItem(message: ParsedMessage(flowMessage), arrival: clock.now, byteCount: message.byteCount)
    }

    /// A message arrived: a waiting expect sees it at once (no second scan when it matches); otherwise it waits
    /// in the inbox.
    func offer(_ item: FlowItem) {
        guard let want, inboxHead == inbox.count, let verdictWant = want.takesItems else { return enqueue(item) }
        var item = item
        switch judge(&item, verdictWant) {
        case .take(let captures): resolve(.matched(item.arrival, captures), serial: waitSerial)
        case .fail(let code): resolve(.failed(code), serial: waitSerial)
        case .skip: break
        }
    }

    func enqueue(_ item: FlowItem) {
        if inbox.count - inboxHead >= Self.inboxCapacity || inboxBytes + item.byteCount > Self.inboxByteCapacity,
            inboxHead < inbox.count {
            var oldest = dequeue()  // past the bound the oldest go, counted as pushed
            countPushed(&oldest.message, event: oldest.event?.name)
        }
        inbox.append(item)
        inboxBytes += item.byteCount
    }

    private func dequeue() -> FlowItem {
        let item = inbox[inboxHead]
        inboxHead += 1
        inboxBytes -= item.byteCount
        if inboxHead == inbox.count {
            inbox.removeAll(keepingCapacity: true)
            inboxHead = 0
        } else if inboxHead >= 256 && inboxHead * 2 >= inbox.count {
            inbox.removeFirst(inboxHead)
            inboxHead = 0
        }
        return item
    }

    /// A message no expect takes: counted under its `classify` type.
    func countPushed(_ message: inout ParsedMessage, event: String? = nil) {
        if let event, flow.scenario.classify.isEmpty {
            recorder.countPushedEvent(event)
            return
        }
        var scope = state
        recorder.flowPushed[flow.pushedSlot(&message, scope: &scope)] &+= 1
    }

    /// Whether `expectation` takes the message, skips it (counted `flow.skipped` and classified), or fails.
    private func judge(_ item: inout FlowItem, _ want: FlowWant) -> Verdict {
        ledger.check(.flowNothingAfterClose, !isReaderDone, actor: history,
                     "a message was handed to a step after the connection closed")
        var scope = state
        let expectation: FlowExpectation
        let outcome: MatchOutcome
        switch want {
        case .message(let wanted):
            expectation = wanted
            outcome = wanted.matcher.match(&item.message, captures: wanted.captures, scope: &scope)
        case .event(let on):
            expectation = on.expectation
            if let event = item.event, event.name == on.event {
                let conditions: [JSONCondition] = if case .json(let list) = on.expectation.matcher { list } else { [] }
                outcome = conditions.allHold(on: event.arguments, scope: &scope)
                    ? capture(on.expectation.captures, from: event.arguments) : .noMatch
            } else {
                outcome = .noMatch
            }
        case .ack, .handshake, .operation:
            return .skip  // answered by the reader directly, never from the inbox
        }
        switch outcome {
        case .matched(let captures):
            return .take(captures.map { ($0.variable, $0.value) })
        case .captureMissing:
            return .fail(.captureMissing)
        case .noMatch:
            recorder.flowSkipped &+= 1
            countPushed(&item.message, event: item.event?.name)
            waitSkipped += 1
            return waitSkipped > expectation.skipLimit ? .fail(.expectSkipLimit) : .skip
        }
    }

    /// An expect: the inbox first, from its front, then the messages as they arrive, until `within`.
    @inline(__always)
    func awaitMessage(_ manager: isolated WebSocketManager, _ want: FlowWant, within: Duration) async -> WaitOutcome {
        waitSkipped = 0
        let scansAfterClose = faults?.scansInboxAfterClose() == true
        while inboxHead < inbox.count && (!isReaderDone || scansAfterClose) {
            var item = dequeue()
            switch judge(&item, want) {
            case .take(let captures): return .matched(item.arrival, captures)
            case .fail(let code): return .failed(code)
            case .skip: continue
            }
        }
        if isReaderDone { return .closed }
        if isStopRequested || latch.isStopped(id) { return .stopped }
        return await wait(manager, until: clock.now.advanced(by: within), expecting: want,
                          onDeadline: .failed(.expectTimeout))
    }

    /// Waits until `deadline` (a think, a pacing wait); messages arriving meanwhile go to the inbox.
    @inline(__always)
    func pause(_ manager: isolated WebSocketManager, until deadline: LoopClock.Instant) async -> FlowControl {
        guard clock.now < deadline else { return .next }
        switch await wait(manager, until: deadline, expecting: nil, onDeadline: .elapsed) {
        case .stopped: return .stopped
        case .closed: return faults?.scansInboxAfterClose() == true ? .next : .dropped  // a fault runs on
        default: return .next
        }
    }

    /// The one wait primitive: suspends the interpreter until the deadline (a loop timer, no task), a matching
    /// message, the stop, or the connection's end — whichever comes first resolves it, exactly once.
    /// The deadline timer is lazy: one stays armed across waits, and a wait whose deadline is no earlier than the
    /// armed one's keeps it (when it fires early for this wait it re-arms for the rest), so an expect that matches
    /// in time costs no timer of its own.
    @inline(__always)
    func wait(_ manager: isolated WebSocketManager, until deadline: LoopClock.Instant,
              expecting expectation: FlowWant?, onDeadline: WaitOutcome) async -> WaitOutcome {
        if isReaderDone { return .closed }
        if isStopRequested || latch.isStopped(id) { return .stopped }
        waitSerial &+= 1
        let serial = waitSerial
        want = expectation
        waitDeadline = deadline
        waitOnDeadline = onDeadline
        if faults?.keepsExpectTimerAfterMatch() == true {
            // A test's fault: this wait's own timer stays armed after the wait and is let through when it fires.
            let timer = ScheduledTimer(on: loop, after: clock.now.duration(to: deadline)) { [self] in
                manager.assumeIsolated { _ in self.resolve(onDeadline, serial: serial) }
            }
            strandedTimers.append(timer)
            return await withUnsafeContinuation { continuation = $0 }
        }
        if deadlineTimer == nil || deadline < armedDeadline { armDeadline(manager, deadline) }
        // Every wait is resumed exactly once (``resolve(_:serial:)`` clears the continuation as it resumes it).
        return await withUnsafeContinuation { continuation = $0 }
    }

    /// Arms the connection's deadline timer for `deadline` (replacing one armed for later).
    private func armDeadline(_ manager: isolated WebSocketManager, _ deadline: LoopClock.Instant) {
        deadlineTimer?.cancel()
        armedDeadline = deadline
        deadlineTimer = ScheduledTimer(on: loop, after: clock.now.duration(to: deadline)) { [self] in
            // Timer callbacks run on the loop thread outside any job, where the manager's isolation can be assumed.
            manager.assumeIsolated { manager in
                let fired = self.armedDeadline
                self.deadlineTimer = nil
                // No wait, or a wait due later than this timer (it was armed for an earlier one): re-arm or rest.
                guard self.continuation != nil, !self.isInterpreterDone else { return }
                if fired < self.waitDeadline {
                    self.armDeadline(manager, self.waitDeadline)
                } else {
                    self.resolve(self.waitOnDeadline, serial: self.waitSerial)
                }
            }
        }
    }

    /// The interpreter has ended: the deadline timer goes with it.
    func disarmDeadline() {
        deadlineTimer?.cancel()
        deadlineTimer = nil
    }

    /// Ends the wait `serial` with `outcome`. The oracle's `flow.expect_resolved_once`: a wait is resolved while
    /// it waits, once — a second resolution (a stale timer after a match) is a violation and changes nothing.
    func resolve(_ outcome: WaitOutcome, serial: UInt64) {
        let isLive = continuation != nil && serial == waitSerial
        ledger.check(.flowExpectResolvedOnce, isLive, actor: history,
                     "a flow wait was resolved again after it had ended")
        guard isLive, let continuation else { return }
        self.continuation = nil
        want = nil
        continuation.resume(returning: outcome)
    }

    /// The reader has ended: the wait in progress ends `closed`; what no expect took is counted as pushed.
    private func readerEnded() {
        isReaderDone = true
        if faults?.scansInboxAfterClose() != true {
            while inboxHead < inbox.count {
                var item = dequeue()
                countPushed(&item.message, event: item.event?.name)
            }
        }
        heartbeat?.cancel()
        heartbeat = nil
        if flow.scenario.preset == .socketio {
            // A ping that came as the client was closing (on purpose, or stopped) cannot be answered any more.
            ledger.check(.socketIOHeartbeatHeld, !isPingUnanswered || isClosingOnPurpose || isStopRequested, actor: history,
                         "the connection ended with an Engine.IO ping of the server unanswered")
        }
        if continuation != nil { resolve(.closed, serial: waitSerial) }
        latch.wake(id)
    }

    /// The run stopped the connection: the wait in progress ends `stopped` (the interpreter returns at its next
    /// step or wait), then the closing handshake.
    func stop(_ manager: isolated WebSocketManager) async {
        isStopRequested = true
        if continuation != nil { resolve(.stopped, serial: waitSerial) }
        await manager.beginClosing(code: .normalClosure, reason: "run stopped")
    }
}

extension FlowWant {
    /// The want an inbox item can satisfy (expect, on); nil for those the reader answers itself.
    var takesItems: FlowWant? {
        switch self {
        case .message, .event: self
        case .ack, .handshake, .operation: nil
        }
    }
}

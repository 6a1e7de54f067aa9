import Clients
import Flow
import JSON
import Profile
import Runtime
import WebSocket

// The socketio preset at run time: Engine.IO framing and heartbeat in the reader, the namespace connect before the
// first step, `emit` (with its ack) and `on`.
extension FlowRun {
    /// One text or binary frame of a socketio connection: pings answered at once (and the server-ping deadline
    /// re-armed), the namespace connect and acks answered here, events to the waiting `on` or the inbox.
    func socketIOFrame(_ manager: isolated WebSocketManager, _ item: FlowItem) async {
        guard case .text(let text) = item.message.message else {
            recorder.recordError(EngineErrorCode.socketIOBinaryUnsupported)
            return
        }
        switch EngineIOPacket.decode(text) {
        case .failure:
            recorder.recordError(EngineErrorCode.socketIOProtocol)
        case .success(.open(let handshake)):
            armHeartbeat(manager, after: handshake.pingInterval + handshake.pingTimeout + Self.heartbeatGrace)
            await connectNamespace(manager)
        case .success(.ping(let data)):
            isPingUnanswered = true
            guard faults?.ignoresEngineIOPings() != true else { return }  // a fault: the ping stays unanswered
            do { try await manager.send(text: EngineIOPacket.pong(data).encoded) } catch { return }
            isPingUnanswered = false
            recorder.messagesSent += 1
            if let interval = heartbeatInterval { armHeartbeat(manager, after: interval) }
        case .success(.message(let packet)):
            socketIOPacket(packet, item)
        case .success(.close), .success(.pong), .success(.upgrade), .success(.noop):
            break
        }
    }

    /// The namespace connect (`40`, with the auth payload expanded from the client's templates).
    private func connectNamespace(_ manager: isolated WebSocketManager) async {
        var payload: JSONValue?
        if let template = flow.scenario.connectPayload {
            var scope = state
            switch template.expand(&scope) {
            case .success(let value): payload = value
            case .failure:
                fail(.templateUndefined, step: nil)
                return
            }
        }
        let packet = SocketIOPacket.connect(namespace: flow.scenario.namespace, payload: payload)
        do { try await manager.send(text: EngineIOPacket.message(packet.encoded).encoded) } catch { return }
        recorder.messagesSent += 1
    }

    /// Added to pingInterval + pingTimeout (what Socket.IO's own JS client waits) before a silent server is dead:
    /// python-engineio advertises its interval truncated to whole seconds (0 for 0.5 s, 1000 for 1.9 s), so a
    /// client holding the advertised sum exactly declares a live server dead between two of its pings. Truncation
    /// loses under a second; one more second also absorbs a busy loop's lateness. A dead server is still found.
    static let heartbeatGrace: Duration = .seconds(1)

    /// Engine.IO's heartbeat: the server pings every pingInterval; none within pingInterval + pingTimeout (+ the
    /// ``heartbeatGrace``) is a dead server (`socketio_ping_timeout`, the connection is aborted).
    private func armHeartbeat(_ manager: isolated WebSocketManager, after delay: Duration) {
        heartbeatInterval = delay
        heartbeat?.cancel()
        let recorder = self.recorder
        heartbeat = ScheduledTimer(on: loop, after: delay) { [self] in
            manager.assumeIsolated { manager in
                guard manager.state == .open else { return }
                self.ledger.check(.socketIOHeartbeatHeld, false, actor: self.history,
                                  "no Engine.IO ping from the server within pingInterval + pingTimeout")
                recorder.recordError(EngineErrorCode.socketIOPingTimeout)
                manager.abort(reason: "no Engine.IO ping within \(delay)")
            }
        }
    }

    private func socketIOPacket(_ text: String, _ item: FlowItem) {
        let namespace = flow.scenario.namespace
        switch SocketIOPacket.decode(text) {
        case .failure:
            recorder.recordError(EngineErrorCode.socketIOProtocol)
        case .success(.connect(let ns, let payload)) where ns == namespace:
            guard let sid = payload?["sid"]?.stringValue else { return recorder.recordError(EngineErrorCode.socketIOProtocol) }
            sessionID = sid
            state.define("sid", .string(sid))
            if case .handshake? = want { resolve(.matched(item.arrival, []), serial: waitSerial) }
        case .success(.connectError(let ns, _)) where ns == namespace:
            if case .handshake? = want { resolve(.failed(.socketIOConnectError), serial: waitSerial) }
        case .success(.event(let ns, _, let arguments)) where ns == namespace:
            guard let name = arguments.first?.stringValue else { return recorder.recordError(EngineErrorCode.socketIOProtocol) }
            var item = item
            item.event = (name, .array(Array(arguments.dropFirst())))
            offer(item)
        case .success(.ack(let ns, let id, let arguments)) where ns == namespace:
            let answer = acks.answer(id)
            ledger.check(.flowAckAnsweredOnce, answer == .first || answer == .forgotten,
                         actor: history, "ack \(id) answered twice, or never asked for")
            guard case .ack(let awaited, let emit)? = want, awaited == id else {
                // The emit's send is still suspended (backpressure): its ack waits for the wait. Else late or unknown.
                _ = acks.keepEarly(id, arguments: arguments, arrival: item.arrival)
                return
            }
            resolve(ackOutcome(emit, arguments, arrival: item.arrival), serial: waitSerial)
        case .success(.binaryEvent), .success(.binaryAck):
            recorder.recordError(EngineErrorCode.socketIOBinaryUnsupported)
        case .success:
            break  // another namespace's packet, or a disconnect the close that follows accounts for
        }
    }

    /// What an ack makes of the emit awaiting it: matched (with its captures), or failed.
    private func ackOutcome(_ emit: SocketIOEmit, _ arguments: [JSONValue], arrival: LoopClock.Instant) -> WaitOutcome {
        var scope = state
        let value = JSONValue.array(arguments)
        guard emit.ackMatch.allHold(on: value, scope: &scope) else { return .failed(.ackTimeout) }
        switch capture(emit.ackCaptures, from: value) {
        case .matched(let captures): return .matched(arrival, captures.map { ($0.variable, $0.value) })
        case .captureMissing: return .failed(.captureMissing)
        case .noMatch: return .failed(.ackTimeout)
        }
    }

    /// Before the first step: socketio awaits its namespace connect within the handshake timeout.
    func presetHandshake(_ manager: isolated WebSocketManager) async -> FlowControl? {
        if flow.scenario.preset == .graphqlWS { return await graphQLHandshake(manager) }
        guard flow.scenario.preset == .socketio, sessionID == nil else { return nil }
        return await awaitHandshake(manager, onDeadline: .socketIOConnectError)
    }

    /// emit, on (socketio); query, subscribe, unsubscribe (graphql-ws).
    func presetStep(_ manager: isolated WebSocketManager, _ node: FlowNode) async -> FlowControl {
        let nameIndex = node.step.nameIndex
        switch node.step.action {
        case .emit(let emit):
            return await self.emit(manager, emit, step: node.step)
        case .on(let on):
            let from = on.expectation.from.flatMap { state.marks[$0] } ?? reference
            switch await awaitMessage(manager, .event(on), within: on.expectation.within) {
            case .matched(let arrival, let captures):
                for capture in captures { state.define(capture.variable, capture.value) }
                if let nameIndex { recorder.flowSteps[nameIndex].record(microseconds: max(.zero, from.duration(to: arrival))) }
                return .next
            case .failed(let code):
                fail(code, step: nameIndex)
                return await policy(on.expectation.onTimeout, manager)
            case .stopped: return .stopped
            case .closed, .elapsed: return .dropped
            }
        case .query, .subscribe, .unsubscribe:
            return await graphQLStep(manager, node)
        default:
            return .next
        }
    }

    private func emit(_ manager: isolated WebSocketManager, _ emit: SocketIOEmit, step: FlowStep) async -> FlowControl {
        var arguments: [JSONValue] = [.string(emit.event)]
        var scope = state
        for template in emit.arguments {
            switch template.expand(&scope) {
            case .success(let value): arguments.append(value)
            case .failure:
                fail(.templateUndefined, step: step.nameIndex)
                return .next
            }
        }
        let ackID: UInt64? = emit.ackWithin == nil ? nil : nextAckID
        if let ackID {
            if faults?.reusesAckIDs() != true { nextAckID &+= 1 }
            ledger.check(.flowAckAnsweredOnce, acks.ask(ackID), actor: history,
                         "ack id \(ackID) asked for twice on one connection")
            acks.expect(ackID)  // before the send: an ack arriving while it is suspended is kept
        }
        defer { acks.endAwait() }
        let text = EngineIOPacket.message(
            SocketIOPacket.event(namespace: flow.scenario.namespace, ackID: ackID, arguments: arguments).encoded).encoded
        let sentAt = clock.now
        do { try await manager.send(text: text) } catch { return isStopRequested || latch.isStopped(id) ? .stopped : .dropped }
        state.sequence &+= 1
        reference = lateIterationStart ?? sentAt
        lateIterationStart = nil
        recorder.messagesSent += 1
        recorder.bytesSent += UInt64(text.utf8.count)
        guard let ackID, let within = emit.ackWithin else { return .next }
        let from = reference
        let outcome = if let early = acks.takeEarly() {
            ackOutcome(emit, early.arguments, arrival: early.arrival)
        } else {
            await wait(manager, until: clock.now.advanced(by: within), expecting: .ack(ackID, emit),
                       onDeadline: .failed(.ackTimeout))
        }
        switch outcome {
        case .matched(let arrival, let captures):
            for capture in captures { state.define(capture.variable, capture.value) }
            if let nameIndex = step.nameIndex {
                recorder.flowSteps[nameIndex].record(microseconds: max(.zero, from.duration(to: arrival)))
            }
            return .next
        case .failed(let code):
            fail(code, step: step.nameIndex)
            return await policy(emit.onTimeout, manager)
        case .stopped: return .stopped
        case .closed, .elapsed: return .dropped
        }
    }
}

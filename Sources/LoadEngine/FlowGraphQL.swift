import Clients
import Flow
import JSON
import Profile
import Runtime
import WebSocket

// The graphql-ws preset at run time: connection_init / connection_ack before the first step, pings answered, results
// routed by operation id; steps `query`, `subscribe` and `unsubscribe`.
extension FlowRun {
    /// One frame of a graphql-ws connection.
    func graphQLFrame(_ manager: isolated WebSocketManager, _ item: FlowItem) async {
        guard case .text(let text) = item.message.message else {
            return recorder.recordError(EngineErrorCode.graphQLProtocol)
        }
        switch GraphQLWSMessage.decode(text) {
        case .failure:
            recorder.recordError(EngineErrorCode.graphQLProtocol)
        case .success(.connectionAck):
            isGraphQLAcknowledged = true
            if case .handshake? = want { resolve(.matched(item.arrival, []), serial: waitSerial) }
        case .success(.ping):
            do { try await manager.send(text: GraphQLWSMessage.pong(payload: nil).encoded) } catch { return }
            recorder.messagesSent += 1
        case .success(.next(let id, let payload)):
            route(id, .next(payload), item)
        case .success(.error(let id, _)):
            route(id, .error, item)
        case .success(.complete(let id)):
            route(id, .complete, item)
        case .success(.pong), .success(.connectionInit), .success(.subscribe):
            break
        }
    }

    private func route(_ id: String, _ kind: GraphQLOperationEvent.Kind, _ item: FlowItem) {
        let isRunning = operations.isRunning(id)
        let event = GraphQLOperationEvent(kind, arrival: item.arrival, message: item.message, byteCount: item.byteCount)
        let route = operations.route(id, event)
        if isRunning {
            ledger.check(.graphQLSubscriptionEndsOnce, route != .protocolError, actor: history,
                         "operation \(id) took a result or an end after it had ended")
        }
        switch route {
        case .queued:
            if case .operation(let awaited)? = want, awaited == id { resolve(.matched(item.arrival, []), serial: waitSerial) }
        case .pushed:
            // No step takes it: its step is done, the client ended the operation (a result in flight), or the
            // step's pending results are at their bound.
            var message = item.message
            countPushed(&message)
        case .absorbed:
            break
        case .protocolError:
            // An id this connection never started, or a result after the server's own end.
            recorder.recordError(EngineErrorCode.graphQLProtocol)
        }
    }

    /// Results a step did not take (its operation released or ended by the client): counted as pushed.
    private func countPushed(_ events: [GraphQLOperationEvent]) {
        for var event in events { countPushed(&event.message) }
    }

    /// Before the first step: `connection_init` (its payload expanded) and `connection_ack` within the timeout; the
    /// server must have accepted the subprotocol.
    func graphQLHandshake(_ manager: isolated WebSocketManager) async -> FlowControl? {
        guard manager.negotiatedSubprotocol == GraphQLWSMessage.subprotocol else {
            fail(.subprotocolRefused, step: nil)
            return .finish
        }
        var payload: JSONValue?
        if let template = flow.scenario.initPayload {
            var scope = state
            guard case .success(let value) = template.expand(&scope) else {
                fail(.templateUndefined, step: nil)
                return .finish
            }
            payload = value
        }
        do { try await manager.send(text: GraphQLWSMessage.connectionInit(payload: payload).encoded) } catch {
            return .dropped
        }
        recorder.messagesSent += 1
        if isGraphQLAcknowledged { return nil }
        return await awaitHandshake(manager, onDeadline: .graphQLAckTimeout)
    }

    /// Sends `subscribe` for a new operation id (at the live bound first ending the oldest operation no step
    /// takes). Started: the instant the step measures from — a late paced iteration's intended start if this is
    /// its first send (coordinated omission, as `send` and `emit`), else the send's; ended: the connection ended,
    /// or a template failed (counted).
    private func startOperation(_ manager: isolated WebSocketManager, _ operation: GraphQLOperation, step: FlowStep,
                                id: String) async -> OperationStart {
        var scope = state
        guard case .success(let query) = operation.query.expand(&scope) else {
            fail(.templateUndefined, step: step.nameIndex)
            return .ended(.next)
        }
        var variables: JSONValue?
        if let template = operation.variables {
            guard case .success(let value) = template.expand(&scope) else {
                fail(.templateUndefined, step: step.nameIndex)
                return .ended(.next)
            }
            variables = value
        }
        if let oldest = operations.evictable() { await abandon(manager, oldest) }
        operations.start(id, step: step.name)
        let text = GraphQLWSMessage.subscribe(id: id, query: query, variables: variables,
                                              operationName: operation.operationName, extensions: nil).encoded
        let sentAt = clock.now
        do { try await manager.send(text: text) } catch {
            return .ended(isStopRequested || latch.isStopped(self.id) ? .stopped : .dropped)
        }
        state.sequence &+= 1
        reference = lateIterationStart ?? sentAt
        lateIterationStart = nil
        recorder.messagesSent += 1
        recorder.bytesSent += UInt64(text.utf8.count)
        return .started(reference)
    }

    /// A query or subscribe step that failed while its operation still runs: the client ends it (`complete`), so
    /// the server stops. One the server already ended is only released. A send that fails leaves it to the
    /// connection's end.
    private func abandon(_ manager: isolated WebSocketManager, _ id: String) async {
        guard let leftover = operations.endByClient(id) else { return }
        countPushed(leftover)
        do { try await manager.send(text: GraphQLWSMessage.complete(id: id).encoded) } catch { return }
        recorder.messagesSent += 1
    }

    /// The step is done with operation `id` (it goes on until its end, or the client's): what it did not take is
    /// counted as pushed.
    private func release(_ id: String) {
        countPushed(operations.release(id))
    }

    /// The next event of operation `id`, waiting up to `within`.
    private func nextEvent(_ manager: isolated WebSocketManager, _ id: String, within: Duration)
        async -> Result<GraphQLOperationEvent, FlowControlOrCode> {
        if operations.pendingCount(id) == 0 {
            switch await wait(manager, until: clock.now.advanced(by: within), expecting: .operation(id),
                              onDeadline: .failed(.expectTimeout)) {
            case .matched: break
            case .failed(let code): return .failure(.code(code))
            case .stopped: return .failure(.control(.stopped))
            case .closed, .elapsed: return .failure(.control(.dropped))
            }
        }
        guard let event = operations.take(id) else { return .failure(.code(.expectTimeout)) }
        return .success(event)
    }

    /// graphql-ws steps: query (one result, timed), subscribe (count nexts or until complete), unsubscribe. Every
    /// execution is a new operation id, so results in flight for an earlier one never reach a later one.
    func graphQLStep(_ manager: isolated WebSocketManager, _ node: FlowNode) async -> FlowControl {
        let step = node.step
        switch step.action {
        case .query(let query):
            let id = "q\(nextOperationID)"
            nextOperationID &+= 1
            let from: LoopClock.Instant
            switch await startOperation(manager, query.operation, step: step, id: id) {
            case .started(let instant): from = instant
            case .ended(let control): return control
            }
            switch await nextEvent(manager, id, within: query.within) {
            case .failure(.control(let control)): return control
            case .failure(.code(let code)):
                fail(code, step: step.nameIndex)
                await abandon(manager, id)
                return await policy(query.onTimeout, manager)
            case .success(let event):
                guard case .next(let payload) = event.kind else {
                    release(id)
                    fail(.graphQLError, step: step.nameIndex)
                    return await policy(query.onTimeout, manager)
                }
                var scope = state
                guard payload["errors"] == nil, query.match.allHold(on: payload, scope: &scope) else {
                    fail(payload["errors"] == nil ? .expectTimeout : .graphQLError, step: step.nameIndex)
                    await abandon(manager, id)
                    return await policy(query.onTimeout, manager)
                }
                release(id)
                guard case .matched(let captures) = capture(query.captures, from: payload) else {
                    fail(.captureMissing, step: step.nameIndex)
                    return await policy(query.onTimeout, manager)
                }
                for capture in captures { state.define(capture.variable, capture.value) }
                if let index = step.nameIndex {
                    recorder.flowSteps[index].record(microseconds: max(.zero, from.duration(to: event.arrival)))
                }
                return .next
            }
        case .subscribe(let subscription):
            let id = "s\(nextOperationID)"
            nextOperationID &+= 1
            let from: LoopClock.Instant
            switch await startOperation(manager, subscription.operation, step: step, id: id) {
            case .started(let instant): from = instant
            case .ended(let control): return control
            }
            var received = 0
            while subscription.count.map({ received < $0 }) ?? true {
                switch await nextEvent(manager, id, within: subscription.within) {
                case .failure(.control(let control)): return control
                case .failure(.code(let code)):
                    fail(code, step: step.nameIndex)
                    await abandon(manager, id)
                    return await policy(subscription.onTimeout, manager)
                case .success(let event):
                    switch event.kind {
                    case .next(let payload):
                        var scope = state
                        guard payload["errors"] == nil, subscription.match.allHold(on: payload, scope: &scope) else {
                            fail(.graphQLError, step: step.nameIndex)
                            await abandon(manager, id)
                            return await policy(subscription.onTimeout, manager)
                        }
                        if received == 0, let index = step.nameIndex {
                            recorder.flowFirstResults[index].record(microseconds: max(.zero, from.duration(to: event.arrival)))
                        }
                        received += 1
                    case .complete where subscription.count == nil:
                        release(id)
                        if let index = step.nameIndex {
                            recorder.flowSteps[index].record(microseconds: max(.zero, from.duration(to: clock.now)))
                        }
                        return .next
                    case .error, .complete:
                        release(id)
                        fail(.graphQLError, step: step.nameIndex)
                        return await policy(subscription.onTimeout, manager)
                    }
                }
            }
            release(id)  // the count reached: the subscription runs on until `unsubscribe`, its results pushed
            if let index = step.nameIndex {
                recorder.flowSteps[index].record(microseconds: max(.zero, from.duration(to: clock.now)))
            }
            return .next
        case .unsubscribe(let name):
            // Every operation of the step still running ends. Honest: one the server (or a failed step) already
            // ended is not ended again.
            let running = operations.live(step: name)
            for id in running { await abandon(manager, id) }
            // A test's fault ends the last one again although the server has ended it: the checker sees it.
            if running.isEmpty, faults?.endsSubscriptionsTwice() == true, let id = operations.latest[name] {
                ledger.check(.graphQLSubscriptionEndsOnce, operations.isRunning(id), actor: history,
                             "operation \(name) ended twice")
                do { try await manager.send(text: GraphQLWSMessage.complete(id: id).encoded) } catch { return .dropped }
                recorder.messagesSent += 1
            }
            return .next
        default:
            return .next
        }
    }
}

/// How starting a graphql-ws operation went.
private enum OperationStart {
    /// Sent; the step measures from this instant.
    case started(LoopClock.Instant)
    /// Not sent: the step (or the flow) goes on with this.
    case ended(FlowControl)
}

/// Why waiting for an operation's event ended without one.
enum FlowControlOrCode: Error {
    case control(FlowControl)
    case code(EngineErrorCode)
}

import Clients
import Flow
import JSON
import Profile
import Runtime
import WebSocket

/// What the server sent for one graphql-ws operation, in order, until the interpreter takes it.
struct GraphQLOperationEvents {
    enum Event {
        case next(JSONValue)
        case error
        case complete
    }

    var pending: [(event: Event, arrival: LoopClock.Instant)] = []
    /// A `complete` or `error` arrived, or the client sent `complete`: the id takes no more results.
    var isEnded = false
    /// The client sent `complete` (unsubscribe, or a step that gave up waiting): results the server had in flight
    /// are dropped; after the server's own end, more for the id are protocol errors.
    var isEndedByClient = false
}

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
            route(id, .next(payload), at: item.arrival)
        case .success(.error(let id, _)):
            route(id, .error, at: item.arrival)
        case .success(.complete(let id)):
            route(id, .complete, at: item.arrival)
        case .success(.pong), .success(.connectionInit), .success(.subscribe):
            break
        }
    }

    private func route(_ id: String, _ event: GraphQLOperationEvents.Event, at arrival: LoopClock.Instant) {
        guard var operation = operations[id] else {
            // An id this connection never started: the server broke the protocol.
            return recorder.recordError(EngineErrorCode.graphQLProtocol)
        }
        if operation.isEnded {
            // Crossing the client's `complete` is allowed; anything after the server's own end is not.
            if !operation.isEndedByClient { recorder.recordError(EngineErrorCode.graphQLProtocol) }
            return
        }
        ledger.check(.graphQLSubscriptionEndsOnce, !operation.isEnded, actor: history,
                     "operation \(id) took a result or an end after it had ended")
        switch event {
        case .next: break
        case .error, .complete: operation.isEnded = true
        }
        operation.pending.append((event, arrival))
        operations[id] = operation
        if case .operation(let awaited)? = want, awaited == id { resolve(.matched(arrival, []), serial: waitSerial) }
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
        switch await wait(manager, until: clock.now.advanced(by: flow.scenario.handshakeTimeout), expecting: .handshake,
                          onDeadline: .failed(.graphQLAckTimeout)) {
        case .matched: return nil
        case .failed(let code):
            fail(code, step: nil)
            return .finish
        case .stopped: return .stopped
        case .closed, .elapsed: return .dropped
        }
    }

    /// Sends `subscribe` for a new operation id; nil when the connection ended or a template failed (counted).
    private func startOperation(_ manager: isolated WebSocketManager, _ operation: GraphQLOperation, step: FlowStep,
                                id: String) async -> FlowControl? {
        var scope = state
        guard case .success(let query) = operation.query.expand(&scope) else {
            fail(.templateUndefined, step: step.nameIndex)
            return .next
        }
        var variables: JSONValue?
        if let template = operation.variables {
            guard case .success(let value) = template.expand(&scope) else {
                fail(.templateUndefined, step: step.nameIndex)
                return .next
            }
            variables = value
        }
        operations[id] = GraphQLOperationEvents()
        let text = GraphQLWSMessage.subscribe(id: id, query: query, variables: variables,
                                              operationName: operation.operationName, extensions: nil).encoded
        do { try await manager.send(text: text) } catch { return isStopRequested || latch.isStopped(self.id) ? .stopped : .dropped }
        state.sequence &+= 1
        recorder.messagesSent += 1
        recorder.bytesSent += UInt64(text.utf8.count)
        return nil
    }

    /// A query or subscribe step that failed while its operation still runs: the client ends it (`complete`), so
    /// the server stops and the id may be used again. A send that fails leaves it to the connection's end.
    private func abandon(_ manager: isolated WebSocketManager, _ id: String) async {
        guard var operation = operations[id], !operation.isEnded else { return }
        end(&operation, id)
        operations[id] = operation
        do { try await manager.send(text: GraphQLWSMessage.complete(id: id).encoded) } catch { return }
        recorder.messagesSent += 1
    }

    /// Ends operation `id` on the client's side (checked: at most one end per id).
    private func end(_ operation: inout GraphQLOperationEvents, _ id: String) {
        ledger.check(.graphQLSubscriptionEndsOnce, !operation.isEnded, actor: history, "operation \(id) ended twice")
        operation.isEnded = true
        operation.isEndedByClient = true
        operation.pending = []
    }

    /// The next event of operation `id`, waiting up to `within`.
    private func nextEvent(_ manager: isolated WebSocketManager, _ id: String, within: Duration)
        async -> Result<(GraphQLOperationEvents.Event, LoopClock.Instant), FlowControlOrCode> {
        if operations[id]?.pending.isEmpty ?? true {
            switch await wait(manager, until: clock.now.advanced(by: within), expecting: .operation(id),
                              onDeadline: .failed(.expectTimeout)) {
            case .matched: break
            case .failed(let code): return .failure(.code(code))
            case .stopped: return .failure(.control(.stopped))
            case .closed, .elapsed: return .failure(.control(.dropped))
            }
        }
        guard var operation = operations[id], !operation.pending.isEmpty else { return .failure(.code(.expectTimeout)) }
        let first = operation.pending.removeFirst()
        operations[id] = operation
        return .success(first)
    }

    /// graphql-ws steps: query (one result, timed), subscribe (count nexts or until complete), unsubscribe.
    func graphQLStep(_ manager: isolated WebSocketManager, _ node: FlowNode) async -> FlowControl {
        let step = node.step
        switch step.action {
        case .query(let query):
            let id = "q\(nextOperationID)"
            nextOperationID &+= 1
            let sentAt = clock.now
            if let control = await startOperation(manager, query.operation, step: step, id: id) { return control }
            switch await nextEvent(manager, id, within: query.within) {
            case .failure(.control(let control)): return control
            case .failure(.code(let code)):
                fail(code, step: step.nameIndex)
                await abandon(manager, id)
                return await policy(query.onTimeout, manager)
            case .success((.next(let payload), let arrival)):
                var scope = state
                guard payload["errors"] == nil, query.match.allHold(on: payload, scope: &scope) else {
                    fail(payload["errors"] == nil ? .expectTimeout : .graphQLError, step: step.nameIndex)
                    await abandon(manager, id)
                    return await policy(query.onTimeout, manager)
                }
                guard case .matched(let captures) = capture(query.captures, from: payload) else {
                    fail(.captureMissing, step: step.nameIndex)
                    return await policy(query.onTimeout, manager)
                }
                for capture in captures { state.define(capture.variable, capture.value) }
                if let index = step.nameIndex { recorder.flowSteps[index].record(microseconds: sentAt.duration(to: arrival)) }
                return .next
            case .success((.error, _)), .success((.complete, _)):
                fail(.graphQLError, step: step.nameIndex)
                return await policy(query.onTimeout, manager)
            }
        case .subscribe(let subscription):
            let id = step.name ?? "s\(nextOperationID)"
            nextOperationID &+= 1
            let sentAt = clock.now
            if let control = await startOperation(manager, subscription.operation, step: step, id: id) { return control }
            var received = 0
            while subscription.count.map({ received < $0 }) ?? true {
                switch await nextEvent(manager, id, within: subscription.within) {
                case .failure(.control(let control)): return control
                case .failure(.code(let code)):
                    fail(code, step: step.nameIndex)
                    await abandon(manager, id)
                    return await policy(subscription.onTimeout, manager)
                case .success((.next(let payload), let arrival)):
                    var scope = state
                    guard payload["errors"] == nil, subscription.match.allHold(on: payload, scope: &scope) else {
                        fail(.graphQLError, step: step.nameIndex)
                        await abandon(manager, id)
                        return await policy(subscription.onTimeout, manager)
                    }
                    if received == 0, let index = step.nameIndex {
                        recorder.flowFirstResults[index].record(microseconds: sentAt.duration(to: arrival))
                    }
                    received += 1
                case .success((.complete, _)) where subscription.count == nil:
                    if let index = step.nameIndex { recorder.flowSteps[index].record(microseconds: sentAt.duration(to: clock.now)) }
                    return .next
                case .success((.error, _)), .success((.complete, _)):
                    fail(.graphQLError, step: step.nameIndex)
                    return await policy(subscription.onTimeout, manager)
                }
            }
            if let index = step.nameIndex { recorder.flowSteps[index].record(microseconds: sentAt.duration(to: clock.now)) }
            return .next
        case .unsubscribe(let name):
            // Honest: an operation the server (or a failed step) already ended is not ended again.
            guard var operation = operations[name],
                  !operation.isEnded || faults?.endsSubscriptionsTwice() == true else { return .next }
            end(&operation, name)
            operations[name] = operation
            do { try await manager.send(text: GraphQLWSMessage.complete(id: name).encoded) } catch { return .dropped }
            recorder.messagesSent += 1
            return .next
        default:
            return .next
        }
    }
}

/// Why waiting for an operation's event ended without one.
enum FlowControlOrCode: Error {
    case control(FlowControl)
    case code(EngineErrorCode)
}

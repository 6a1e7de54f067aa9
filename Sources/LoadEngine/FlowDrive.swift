import Clients
import Flow
import Profile
import Runtime
import WebSocket

// A flow scenario's connection: the handshake templates, and the reader and interpreter tasks beside the actor's own.
extension VirtualUser {
    /// Expands the flow's handshake headers and query parameters for this connect (a feeder row's token, the
    /// connection's number). False, counted `template_undefined`, when one names a value the client lacks: no
    /// connect then.
    func flowHandshake(_ flow: FlowPlan, state: FlowState, url: inout WebSocketURL,
                       configuration: inout WebSocketClientConfiguration) -> Bool {
        var scope = state
        for header in flow.scenario.headers {
            guard case .success(let value) = header.value.expand(&scope) else {
                recorder.recordError(EngineErrorCode.templateUndefined)
                history.note("template_undefined in handshake header \(header.name)")
                return false
            }
            configuration.headers.replaceOrAdd(name: header.name, value: value)
        }
        for item in flow.scenario.query {
            guard case .success(let value) = item.value.expand(&scope) else {
                recorder.recordError(EngineErrorCode.templateUndefined)
                history.note("template_undefined in query parameter \(item.name)")
                return false
            }
            url = url.addingQueryItem(name: item.name, value: value)
        }
        return true
    }

    /// Runs the flow on an open connection: a reader task and an interpreter task, while this task waits for the
    /// stop (which ends the interpreter at its next step or wait) and then closes gracefully.
    /// Out of line: the flow's values are held in this frame, not in ``drive(_:)``'s, which every idle client holds.
    @inline(never)
    mutating func driveFlow(_ manager: WebSocketManager) async -> Ending {
        guard let flow = plan.flow, let state = flowState else { return .finished }  // drive(_:) checked both
        // A new start of the steps (first connect, or after an unintended drop) clears the captures; a
        // `reconnect` step's resume point keeps them.
        // `${seq}` restarts with them: it counts the conversation's sends, across a `reconnect` step.
        if state.resumePoint == nil {
            state.clearCaptures()
            state.sequence = 0
        }
        let run = FlowRun(id: id, plan: plan, flow: flow, state: state, recorder: recorder, latch: latch, loop: loop,
                          ledger: ledger, history: history)
        let latch = self.latch
        let id = self.id
        let loop = self.loop
        let (readerEnding, control) = await withTaskGroup(of: (Ending?, FlowControl?).self) { group in
            group.addTask(executorPreference: loop.taskExecutor) { (await run.read(manager), nil) }
            group.addTask(executorPreference: loop.taskExecutor) { (nil, await run.interpret(manager)) }
            while true {
                await latch.wait(id)
                if latch.isStopped(id) || run.isReaderDone || run.isInterpreterDone { break }
            }
            if latch.isStopped(id) {
                await run.stop(manager)
            }
            var readerEnding: Ending = .dropped
            var control: FlowControl = .dropped
            while let (ending, flowControl) = await group.next() {
                if let ending { readerEnding = ending }
                if let flowControl {
                    control = flowControl
                    // The steps ended the connection on purpose, or it dropped under them: the reader ends with it.
                    if await manager.state == .open {
                        await manager.beginClosing(code: .normalClosure, reason: "done")
                    }
                }
            }
            return (readerEnding, control)
        }
        if await manager.state != .closed { await manager.disconnect(code: .normalClosure, reason: "done") }
        if latch.isStopped(id) { return .stopped }
        switch control {
        case .finish, .next, .restart: return .finished
        case .reconnect: return .reconnectRequested
        case .stopped: return .stopped
        case .dropped: return readerEnding == .finished ? .finished : .dropped
        }
    }

}

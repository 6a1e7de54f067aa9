import Clients
import Flow
import JSON
import Profile
import Runtime
import WebSocket

/// How a block of flow steps (or the whole flow) ended.
enum FlowControl: Equatable {
    /// Go on with the next step.
    case next
    /// Start the steps over from the top, same connection (`onTimeout: restart`).
    case restart
    /// The flow is over and the connection closes normally: its steps ended, a `close` step, `onTimeout: close`.
    case finish
    /// A `reconnect` step: a new connection, the steps go on after it.
    case reconnect
    /// The run stopped the connection.
    case stopped
    /// The connection ended under the flow.
    case dropped
}

/// One open connection of a flow scenario: its reader (every inbound message goes through ``offer(_:)``, to a
/// waiting `expect` or into the inbox) and its interpreter (the steps), both isolated to the connection's
/// ``WebSocketManager`` (an `isolated` parameter on every method), so a message costs no actor hop. The
/// client's ``FlowState`` outlives it.
final class FlowRun: @unchecked Sendable {
    let id: Int
    let plan: ScenarioPlan
    let flow: FlowPlan
    let state: FlowState
    let recorder: LoopRecorder
    let latch: StopLatch
    let loop: EventLoop
    let ledger: InvariantLedger
    let history: ActorHistory
    let clock = LoopClock()
    let faults: (any FlowFaults)?

    /// What the next `expect` measures from: the last send (or a late paced iteration's intended start).
    var reference: LoopClock.Instant
    /// A paced iteration that started late: its first send is measured from here (coordinated omission).
    var lateIterationStart: LoopClock.Instant?
    /// Where the interpreter is in the nested steps (for the `reconnect` step's resume point).
    var position: [FlowPosition] = []

    // The inbox: messages no expect has taken yet, oldest first, with their arrival instants.
    var inbox: [FlowItem] = []
    var inboxHead = 0
    var inboxBytes = 0
    static let inboxCapacity = 1024
    static let inboxByteCapacity = 4 << 20

    // The one wait in progress (an expect, a think, a paced loop's next start).
    var continuation: UnsafeContinuation<WaitOutcome, Never>?
    /// The wait in progress: its deadline, and what it ends with there.
    var waitDeadline = LoopClock.Instant(nanoseconds: 0)
    var waitOnDeadline = WaitOutcome.elapsed
    /// The connection's one armed deadline timer (lazy, see ``wait(_:until:expecting:onDeadline:)``), and its instant.
    var deadlineTimer: ScheduledTimer?
    var armedDeadline = LoopClock.Instant(nanoseconds: 0)
    /// What the wait in progress takes from the reader (nil: a think or pacing wait, which takes nothing).
    var want: FlowWant?
    var waitSkipped = 0
    var waitSerial: UInt64 = 0
    /// Timers a test's fault keeps armed after their wait ended (empty in real runs).
    var strandedTimers: [ScheduledTimer] = []

    var isReaderDone = false
    var isInterpreterDone = false
    var isStopRequested = false
    // socketio: the session, the heartbeat deadline, and the acks in flight.
    var sessionID: String?
    var nextAckID: UInt64 = 0
    var heartbeat: ScheduledTimer?
    var heartbeatInterval: Duration?
    /// A server ping not yet answered (the heartbeat check at the connection's end).
    var isPingUnanswered = false
    /// Ack ids asked for and answered (the ack check, bounded), and the ack the emit in progress awaits.
    var acks = SocketIOAcks()
    // graphql-ws: the acknowledgement and the operations by id.
    var isGraphQLAcknowledged = false
    var operations = GraphQLOperations()
    var nextOperationID: UInt64 = 0

    /// Steps of this connection that failed (a group fails when one of its steps did).
    var failures = 0
    /// The interpreter closed the connection on purpose (steps ended, `close`, `reconnect`).
    var isClosingOnPurpose = false

    init(id: Int, plan: ScenarioPlan, flow: FlowPlan, state: FlowState, recorder: LoopRecorder, latch: StopLatch,
         loop: EventLoop, ledger: InvariantLedger, history: ActorHistory) {
        self.id = id
        self.plan = plan
        self.flow = flow
        self.state = state
        self.recorder = recorder
        self.latch = latch
        self.loop = loop
        self.ledger = ledger
        self.history = history
        faults = plan.faults.flow
        reference = LoopClock().now
    }

    // MARK: The interpreter

    /// Runs the steps until they end, the run stops the connection, or it ends under them. A `restart` starts
    /// over with the captures cleared; the end of the steps closes the connection normally.
    func interpret(_ manager: isolated WebSocketManager) async -> FlowControl {
        defer {
            isInterpreterDone = true
            disarmDeadline()
            latch.wake(id)
        }
        var resume = state.resumePoint
        state.resumePoint = nil
        if let control = await presetHandshake(manager) {
            // A refused handshake (CONNECT_ERROR, no ack, the wrong subprotocol) ends the connection on purpose:
            // left open, the reader would go on answering pings until the run's end.
            if control == .finish { await closeOnPurpose(manager, code: .normalClosure, reason: "handshake failed") }
            return control
        }
        while true {
            position = []
            let waitsBefore = waitSerial
            let control = await run(manager, flow.nodes, resume: &resume)
            switch control {
            case .restart:
                state.clearCaptures()
                if let sessionID { state.define("sid", .string(sessionID)) }
                await yieldUnlessWaited(manager, since: waitsBefore)
                continue
            case .next:
                recorder.flowCompleted += 1
                await closeOnPurpose(manager, code: .normalClosure, reason: "done")
                return .finish
            case .finish:
                await closeOnPurpose(manager, code: .normalClosure, reason: "done")
                return .finish
            case .reconnect:
                await closeOnPurpose(manager, code: .normalClosure, reason: "reconnect")
                return .reconnect
            case .stopped, .dropped:
                return control
            }
        }
    }

    /// Waits for the preset's handshake (the namespace connect, `connection_ack`) within the scenario's timeout: nil
    /// once it came, else what the interpreter does (a failure counts `code` and finishes the flow).
    func awaitHandshake(_ manager: isolated WebSocketManager, onDeadline code: EngineErrorCode) async -> FlowControl? {
        switch await wait(manager, until: clock.now.advanced(by: flow.scenario.handshakeTimeout), expecting: .handshake,
                          onDeadline: .failed(code)) {
        case .matched: return nil
        case .failed(let failure):
            fail(failure, step: nil)
            return .finish
        case .stopped: return .stopped
        case .closed, .elapsed: return .dropped
        }
    }

    /// A loop iteration (or a restart) that never waited — `mark`, `if`, `think: 0`, sends the socket took at once,
    /// sends skipped for an undefined template — lets the loop thread run other jobs before the next one: the run's
    /// stop reaches a connection as a job on its loop, and a step loop that never suspends would never let it in.
    /// Isolated to the manager: a nonisolated async function is entered by switching off it and back.
    @inline(__always)
    func yieldUnlessWaited(_ manager: isolated WebSocketManager, since waitsBefore: UInt64) async {
        if waitSerial == waitsBefore { await Task.yield() }
    }

    func closeOnPurpose(_ manager: isolated WebSocketManager, code: WebSocketCloseCode, reason: String) async {
        isClosingOnPurpose = true
        if manager.state == .open { await manager.beginClosing(code: code, reason: reason) }
    }

    /// Runs a block of steps; `resume` (from a `reconnect` step) skips to where the previous connection left off.
    func run(_ manager: isolated WebSocketManager, _ nodes: [FlowNode], resume: inout [FlowPosition]?) async -> FlowControl {
        var start = 0
        var entering: FlowPosition?
        if var path = resume, !path.isEmpty {
            let first = path.removeFirst()
            resume = path.isEmpty ? nil : path
            if path.isEmpty { start = first.index + 1 } else { (start, entering) = (first.index, first) }
        }
        position.append(FlowPosition(index: start, detail: 0))
        defer { position.removeLast() }
        var index = start
        while index < nodes.count {
            if isStopRequested || latch.isStopped(id) { return .stopped }
            if isReaderDone && faults?.scansInboxAfterClose() != true { return .dropped }
            position[position.count - 1].index = index
            let resumed = entering
            entering = nil
            let control = await step(manager, nodes[index], resumed: resumed, resume: &resume)
            guard control == .next else { return control }
            index += 1
        }
        return .next
    }

    /// Runs one step.
    ///
    /// Inlined, as are the send, expect, wait and yield under it: each `isolated` async call is two executor switches,
    /// and while a task has an executor preference each switch takes its status-record lock (a mutex). Per message of
    /// a `loop { send; expect }`: 17 switches before, 4 after.
    @inline(__always)
    func step(_ manager: isolated WebSocketManager, _ node: FlowNode, resumed: FlowPosition?,
              resume: inout [FlowPosition]?) async -> FlowControl {
        let nameIndex = node.step.nameIndex
        switch node.step.action {
        case .send(let payload):
            return await send(manager, node, payload)
        case .expect(let expectation):
            return await expect(manager, expectation, nameIndex: nameIndex)
        case .think(let think):
            let delay = switch think {
            case .fixed(let duration): duration
            case .uniform(let range): state.uniform(range)
            }
            return await pause(manager, until: clock.now.advanced(by: delay))
        case .loop(let loop):
            return await runLoop(manager, loop, node.children, resumed: resumed, resume: &resume)
        case .group:
            let started = clock.now
            let failuresBefore = failures
            let control = await run(manager, node.children, resume: &resume)
            if control == .next, let nameIndex {
                if failures == failuresBefore {
                    recorder.flowSteps[nameIndex].record(microseconds: started.duration(to: clock.now))
                } else {
                    recorder.flowStepErrors[nameIndex] &+= 1  // a step in the block failed (its code is counted)
                }
            }
            return control
        case .ping(let within, let onTimeout):
            return await ping(manager, within: within, onTimeout: onTimeout, nameIndex: nameIndex)
        case .close(let code, let reason):
            await closeOnPurpose(manager, code: WebSocketCloseCode(rawValue: code), reason: reason)
            return .finish
        case .reconnect:
            state.resumePoint = position
            return .reconnect
        case .mark(let name):
            state.marks[name] = clock.now
            return .next
        case .ifThen(let condition, _, _):
            let branch = resumed?.detail ?? (holds(condition) ? 0 : 1)
            position[position.count - 1].detail = branch
            return await run(manager, branch == 0 ? node.children : node.otherwise, resume: &resume)
        case .emit, .on, .query, .subscribe, .unsubscribe:
            return await presetStep(manager, node)
        }
    }

    /// An `if` step's condition on a captured variable.
    func holds(_ condition: FlowCondition) -> Bool {
        switch condition {
        case .exists(let name):
            return state.variable(name) != nil
        case .equals(let name, let expected):
            guard let value = state.variable(name) else { return false }
            var scope = state
            let test = JSONCondition(path: JSONPath(components: [], description: "$"), test: .equals(expected))
            return [test].allHold(on: value, scope: &scope)
        }
    }

    /// Counts a step's failure: its code in `errors`, and `flow.step_errors.<step>` when it has a name.
    func fail(_ code: EngineErrorCode, step nameIndex: Int?) {
        failures += 1
        recorder.recordStepError(code, step: nameIndex)
    }

    /// What a failed step does next, by its `onTimeout`.
    func policy(_ policy: FlowFailurePolicy, _ manager: isolated WebSocketManager) async -> FlowControl {
        switch policy {
        case .continue: return .next
        case .restart: return .restart
        case .close: return .finish
        }
    }

    // MARK: Send

    @inline(__always)
    func send(_ manager: isolated WebSocketManager, _ node: FlowNode, _ payload: FlowPayload) async -> FlowControl {
        let message: WebSocketConnection.Message
        if let constant = node.constant {
            message = constant
        } else {
            guard let built = build(payload, node: node) else { return .next }
            message = built
        }
        let sentAt = clock.now
        do {
            // `WebSocketManager.send(_:)`'s body, made here: the plain call when the socket takes the frame at once,
            // the wait for the transport only under backpressure. Calling `send` (even `@inlinable`) costs two
            // executor switches per message (measured: 6.2 instead of 4.2).
            if try !manager.sendIfReady(message) { try await manager.flushQueued() }
        } catch {
            return isStopRequested || latch.isStopped(id) ? .stopped : .dropped
        }
        state.sequence &+= 1
        reference = lateIterationStart ?? sentAt
        lateIterationStart = nil
        recorder.messagesSent += 1
        recorder.bytesSent += UInt64(message.byteCount)
        return .next
    }

    /// Expands a templated payload; nil (counted `template_undefined`) when a template names a variable or a
    /// feeder column with no value.
    func build(_ payload: FlowPayload, node: FlowNode) -> WebSocketConnection.Message? {
        let step = node.step
        var scope = state
        var message: WebSocketConnection.Message
        var undefined: String?
        switch payload {
        case .text(let template):
            switch template.expand(&scope) {
            case .success(let text): message = .text(text)
            case .failure(let failure): (message, undefined) = (.text(""), failure.name)
            }
        case .json(let template):
            let expanded = node.jsonText.map { $0.expand(&scope) }
                ?? template.expand(&scope).map { $0.formatted(pretty: false) }
            switch expanded {
            case .success(let text): message = .text(text)
            case .failure(let failure): (message, undefined) = (.text(""), failure.name)
            }
        case .binary(let bytes):
            return .binary(bytes)
        }
        // A fault lets the message go out without the value; the honest interpreter sends nothing.
        if let undefined, faults?.sendsUndefinedTemplates() != true {
            fail(.templateUndefined, step: step.nameIndex)
            history.note("template_undefined at \(step.path) (\(undefined))")
            return nil
        }
        let isDefined = node.capturedReferences.allSatisfy { reference in
            switch reference {
            case .variable(let name): state.variable(name) != nil
            case .feeder(let source, let column): state.feederValue(source: source, column: column) != nil
            default: true
            }
        }
        ledger.check(.flowVariablesDefined, isDefined, actor: history,
                     "a message of \(step.path) was built with an undefined variable")
        return message
    }
}

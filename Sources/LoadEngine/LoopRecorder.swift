import Clients
import Histogram
import Profile
import Reporting
import Runtime

/// The measurements of one scenario on one event loop. Confined to that loop's thread: every connection
/// actor on the loop records into it directly, so a sample costs a histogram increment — no lock, no
/// actor hop. The run collects it with ``takeSnapshot()`` (submitted to the loop) at every interval.
///
/// What a message records is not checked for exclusive access at run time: loop-confined, and each access is a store
/// or a histogram's `record`, which runs nothing that could reach the recorder; a checked one is a runtime call.
final class LoopRecorder: @unchecked Sendable {
    var connect = Histogram()
    var tlsHandshake = Histogram()
    var upgrade = Histogram()
    @exclusivity(unchecked) var messageRoundTrip = Histogram()
    var pingRoundTrip = Histogram()
    var reconnectRecovery = Histogram()
    var messageGap = Histogram()
    /// From the moment the run (or a ramp-down) stopped a client to the end of its task.
    var stopDuration = Histogram()
    var timeToFirstByte = Histogram()
    var transferDuration = Histogram()
    /// KiB per second, one sample per transfer.
    var throughput = Histogram()

    var connectAttempts: UInt64 = 0
    var connectionsOpened: UInt64 = 0
    @exclusivity(unchecked) var messagesSent: UInt64 = 0
    @exclusivity(unchecked) var messagesReceived: UInt64 = 0
    @exclusivity(unchecked) var bytesSent: UInt64 = 0
    @exclusivity(unchecked) var bytesReceived: UInt64 = 0
    var reconnects: UInt64 = 0
    var messagesLost: UInt64 = 0
    @exclusivity(unchecked) var messagesDropped: UInt64 = 0
    @exclusivity(unchecked) var messagesScheduled: UInt64 = 0
    var messagesMissed: UInt64 = 0
    var transfersStarted: UInt64 = 0
    var transfersCompleted: UInt64 = 0
    var transfersFailed: UInt64 = 0
    var transferRetries: UInt64 = 0
    var transferResumes: UInt64 = 0
    var transferRestarts: UInt64 = 0
    var transferBytesReceived: UInt64 = 0
    var transferBytesSent: UInt64 = 0
    /// Final HTTP response statuses (the ``MetricFamily/httpStatus`` counters).
    var statuses: [Int: UInt64] = [:]
    var disconnects: [UInt16: UInt64] = [:]
    var errors: [String: UInt64] = [:]
    /// Connections open now (a gauge: never reset).
    var liveConnections = 0
    /// Flow scenarios: per step name (``FlowScenario/stepNames`` order, a step's `nameIndex`), so a message costs
    /// an array index, never a string hash.
    let flowStepNames: [String]
    @exclusivity(unchecked) var flowSteps: [Histogram]
    var flowFirstResults: [Histogram]
    var flowStepErrors: [UInt64]
    /// Per ``FlowPlan/pushedTypes`` slot (the classify types, then `other`).
    let flowPushedTypes: [String]
    var flowPushed: [UInt64]
    /// socketio events outside an `on`, by event name, when the scenario has no `classify` (bounded names:
    /// ``countPushedEvent(_:)``).
    var flowPushedEvents: [String: UInt64] = [:]
    private let pushedEventNames: PushedEventNames?
    private var pushedEventCache: PushedEventNames.Cache
    var flowSkipped: UInt64 = 0
    var flowCompleted: UInt64 = 0
    var flowIterations: UInt64 = 0
    var flowIterationsMissed: UInt64 = 0

    init(flow: FlowPlan? = nil) {
        flowStepNames = flow?.scenario.stepNames ?? []
        flowSteps = flowStepNames.map { _ in Histogram() }
        flowFirstResults = flowSteps
        flowStepErrors = flowStepNames.map { _ in 0 }
        flowPushedTypes = flow?.pushedTypes ?? []
        flowPushed = flowPushedTypes.map { _ in 0 }
        pushedEventNames = flow?.pushedEvents
        pushedEventCache = flow?.pushedEvents.makeCache() ?? PushedEventNames.Cache(names: [])
    }

    /// A socketio event no `on` took: counted by its name while the run's bound allows, else as `other`.
    func countPushedEvent(_ event: String) {
        let tag = pushedEventNames?.tag(for: event, cache: &pushedEventCache) ?? MetricFamily.flowPushedOther
        flowPushedEvents[tag, default: 0] &+= 1
    }

    /// A flow step failed: its code in `errors`, and the step's own counter when it has a name.
    func recordStepError(_ code: EngineErrorCode, step nameIndex: Int?) {
        recordError(code)
        if let nameIndex { flowStepErrors[nameIndex] &+= 1 }
    }

    /// Reconnect attempts and unintended drops per 100 ms of the loop clock (for storm peaks).
    var reconnectsByTick: [UInt64: UInt64] = [:]
    var dropsByTick: [UInt64: UInt64] = [:]

    /// The 100 ms slot of the loop clock a storm event falls in.
    static func tick(_ instant: LoopClock.Instant) -> UInt64 { instant.nanoseconds / 100_000_000 }

    /// Counts an error the engine itself found.
    func recordError(_ code: EngineErrorCode) { errors[code.rawValue, default: 0] += 1 }

    /// Counts a WebSocket client's failure by its stable code.
    func recordError(_ code: WebSocketClientError.Code) { errors[code.rawValue, default: 0] += 1 }

    /// Counts a failed transfer by its metric code (the runtime's for I/O failures, else the transfer's).
    func recordError(_ error: TransferError) { errors[error.metricCode, default: 0] += 1 }

    /// Which histogram field feeds which catalogue metric.
    static let histograms: [(Metric, ReferenceWritableKeyPath<LoopRecorder, Histogram> & Sendable)] = [
        (.connect, \.connect), (.tlsHandshake, \.tlsHandshake), (.upgrade, \.upgrade),
        (.messageRoundTrip, \.messageRoundTrip), (.pingRoundTrip, \.pingRoundTrip),
        (.reconnectRecovery, \.reconnectRecovery), (.messageGap, \.messageGap), (.stopDuration, \.stopDuration),
        (.timeToFirstByte, \.timeToFirstByte), (.transferDuration, \.transferDuration), (.throughput, \.throughput),
    ]

    /// Which counter field feeds which catalogue metric.
    static let counters: [(Metric, ReferenceWritableKeyPath<LoopRecorder, UInt64> & Sendable)] = [
        (.connectAttempts, \.connectAttempts), (.connectionsOpened, \.connectionsOpened),
        (.messagesSent, \.messagesSent), (.messagesReceived, \.messagesReceived),
        (.bytesSent, \.bytesSent), (.bytesReceived, \.bytesReceived), (.reconnects, \.reconnects),
        (.messagesLost, \.messagesLost), (.messagesDropped, \.messagesDropped),
        (.messagesScheduled, \.messagesScheduled), (.messagesMissed, \.messagesMissed),
        (.transfersStarted, \.transfersStarted), (.transfersCompleted, \.transfersCompleted),
        (.transfersFailed, \.transfersFailed), (.transferRetries, \.transferRetries),
        (.transferResumes, \.transferResumes), (.transferRestarts, \.transferRestarts),
        (.transferBytesReceived, \.transferBytesReceived), (.transferBytesSent, \.transferBytesSent),
        (.flowSkipped, \.flowSkipped), (.flowCompleted, \.flowCompleted), (.flowIterations, \.flowIterations),
        (.flowIterationsMissed, \.flowIterationsMissed),
    ]

    /// A client's task is ending: if the run (or a ramp-down) had stopped it, how long it took, checked
    /// against `gracefulStop` (the cancellation invariant's per-actor bound).
    func recordEnd(of id: Int, latch: StopLatch, ledger: InvariantLedger, history: ActorHistory, bound: Duration) {
        guard let stoppedAt = latch.stopInstant(id) else { return }
        let took = LoopClock.Instant(nanoseconds: stoppedAt).duration(to: LoopClock().now)
        stopDuration.record(microseconds: took)
        ledger.check(.stopWithinBound, took <= bound, actor: history,
                     "ended \(formatDuration(took)) after it was stopped (gracefulStop \(formatDuration(bound)))")
    }

    /// Everything recorded since the last snapshot (counters and histograms restart from zero).
    func takeSnapshot() -> RecorderSnapshot {
        var metrics = MetricSet()
        for (metric, keyPath) in Self.histograms where self[keyPath: keyPath].totalCount > 0 {
            metrics[histogram: metric] = self[keyPath: keyPath]
            self[keyPath: keyPath] = Histogram()
        }
        for (metric, keyPath) in Self.counters where self[keyPath: keyPath] > 0 {
            metrics[counter: metric] = self[keyPath: keyPath]
            self[keyPath: keyPath] = 0
        }
        takeFlowSnapshot(into: &metrics)
        for (status, count) in statuses { metrics.counters[MetricFamily.httpStatus.name(status)] = count }
        statuses = [:]
        metrics.disconnects = disconnects
        metrics.errors = errors
        disconnects = [:]
        errors = [:]
        defer {
            reconnectsByTick = [:]
            dropsByTick = [:]
        }
        return RecorderSnapshot(metrics: metrics, liveConnections: liveConnections, reconnectsByTick: reconnectsByTick,
                                dropsByTick: dropsByTick)
    }
}

extension LoopRecorder {
    /// Writes the per-step arrays under their family names and restarts them from zero.
    private func takeFlowSnapshot(into metrics: inout MetricSet) {
        for (index, name) in flowStepNames.enumerated() {
            if flowSteps[index].totalCount > 0 {
                metrics.histograms[MetricFamily.flowStep.name(name)] = flowSteps[index]
                flowSteps[index] = Histogram()
            }
            if flowFirstResults[index].totalCount > 0 {
                metrics.histograms[MetricFamily.flowFirstResult.name(name)] = flowFirstResults[index]
                flowFirstResults[index] = Histogram()
            }
            if flowStepErrors[index] > 0 {
                metrics.counters[MetricFamily.flowStepErrors.name(name)] = flowStepErrors[index]
                flowStepErrors[index] = 0
            }
        }
        for (index, type) in flowPushedTypes.enumerated() where flowPushed[index] > 0 {
            metrics.counters[MetricFamily.flowPushed.name(type), default: 0] += flowPushed[index]
            flowPushed[index] = 0
        }
        for (event, count) in flowPushedEvents { metrics.counters[MetricFamily.flowPushed.name(event), default: 0] += count }
        flowPushedEvents = [:]
    }
}

struct RecorderSnapshot: Sendable {
    var metrics: MetricSet
    var liveConnections: Int
    var reconnectsByTick: [UInt64: UInt64]
    var dropsByTick: [UInt64: UInt64]
}

/// Wakes the connections of one loop: when the run (or a ramp-down) stops them, or when a connection's
/// own driver finishes. Loop-confined like ``LoopRecorder``.
///
/// A connection with no task waiting for the stop (its one task is reading) learns of it through a stop hook
/// instead: ``onStop(_:_:)`` runs once, on the loop, when the connection is stopped.
final class StopLatch: @unchecked Sendable {
    private var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    /// Stopped connections, with the loop-clock instant (ns) the run decided to stop them.
    /// Unchecked at run time, as the recorder's per-message state (``isStopped(_:)`` is asked per message); every
    /// access is a lookup or a store.
    @exclusivity(unchecked) private var stopped: [Int: UInt64] = [:]
    @exclusivity(unchecked) private var everythingStoppedAt: UInt64?
    /// Wakes that came while nobody waited: the next wait returns at once.
    private var pendingWakes: Set<Int> = []
    /// Per connection, what to run when it is stopped (each runs once, then is forgotten).
    private var stopHooks: [Int: () -> Void] = [:]
    func isStopped(_ id: Int) -> Bool { everythingStoppedAt != nil || stopped[id] != nil }

    /// When `id` was told to stop (the open model counts the schedule up to this instant).
    func stopInstant(_ id: Int) -> UInt64? {
        switch (stopped[id], everythingStoppedAt) {
        case (let one?, let all?): min(one, all)
        case (let one, let all): one ?? all
        }
    }

    /// Waits until `id` is stopped or woken.
    func wait(_ id: Int) async {
        guard !isStopped(id), pendingWakes.remove(id) == nil else { return }
        await withCheckedContinuation { waiters[id] = $0 }
    }

    /// Wakes `id`'s waiter (or its next wait) without stopping it.
    func wake(_ id: Int) {
        if let waiter = waiters.removeValue(forKey: id) {
            waiter.resume()
        } else {
            pendingWakes.insert(id)
        }
    }

    func discardPendingWake(_ id: Int) { pendingWakes.remove(id) }

    /// Runs `hook` on the loop when `id` is stopped, once, after ``isStopped(_:)`` and ``stopInstant(_:)`` say so (the
    /// caller checks whether it is stopped already). Replaces an earlier hook of `id`.
    func onStop(_ id: Int, _ hook: @escaping () -> Void) { stopHooks[id] = hook }

    /// Forgets `id`'s stop hook, if it has one that has not run.
    func removeStopHook(_ id: Int) { stopHooks.removeValue(forKey: id) }

    func stop(_ id: Int, at instant: UInt64) {
        stopped[id] = instant
        stopHooks.removeValue(forKey: id)?()
        wake(id)
    }

    func stopEverything(at instant: UInt64) {
        everythingStoppedAt = instant
        let hooks = stopHooks
        stopHooks = [:]
        for hook in hooks.values { hook() }
        let all = waiters
        waiters = [:]
        for waiter in all.values { waiter.resume() }
    }

    /// Forgets a finished connection.
    func remove(_ id: Int) {
        stopped.removeValue(forKey: id)
        pendingWakes.remove(id)
        stopHooks.removeValue(forKey: id)
        waiters.removeValue(forKey: id)?.resume()
    }
}

import Clients
import Crypto
import Foundation
import Profile
import Runtime
import WebSocket

/// Where an open connection's messages can be bent, for the oracle's proofs: asked once per connection, when
/// its ``ConnectionRun`` is made, and resolved into plain sequence numbers, so the per-message path never
/// calls it. The conformances that break something live in the tests; the defaults are the honest client.
package protocol MessageFaults: Sendable {
    /// The sequence number of an echo request the connection makes but never writes (its reply can never
    /// come). Honest: nil.
    func echoRequestNotSent() -> UInt64?
    /// The sequence number of a pushed message (receive pattern) the connection loses on arrival. Honest: nil.
    func pushedMessageLost() -> UInt64?
}

extension MessageFaults {
    package func echoRequestNotSent() -> UInt64? { nil }
    package func pushedMessageLost() -> UInt64? { nil }
}

/// The state of one open connection's pattern, run by the connection's one task: the virtual user's own task reads
/// (``run(_:)``), and everything else that is due on a clock — pings and pong deadlines, the open model's sends and
/// the think times between closed-model requests — comes from the loop's timers (`ConnectionRun+Timers.swift`), as
/// does the run's stop (a hook on the ``StopLatch``). Every method runs isolated to the connection's
/// ``WebSocketManager`` (an `isolated` parameter, or `assumeIsolated` in a timer's callback on the loop thread), so
/// they never race and a message costs no actor hop.
final class ConnectionRun: @unchecked Sendable {
    let id: Int
    let plan: ScenarioPlan
    let manager: WebSocketManager
    let recorder: LoopRecorder
    let latch: StopLatch
    let loop: EventLoop
    var random: SeededRandomNumberGenerator
    let clock = LoopClock()
    let isText: Bool
    let headerSize: Int

    // The per-message state below, and the timers' in `ConnectionRun+Timers.swift`, is not checked for exclusive
    // access at run time: it is confined to the manager's isolation, and every access is a plain read or store (none
    // is passed inout or held across a call), so none can overlap another. A checked access is a runtime call, and a
    // message made two dozen of them.
    @exclusivity(unchecked) var nextSequence: UInt64 = 0
    @exclusivity(unchecked) var expectedReply: UInt64 = 0
    @exclusivity(unchecked) var outstanding = 0
    /// Typed requests in flight: id → intended send time.
    var inFlight: [UInt64: UInt64] = [:]
    var lastArrival: LoopClock.Instant?
    /// The closed model's request that was queued while the transport could not take it: the reader's task writes it.
    @exclusivity(unchecked) private var requestAwaitingWrite: WebSocketConnection.Message?

    /// Open model: the most requests one connection keeps unanswered before it drops scheduled sends.
    static let maximumOutstanding = 1024

    /// The furthest ahead of the sequence due a pushed message may be and still count its gap as lost messages
    /// (2^20: over 17 minutes of consecutive losses at the push stream's fastest interval, 1 ms). Further is a
    /// `push_mismatch` (docs/REPORT.md).
    static let maximumPushGap: UInt64 = 1 << 20

    let ledger: InvariantLedger
    let history: ActorHistory
    /// The echo request not written and the pushed message lost, under a test's fault; nil (always, in real
    /// runs) otherwise. Each is spent once it happened.
    @exclusivity(unchecked) private var unsentRequest: UInt64?
    @exclusivity(unchecked) private var lostPush: UInt64?

    // The timers' state (`ConnectionRun+Timers.swift`).
    /// The next ping; the pong deadline of the ping in flight (`pendingPing`).
    var pingTimer: LoopTimer?
    var pongDeadline: LoopTimer?
    var pendingPing: UInt64?
    /// The open model's next slot, or the end of a think time.
    @exclusivity(unchecked) var sendTimer: LoopTimer?
    /// Whether the open model's timetable or the think-time sender still runs (not stopped, spent, failed or ended).
    @exclusivity(unchecked) var isPacing = false
    /// The open model's next slot and the time between slots (loop-clock ns).
    @exclusivity(unchecked) var nextSlot: UInt64 = 0
    @exclusivity(unchecked) var slotInterval: UInt64 = 0
    /// Set when the close waits for the requests in flight: the reason it will carry.
    @exclusivity(unchecked) var closeReasonOnceAnswered: String?
    /// Whether the stop hook ran (it runs once).
    @exclusivity(unchecked) var isStopHandled = false
    @exclusivity(unchecked) private(set) var isReaderDone = false

    init(
        id: Int, plan: ScenarioPlan, manager: WebSocketManager, recorder: LoopRecorder, latch: StopLatch,
        random: SeededRandomNumberGenerator, loop: EventLoop, ledger: InvariantLedger, history: ActorHistory
    ) {
        self.ledger = ledger
        self.history = history
        if let faults = plan.faults.messages {
            unsentRequest = faults.echoRequestNotSent()
            lostPush = faults.pushedMessageLost()
        }
        self.id = id
        self.plan = plan
        self.manager = manager
        self.recorder = recorder
        self.latch = latch
        self.random = random
        self.loop = loop
        isText = plan.websocket.messageFormat == .text
        headerSize = EchoPayload.headerSize * (isText ? 2 : 1)
    }

    deinit {
        // The reader's end disarmed them already; a timer outliving its run would find it gone.
        for timer in [pingTimer, pongDeadline, sendTimer] { timer?.cancel() }
    }

    var isStopping: Bool { latch.isStopped(id) }

    /// Messages this connection received (idle and receive patterns).
    @exclusivity(unchecked) var receivedCount: UInt64 = 0

    /// Whether `messagesPerConnection` is used up: requests sent (echo, typed) or messages received.
    var isBudgetSpent: Bool {
        guard let limit = plan.websocket.messagesPerConnection else { return false }
        switch plan.websocket.pattern {
        case .echo, .typed: return nextSequence >= UInt64(limit)
        case .idle, .receive: return receivedCount >= UInt64(limit)
        case .flow: return false  // a flow's steps bound it (FlowRun)
        }
    }

    /// Runs the pattern until the connection ends: this task reads, the loop's timers ping and pace the sends, and
    /// the run's stop queues the close (once the requests in flight are answered). Never inlined, nor are the
    /// readers it calls: an async callee inlined merges its frame into the caller's, and the idle reader would
    /// carry the other patterns' frames.
    @inline(never)
    func run(_ manager: isolated WebSocketManager) async -> VirtualUser.Ending {
        startTimers(manager)
        defer { readerEnded(manager) }
        // One cancellation handler for every read of the pattern, not one per message.
        guard let stream = manager.stream else { return await runPattern(manager) }
        return await stream.withReadsCancelledOnce { await runPattern(manager) }
    }

    /// The pattern's reader (see ``run(_:)``).
    @inline(never)
    private func runPattern(_ manager: isolated WebSocketManager) async -> VirtualUser.Ending {
        switch (plan.websocket.pattern, plan.websocket.schedule) {
        case (.echo, .closed(.zero)), (.typed, .closed(.zero)):
            return await requestResponseLoop(manager)
        case (.echo, _), (.typed, _):
            return await readReplies(manager)  // the timers pace the requests
        case (.idle, _), (.receive, _):
            if let subscription = plan.websocket.subscribe {
                do { try await manager.send(text: subscription) } catch { return ended(by: error) }
            }
            return await readPushed(manager)
        case (.flow, _):
            return .finished  // flows run in FlowRun, not here
        }
    }

    /// The reader returns: nothing more is due, nothing more will be answered.
    private func readerEnded(_ manager: isolated WebSocketManager) {
        isReaderDone = true
        isPacing = false
        for timer in [pingTimer, pongDeadline, sendTimer] { timer?.cancel() }
        latch.removeStopHook(id)
        manager.pongObserver = nil
    }

    // MARK: Requests

    private func nextSize() -> Int {
        switch plan.websocket.messageSize {
        case .fixed(let size): return size
        case .uniform(let range): return Int.random(in: range, using: &random)
        case .weighted(let choices):
            let total = choices.reduce(0) { $0 + $1.weight }
            var draw = Double.random(in: 0..<total, using: &random)
            for choice in choices {
                if draw < choice.weight { return choice.size }
                draw -= choice.weight
            }
            return choices.last!.size
        }
    }

    /// The next request, due at `intended` (loop-clock ns).
    private func makeRequest(intended: UInt64) -> WebSocketConnection.Message {
        let sequence = nextSequence
        nextSequence += 1
        let size = nextSize()
        if plan.websocket.pattern == .typed {
            inFlight[sequence] = intended
            let envelope = TypedEnvelope(
                id: sequence, type: plan.websocket.typeName,
                payload: String(decoding: plan.filler.prefix(size), as: UTF8.self))
            // Encoding a number and two strings cannot fail (no floats, no custom encoders).
            return .text(String(decoding: (try? TypedEnvelope.encoder.encode(envelope)) ?? Data(), as: UTF8.self))
        }
        let count = max(size, headerSize)
        if isText {
            return .text(EchoPayload.text(count: count, filler: plan.filler, sequence: sequence, intendedNanoseconds: intended))
        }
        var bytes = Array(plan.filler.prefix(count))
        EchoPayload.stamp(&bytes, sequence: sequence, intendedNanoseconds: intended, isText: false)
        return .binary(bytes)
    }

    /// The next request, counted as outstanding before it is written (so a stop that looks meanwhile waits for its
    /// reply); nil when a test's fault swallows it.
    private func prepareRequest(intended: UInt64) -> WebSocketConnection.Message? {
        let message = makeRequest(intended: intended)
        if let unsent = unsentRequest, unsent == nextSequence &- 1 {
            unsentRequest = nil  // a fault: this request is never written, its reply can never come
            return nil
        }
        outstanding += 1
        return message
    }

    private func requestWritten(_ message: WebSocketConnection.Message) {
        recorder.messagesSent += 1
        recorder.bytesSent += UInt64(message.byteCount)
    }

    private func requestFailed(_ manager: isolated WebSocketManager) {
        outstanding -= 1
        inFlight.removeValue(forKey: nextSequence - 1)
        didAnswer(manager)
    }

    /// Sends the next request from this task (the closed model without think time). Inlined into its loop, and a
    /// plain call unless the transport would make it wait: per message, no async call (each costs a frame and the
    /// runtime's executor checks, under the task's status-record lock).
    @inline(__always)
    private func send(_ manager: isolated WebSocketManager, intended: UInt64) async throws(WebSocketClientError) {
        guard let message = prepareRequest(intended: intended) else { return }
        do {
            if try !manager.sendIfReady(message) { try await manager.flushQueued() }
        } catch {
            requestFailed(manager)
            throw error
        }
        requestWritten(message)
    }

    /// Sends the next request from a timer's callback, without waiting for the transport.
    func sendWithoutWaiting(_ manager: isolated WebSocketManager, intended: UInt64) throws(WebSocketClientError) {
        guard let message = prepareRequest(intended: intended) else { return }
        do {
            try manager.sendWithoutWaiting(message)
        } catch {
            requestFailed(manager)
            throw error
        }
        requestWritten(message)
    }

    /// Accounts a reply: its round trip from the intended send time, and sequence gaps.
    private func didReceiveReply(_ manager: isolated WebSocketManager, _ message: WebSocketConnection.Message) {
        let now = clock.now.nanoseconds
        recorder.messagesReceived += 1
        recorder.bytesReceived += UInt64(message.byteCount)
        let reply: (sequence: UInt64, intended: UInt64)?
        if plan.websocket.pattern == .typed {
            // A reply that does not decode is not ignored: it is counted as `typed_undecodable` below.
            if case .text(let text) = message, let envelope = try? TypedEnvelope.decoder.decode(TypedEnvelope.self, from: Data(text.utf8)) {
                reply = inFlight.removeValue(forKey: envelope.id).map { (envelope.id, $0) }
                if reply == nil { recorder.recordError(EngineErrorCode.typedUnmatched) }
            } else {
                recorder.recordError(EngineErrorCode.typedUndecodable)
                reply = nil
            }
        } else {
            switch message {
            case .binary(let bytes): reply = EchoPayload.read(bytes, isText: false).map { ($0.sequence, $0.intendedNanoseconds) }
            case .text(let text): reply = EchoPayload.read(text.utf8, isText: true).map { ($0.sequence, $0.intendedNanoseconds) }
            }
            if reply == nil { recorder.recordError(EngineErrorCode.echoMismatch) }
        }
        guard var reply else { return }
        // A sequence this connection never sent (a server that sends garbage, e.g. eight 0xFF bytes) answers
        // no request: it is a mismatch, never a loss of 2^64 messages.
        if plan.websocket.pattern == .echo && reply.sequence >= nextSequence {
            recorder.recordError(EngineErrorCode.echoMismatch)
            return
        }
        if reply.intended > now { reply.intended = now }
        outstanding = max(0, outstanding - 1)
        didAnswer(manager)
        recorder.messageRoundTrip.record((now - reply.intended) / 1000)
        guard plan.websocket.pattern == .echo else { return }
        ledger.check(.messageSequence, reply.sequence == expectedReply, actor: history,
                     "echo reply #\(reply.sequence) where #\(expectedReply) was due")
        if reply.sequence == expectedReply {
            expectedReply += 1
        } else if reply.sequence > expectedReply {
            recorder.messagesLost = recorder.messagesLost.addingSaturated(reply.sequence - expectedReply)
            expectedReply = reply.sequence + 1  // below nextSequence (checked above): cannot overflow
        } else {
            recorder.recordError(EngineErrorCode.echoOutOfOrder)
        }
    }

    /// Closed model without think time: send, read until the reply, repeat. Each reply and the request after it are
    /// handled where the reply is read (``WebSocketManager/receiveEach(_:)``: on the loop thread, the task parked), so
    /// a message costs no task wake-up; the task itself sends only the first request and any whose write must wait.
    /// (The connection is read almost all the time, so pongs are timed as they arrive.)
    @inline(never)
    private func requestResponseLoop(_ manager: isolated WebSocketManager) async -> VirtualUser.Ending {
        do throws(WebSocketClientError) {
            while true {
                if let request = requestAwaitingWrite {
                    requestAwaitingWrite = nil
                    do { try await manager.flushQueued() } catch { requestFailed(manager); throw error }
                    requestWritten(request)
                } else if outstanding == 0 {
                    if isStopping || isBudgetSpent { return .finished }
                    try await send(manager, intended: clock.now.nanoseconds)
                    continue  // a test's fault may have swallowed it: then the next
                }
                try await manager.receiveEach { manager, reply throws(WebSocketClientError) in try self.answer(manager, reply) }
                if outstanding == 0 && requestAwaitingWrite == nil { return .finished }  // stopped, or the budget spent
            }
        } catch {
            return ended(by: error)
        }
    }

    /// A reply in ``requestResponseLoop(_:)``, on the loop thread: accounted, then the next request written at once;
    /// false when the loop's task must go on instead — the run stopped or the budget is spent (nothing unanswered),
    /// or the request's write must wait (``requestAwaitingWrite``).
    private func answer(_ manager: isolated WebSocketManager, _ reply: WebSocketConnection.Message)
        throws(WebSocketClientError) -> Bool {
        didReceiveReply(manager, reply)
        while outstanding == 0 {
            if isStopping || isBudgetSpent { return false }
            guard let request = prepareRequest(intended: clock.now.nanoseconds) else { continue }  // a test's fault
            do {
                if try !manager.sendIfReady(request) {
                    requestAwaitingWrite = request
                    return false
                }
            } catch {
                requestFailed(manager)
                throw error
            }
            requestWritten(request)
        }
        return true
    }

    /// The reader when the timers send (open model, or closed with think time): replies until the connection
    /// closes, each accounted where it is read (``WebSocketManager/receiveEach(_:)``), the task parked meanwhile.
    @inline(never)
    private func readReplies(_ manager: isolated WebSocketManager) async -> VirtualUser.Ending {
        do {
            try await manager.receiveEach { manager, reply throws(WebSocketClientError) in
                self.didReceiveReply(manager, reply)
                return true
            }
        } catch {
            return ended(by: error)
        }
        return .finished  // not reached: the handler never stops, the connection's end throws
    }

    // MARK: Pushed messages

    /// idle and receive: count what the server sends, and the gaps between messages.
    ///
    /// Its one await is the read: an idle connection's task parks here, and every byte of this frame (and of the
    /// frames above it) is held per connection for as long as it is idle.
    @inline(never)
    private func readPushed(_ manager: isolated WebSocketManager) async -> VirtualUser.Ending {
        while true {
            let message: WebSocketConnection.Message
            do { message = try await manager.receive() } catch { return ended(by: error) }
            if countPushed(message) && isBudgetSpent && manager.state == .open {
                manager.beginClosingWithoutWaiting(code: .normalClosure, reason: "done")
            }
        }
    }

    /// Counts a pushed message and its gap since the last, and checks the push stream's sequence; false when a test's
    /// fault lost it.
    private func countPushed(_ message: WebSocketConnection.Message) -> Bool {
        let now = clock.now
        recorder.messagesReceived += 1
        recorder.bytesReceived += UInt64(message.byteCount)
        if let last = lastArrival { recorder.messageGap.record(microseconds: last.duration(to: now)) }
        lastArrival = now
        if case .binary(let bytes) = message, let push = PushStream.read(bytes) {
            if let lost = lostPush, push.sequence == lost {
                lostPush = nil  // a fault: this pushed message is lost on the client
                return false
            }
            if push.sequence > expectedReply && push.sequence - expectedReply > Self.maximumPushGap {
                // The server picks the sequence (any UInt64, eight 0xFF bytes included). A jump no honest
                // stream makes is a mismatch, not 2^64 lost messages; the sequence due stays where it was, so
                // the honest pushes after the lie are not counted as violations.
                recorder.recordError(EngineErrorCode.pushMismatch)
            } else {
                ledger.check(.messageSequence, push.sequence == expectedReply, actor: history,
                             "pushed message #\(push.sequence) where #\(expectedReply) was due")
                if push.sequence > expectedReply {
                    recorder.messagesLost = recorder.messagesLost.addingSaturated(push.sequence - expectedReply)
                }
                expectedReply = max(expectedReply, push.sequence.addingSaturated(1))
            }
        }
        receivedCount += 1
        return true
    }

    /// How a pattern ends when the connection fails under it.
    private func ended(by error: WebSocketClientError) -> VirtualUser.Ending {
        if isStopping { return .stopped }
        if isBudgetSpent && error.code == .notConnected { return .finished }
        if error.code != .notConnected { recorder.recordError(error.code) }
        return .dropped
    }
}

/// The typed pattern's envelope: a request and its response share the `id`.
struct TypedEnvelope: Codable {
    var id: UInt64
    var type: String
    var payload: String

    static let encoder = JSONEncoder()
    static let decoder = JSONDecoder()
}

extension UInt64 {
    /// `self + other`, or `UInt64.max` where that overflows: counters fed by a peer's numbers saturate.
    func addingSaturated(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}

extension WebSocketConnection.Message {
    /// The payload size on the wire (before compression).
    var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let bytes): bytes.count
        }
    }
}

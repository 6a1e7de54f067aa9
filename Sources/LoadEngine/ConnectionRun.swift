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

/// The state of one open connection's pattern, shared by its reader, its sender (open model, or closed
/// with think time) and the connection's own task (pings, graceful stop). Every method runs isolated to
/// the connection's ``WebSocketManager`` (an `isolated` parameter), so they never race and a message costs
/// no actor hop.
final class ConnectionRun: @unchecked Sendable {
    let id: Int
    let plan: ScenarioPlan
    let recorder: LoopRecorder
    let latch: StopLatch
    let loop: EventLoop
    var random: SeededRandomNumberGenerator
    let clock = LoopClock()
    let isText: Bool
    let headerSize: Int

    var nextSequence: UInt64 = 0
    var expectedReply: UInt64 = 0
    var outstanding = 0
    /// Typed requests in flight: id → intended send time.
    var inFlight: [UInt64: UInt64] = [:]
    var lastArrival: LoopClock.Instant?

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
    private var unsentRequest: UInt64?
    private var lostPush: UInt64?

    init(
        id: Int, plan: ScenarioPlan, recorder: LoopRecorder, latch: StopLatch, random: SeededRandomNumberGenerator,
        loop: EventLoop, ledger: InvariantLedger, history: ActorHistory
    ) {
        self.ledger = ledger
        self.history = history
        if let faults = plan.faults.messages {
            unsentRequest = faults.echoRequestNotSent()
            lostPush = faults.pushedMessageLost()
        }
        self.id = id
        self.plan = plan
        self.recorder = recorder
        self.latch = latch
        self.random = random
        self.loop = loop
        isText = plan.websocket.messageFormat == .text
        headerSize = EchoPayload.headerSize * (isText ? 2 : 1)
    }

    var isStopping: Bool { latch.isStopped(id) }

    /// Messages this connection received (idle and receive patterns).
    var receivedCount: UInt64 = 0

    /// Whether `messagesPerConnection` is used up: requests sent (echo, typed) or messages received.
    private var isBudgetSpent: Bool {
        guard let limit = plan.websocket.messagesPerConnection else { return false }
        switch plan.websocket.pattern {
        case .echo, .typed: return nextSequence >= UInt64(limit)
        case .idle, .receive: return receivedCount >= UInt64(limit)
        case .flow: return false  // a flow's steps bound it (FlowRun)
        }
    }

    /// The reader: runs the pattern's receive side until the connection ends.
    func runPattern(_ manager: isolated WebSocketManager) async -> VirtualUser.Ending {
        switch (plan.websocket.pattern, plan.websocket.schedule) {
        case (.echo, .closed(.zero)), (.typed, .closed(.zero)):
            return await requestResponseLoop(manager)
        case (.echo, _), (.typed, _):
            return await readReplies(manager)  // a separate sender paces the requests
        case (.idle, _), (.receive, _):
            if let subscription = plan.websocket.subscribe {
                do { try await manager.send(text: subscription) } catch { return ended(by: error) }
            }
            return await readPushed(manager)
        case (.flow, _):
            return .finished  // flows run in FlowRun, not here
        }
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
        var bytes = Array(plan.filler.prefix(max(size, headerSize)))
        EchoPayload.stamp(&bytes, sequence: sequence, intendedNanoseconds: intended, isText: isText)
        return isText ? .text(String(decoding: bytes, as: UTF8.self)) : .binary(bytes)
    }

    private func send(_ manager: isolated WebSocketManager, intended: UInt64) async throws(WebSocketClientError) {
        let message = makeRequest(intended: intended)
        if let unsent = unsentRequest, unsent == nextSequence &- 1 {
            unsentRequest = nil  // a fault: this request is never written, its reply can never come
            return
        }
        // Counted before the write completes, so a graceful stop that looks meanwhile waits for its reply.
        outstanding += 1
        do {
            try await manager.send(message)
        } catch {
            outstanding -= 1
            inFlight.removeValue(forKey: nextSequence - 1)
            wakeIfAnswered()
            throw error
        }
        recorder.messagesSent += 1
        recorder.bytesSent += UInt64(message.byteCount)
    }

    // MARK: Waiting for replies

    /// Tasks waiting until every request is answered (or the reader has ended).
    private var answerWaiters: [CheckedContinuation<Void, Never>] = []
    private var isReaderDone = false
    /// True once the pattern's reader has returned (the connection is over).
    var hasReaderEnded: Bool { isReaderDone }
    private var isAnswered: Bool { outstanding == 0 || isReaderDone }

    /// Returns once no request is unanswered, or the connection's reader has ended.
    func waitUntilAnswered(_ manager: isolated WebSocketManager) async {
        guard !isAnswered else { return }
        await withCheckedContinuation { answerWaiters.append($0) }
    }

    private func wakeIfAnswered() {
        guard isAnswered, !answerWaiters.isEmpty else { return }
        let waiters = answerWaiters
        answerWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Every reader calls this as it returns: nothing more will be answered.
    private func readerEnded() {
        isReaderDone = true
        wakeIfAnswered()
    }

    /// Accounts a reply: its round trip from the intended send time, and sequence gaps.
    private func didReceiveReply(_ message: WebSocketConnection.Message) {
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
        wakeIfAnswered()
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

    /// Closed model without think time: send, read until the reply, repeat — one task, no wake-ups.
    /// (The connection is read almost all the time, so pongs are timed as they arrive.)
    private func requestResponseLoop(_ manager: isolated WebSocketManager) async -> VirtualUser.Ending {
        defer { readerEnded() }
        while !isStopping {
            if isBudgetSpent { return .finished }
            do {
                try await send(manager, intended: clock.now.nanoseconds)
                while outstanding > 0 { didReceiveReply(try await manager.receive()) }
            } catch {
                return ended(by: error)
            }
        }
        return .finished
    }

    /// Closed model with think time, sender side: send, wait for the reader to see the reply, think.
    /// Reading goes on while thinking, so pings and server messages are handled when they arrive.
    func sendWithThinkTime(_ manager: isolated WebSocketManager, think: Duration) async {
        while !isStopping && !isBudgetSpent && !isReaderDone {
            do { try await send(manager, intended: clock.now.nanoseconds) } catch { return }
            await waitUntilAnswered(manager)
            do { try await loop.sleep(for: think) } catch { return }
        }
        if isBudgetSpent && !isStopping && !isReaderDone {
            await waitUntilAnswered(manager)
            await manager.beginClosing(code: .normalClosure, reason: "done")
        }
    }

    /// The reader when a separate task sends (open model, or closed with think time): replies until the
    /// connection closes.
    private func readReplies(_ manager: isolated WebSocketManager) async -> VirtualUser.Ending {
        defer { readerEnded() }
        while true {
            do {
                didReceiveReply(try await manager.receive())
            } catch {
                return ended(by: error)
            }
        }
    }

    /// Open model, sender side: a fixed-rate timetable with a random phase. Late sends go out at once and
    /// are measured from when they were due; past `maximumOutstanding` unanswered, sends are dropped
    /// (and counted).
    func sendOnSchedule(_ manager: isolated WebSocketManager, rate: Double) async {
        let interval = UInt64(max(1, (1e9 / rate).rounded()))
        var next = clock.now.nanoseconds + UInt64.random(in: 0..<interval, using: &random)
        while !isStopping && !isBudgetSpent {
            let now = clock.now.nanoseconds
            if next > now {
                do { try await clock.sleep(until: LoopClock.Instant(nanoseconds: next)) } catch { return }
                continue
            }
            while next <= now && !isStopping && !isBudgetSpent {
                recorder.messagesScheduled += 1
                if outstanding >= Self.maximumOutstanding {
                    recorder.messagesDropped += 1  // no sequence number spent: a drop is not a loss
                } else {
                    do { try await send(manager, intended: next) } catch { return }
                }
                next += interval
            }
        }
        // Slots due before the stop that a lagging sender never reached are part of the schedule too:
        // the delivered fraction must show them as missed, not pretend they were never due.
        if let stop = latch.stopInstant(id), next < stop {
            let missed = (stop - next + interval - 1) / interval
            recorder.messagesScheduled += missed
            recorder.messagesMissed += missed
        }
        // A spent budget ends the connection once the replies are in.
        if isBudgetSpent && !isStopping {
            await waitUntilAnswered(manager)
            await manager.beginClosing(code: .normalClosure, reason: "done")
        }
    }

    // MARK: Pushed messages and pings

    /// idle and receive: count what the server sends, and the gaps between messages.
    private func readPushed(_ manager: isolated WebSocketManager) async -> VirtualUser.Ending {
        defer { readerEnded() }
        while true {
            let message: WebSocketConnection.Message
            do { message = try await manager.receive() } catch { return ended(by: error) }
            let now = clock.now
            recorder.messagesReceived += 1
            recorder.bytesReceived += UInt64(message.byteCount)
            if let last = lastArrival { recorder.messageGap.record(microseconds: last.duration(to: now)) }
            lastArrival = now
            if case .binary(let bytes) = message, let push = PushStream.read(bytes) {
                if let lost = lostPush, push.sequence == lost {
                    lostPush = nil  // a fault: this pushed message is lost on the client
                    continue
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
            if isBudgetSpent && manager.state == .open { await manager.beginClosing(code: .normalClosure, reason: "done") }
        }
    }

    /// Sends one ping and records its round trip; a pong not back within the scenario's `pingTimeout`
    /// counts a `pong_timeout` and drops the connection (its reader then ends with 1006).
    func ping(_ manager: isolated WebSocketManager) async {
        guard manager.state == .open else { return }
        let timeout = plan.websocket.pingTimeout
        let recorder = self.recorder
        // Timer callbacks run on the loop thread outside any job, where the manager's isolation can be assumed.
        let timer = ScheduledTimer(on: loop, after: timeout) {
            manager.assumeIsolated { manager in
                guard manager.state == .open else { return }
                recorder.recordError(WebSocketClientError.Code.pongTimeout)
                manager.abort(reason: "no pong within \(timeout)")
            }
        }
        defer { timer.cancel() }
        // A ping fails only when the connection ends under it; the reader records how it ended.
        if let roundTrip = try? await manager.sendPing() { recorder.pingRoundTrip.record(microseconds: roundTrip) }
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

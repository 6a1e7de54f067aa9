import Profile
import Reporting
import Runtime

/// What every run checks, for every actor (DESIGN.md, "Correctness checking").
package enum Invariant: String, Sendable, CaseIterable {
    /// Each reconnect delay lies within the policy's bounds for its attempt and jitter, and the actor did
    /// not reconnect before it had passed.
    case reconnectDelay = "reconnect.delay_within_bounds"
    /// The first reconnect after a successful connection is attempt 1.
    case attemptsReset = "reconnect.attempts_reset_after_success"
    /// No attempt beyond the policy's maximum.
    case maximumAttempts = "reconnect.max_attempts"
    /// An actor stopped on purpose never connects again.
    case noReconnectAfterIntentional = "reconnect.none_after_intentional_disconnect"
    /// At most one live connection per actor.
    case oneLiveConnection = "connection.one_live_per_actor"
    /// A connection counts as open only after a valid 101 (state open, handshake timed).
    case connectedAfterHandshake = "protocol.connected_after_101"
    /// Echo replies come back in sequence: no loss, duplication or reordering.
    case messageSequence = "messages.in_sequence"
    /// After the run every connection's task has ended and every runtime handle is closed.
    case cancellation = "cancellation.all_ended_and_closed"
    /// Each transfer task's completion is delivered exactly once.
    case transferCompletedOnce = "transfer.completed_once"
    /// A finished download (resumed or not) has the expected SHA-256.
    case transferDigest = "transfer.digest_identical"
    /// No partial or temporary transfer file is left behind once a task ended (and none after the run).
    case transferNoTemporaryFiles = "transfer.no_temporary_files"
    /// Every connection that ended has a close outcome: a closing handshake with a code, or (1006) the
    /// reason it had none.
    case closeAccounted = "protocol.close_accounted"
    /// A client the run (or a ramp-down) stopped ends within `gracefulStop`; `ws.stop_duration` has the slowest.
    case stopWithinBound = "cancellation.stopped_within_bound"
    /// Once a connection has ended (`.disconnected`), nothing more comes from it.
    case nothingAfterDisconnect = "events.none_after_disconnected"
    /// Every flow wait (expect, think, pacing) ends exactly once: matched, timed out, stopped or closed.
    case flowExpectResolvedOnce = "flow.expect_resolved_once"
    /// No flow message is sent built from a template naming an undefined variable or feeder column.
    case flowVariablesDefined = "flow.variables_defined"
    /// No inbound message is handed to a flow step after its connection closed.
    case flowNothingAfterClose = "flow.nothing_after_close"
    /// socketio: every ack id an emit asks for is new on its connection, and each is answered at most once.
    case flowAckAnsweredOnce = "flow.ack_answered_once"
    /// socketio: every Engine.IO ping of the server is answered before the connection ends, and no connection
    /// ends for a missing server ping.
    case socketIOHeartbeatHeld = "socketio.heartbeat_held"
    /// graphql-ws: every operation id ends at most once — by the server's `complete` or `error`, or the client's
    /// `complete` — and the client takes no result for it after its end.
    case graphQLSubscriptionEndsOnce = "graphql.subscription_ends_once"
}

/// The oracle's ledger on one loop: confined to the loop's thread like `LoopRecorder`. A check on the hot
/// path (one per echo reply) is an array increment, not checked for exclusive access at run time (a plain increment,
/// on the loop thread).
final class InvariantLedger: @unchecked Sendable {
    private static let invariants = Invariant.allCases
    @exclusivity(unchecked) private var checked = [UInt64](repeating: 0, count: Invariant.allCases.count)
    private var violations = [UInt64](repeating: 0, count: Invariant.allCases.count)
    private var examples: [Invariant: [InvariantReport.Example]] = [:]

    init() {
        assert(Self.invariants.enumerated().allSatisfy { $0.offset == $0.element.index }, "Invariant.index out of step")
    }

    /// Counts one observation of `invariant`; when it does not hold, a violation with the actor's history.
    @inline(__always)
    func check(_ invariant: Invariant, _ holds: Bool, actor: ActorHistory, _ detail: @autoclosure () -> String) {
        let index = invariant.index
        checked[index] &+= 1
        guard !holds else { return }
        violations[index] &+= 1
        if (examples[invariant]?.count ?? 0) < InvariantReport.maximumExamples {
            examples[invariant, default: []].append(
                .init(actor: actor.id, scenario: actor.scenario, detail: detail(), history: actor.events))
        }
    }

    func takeSnapshot() -> InvariantReport {
        var report = InvariantReport()
        for (index, invariant) in Self.invariants.enumerated() where checked[index] > 0 {
            report.checked[invariant.rawValue] = checked[index]
            report.violations[invariant.rawValue] = violations[index]
        }
        for (invariant, list) in examples { report.examples[invariant.rawValue] = list }
        checked = checked.map { _ in 0 }
        violations = violations.map { _ in 0 }
        examples = [:]
        return report
    }
}

extension Invariant {
    /// The position in `allCases`, for array-indexed counters.
    var index: Int {
        switch self {
        case .reconnectDelay: 0
        case .attemptsReset: 1
        case .maximumAttempts: 2
        case .noReconnectAfterIntentional: 3
        case .oneLiveConnection: 4
        case .connectedAfterHandshake: 5
        case .messageSequence: 6
        case .cancellation: 7
        case .transferCompletedOnce: 8
        case .transferDigest: 9
        case .transferNoTemporaryFiles: 10
        case .closeAccounted: 11
        case .stopWithinBound: 12
        case .nothingAfterDisconnect: 13
        case .flowExpectResolvedOnce: 14
        case .flowVariablesDefined: 15
        case .flowNothingAfterClose: 16
        case .flowAckAnsweredOnce: 17
        case .socketIOHeartbeatHeld: 18
        case .graphQLSubscriptionEndsOnce: 19
        }
    }
}

/// An actor's last few lifecycle events (connects, disconnects, backoffs — never per-message), for the
/// examples of violations. Loop-confined.
final class ActorHistory: @unchecked Sendable {
    static let capacity = 12
    let id: Int
    let scenario: String
    private let start: LoopClock.Instant
    private(set) var events: [String] = []

    init(id: Int, scenario: String, start: LoopClock.Instant) {
        self.id = id
        self.scenario = scenario
        self.start = start
    }

    func note(_ event: String, at now: LoopClock.Instant = LoopClock().now) {
        if events.count == Self.capacity { events.removeFirst() }
        events.append("+\(formatDuration(start.duration(to: now))) \(event)")
    }
}

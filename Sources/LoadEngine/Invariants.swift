import Reporting
import Runtime

/// What every run checks, for every actor (DESIGN.md, "Correctness checking").
public enum Invariant: String, Sendable, CaseIterable {
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
}

/// Switches that break wsload on purpose, for tests that prove each checker fires. All off in real runs;
/// the command line cannot set them.
public struct FaultSwitches: Sendable, Equatable {
    /// The reference's bug: reconnect delays truncated to whole seconds.
    public var truncateBackoffToWholeSeconds = false
    /// Keep counting attempts after a successful connection.
    public var keepAttemptsAfterSuccess = false
    /// Reconnect once after being stopped on purpose.
    public var reconnectAfterIntentionalDisconnect = false
    /// Skip sending one echo request (its sequence number goes unanswered).
    public var dropOneEchoMessage = false
    /// Leave one runtime handle open after the run.
    public var leakHandle = false

    public init() {}
}

/// The oracle's ledger on one loop: confined to the loop's thread like `LoopRecorder`.
final class InvariantLedger: @unchecked Sendable {
    private var report = InvariantReport()

    /// Counts one observation of `invariant`; when it does not hold, a violation with the actor's history.
    func check(_ invariant: Invariant, _ holds: Bool, actor: ActorHistory, _ detail: @autoclosure () -> String) {
        report.checked[invariant.rawValue, default: 0] += 1
        guard !holds else { return }
        report.violations[invariant.rawValue, default: 0] += 1
        if (report.examples[invariant.rawValue]?.count ?? 0) < InvariantReport.maximumExamples {
            report.examples[invariant.rawValue, default: []].append(
                .init(actor: actor.id, scenario: actor.scenario, detail: detail(), history: actor.events))
        }
    }

    func takeSnapshot() -> InvariantReport {
        defer { report = InvariantReport() }
        return report
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

import EmbeddedServer
import LoadEngine
import Profile
import Reporting
import Testing

/// The shape of a run a checker is proven on: the faulty run and the clean one differ only in the fault.
enum RunShape: String, Sendable, Hashable, CaseIterable, CustomTestStringConvertible {
    /// Echo connections dropped 50 ms after each handshake, reconnecting with exact (jitter-free) delays.
    case storm
    /// 3 echo connections of 5 (`echoFive`) or 10 (`echoTen`) requests each; the run ends when they are done.
    case echoFive, echoTen
    /// 4 echo connections with think time, stopped by the run after 1 s (long enough for each to connect on a
    /// busy box).
    case echoStopped
    /// 2 idle connections pinging, stopped after 300 ms.
    case idle
    /// 3 idle connections stopped after 500 ms with a `gracefulStop` of 300 ms, against a server that
    /// answers (`idleStopped`) or one that stopped reading (`idleStalled`: nothing can close within the bound).
    case idleStopped, idleStalled
    /// 3 connections of the `receive` pattern, 10 pushed messages each.
    case push
    /// 2 connections whose every connect is refused, with at most 2 reconnect attempts.
    case refused
    /// 2 download slots, 2 downloads of 64 KiB each.
    case downloads
    /// 2 download slots, 2 downloads of 1 MiB each, every one cut once and resumed.
    case interruptedDownloads
    /// 2 upload slots, 2 uploads of 64 KiB each.
    case uploads
    /// 1 upload slot, 2 multipart uploads.
    case multipartUploads
    /// 2 flow connections: a templated send, an expect, a think past the expect's `within`, a send naming an
    /// undefined variable (``FlowProofs``).
    case flowEcho
    /// 2 flow connections dropped by the server while a reply waits in their inbox (``FlowProofs``).
    case flowDropped
    /// 2 socketio flow connections against python-socketio pinging every second: two acked echoes, then 3 s
    /// across its heartbeat (``FlowProofs``).
    case socketIOChat
    /// 2 graphql-ws flow connections against strawberry-graphql: a query, a subscription the server completes after
    /// 3 results, then `unsubscribe` of it (``FlowProofs``).
    case graphQLSubscriptions

    var testDescription: String { rawValue }

    func run(faults: FaultSwitches = FaultSwitches()) async throws -> RunResult {
        switch self {
        case .storm:
            return try await stormRun(faults: faults)
        case .echoFive, .echoTen:
            return try await scenarioRun("""
                {"name": "s", "pattern": "echo", "connections": 3, "messagesPerConnection": \(self == .echoFive ? 5 : 10)}
                """, duration: "20s", faults: faults)
        case .echoStopped:
            return try await scenarioRun("""
                {"name": "s", "pattern": "echo", "connections": 4, "schedule": {"model": "closed", "thinkTime": "5ms"}}
                """, duration: "1s", faults: faults)
        case .idle:
            return try await scenarioRun("""
                {"name": "s", "pattern": "idle", "connections": 2, "pingInterval": "100ms"}
                """, duration: "300ms", faults: faults)
        case .idleStopped, .idleStalled:
            return try await scenarioRun("""
                {"name": "s", "pattern": "idle", "connections": 3, "pingInterval": "10s"}
                """, duration: "500ms", gracefulStop: "300ms", faults: faults,
                server: ServerConfiguration(chaos: ChaosOptions(isReadingStopped: self == .idleStalled)))
        case .push:
            return try await scenarioRun("""
                {"name": "s", "pattern": "receive", "connections": 3, "messagesPerConnection": 10,
                 "path": "/push?interval=5ms&size=64"}
                """, duration: "20s", faults: faults)
        case .refused:
            return try await refusedRun("""
                {"name": "s", "pattern": "echo", "connections": 2,
                 "reconnect": {"initial": "10ms", "max": "20ms", "multiplier": 2, "jitter": "none", "maxAttempts": 2}}
                """, faults: faults)
        case .downloads:
            return try await scenarioRun("""
                {"name": "dl", "kind": "download", "connections": 2, "transfer": {"size": "64KiB", "repeats": 2}}
                """, duration: "30s", gracefulStop: "10s", faults: faults)
        case .interruptedDownloads:
            return try await scenarioRun("""
                {"name": "dl", "kind": "download", "connections": 2, "transfer": {"size": "1MiB", "interrupt": 1, "repeats": 2}}
                """, duration: "30s", gracefulStop: "10s", faults: faults)
        case .uploads:
            return try await scenarioRun("""
                {"name": "up", "kind": "upload", "connections": 2, "transfer": {"size": "64KiB", "repeats": 2}}
                """, duration: "30s", gracefulStop: "10s", faults: faults)
        case .multipartUploads:
            return try await scenarioRun("""
                {"name": "form", "kind": "upload", "connections": 1,
                 "transfer": {"size": "100000", "method": "POST", "multipart": true, "repeats": 2}}
                """, duration: "30s", gracefulStop: "10s", faults: faults)
        case .flowEcho, .flowDropped, .socketIOChat, .graphQLSubscriptions:
            return try await FlowProofs.run(self, faults: faults)
        }
    }
}

/// One checker of the oracle and the fault that must make it fire: the run of `faulty` shape with
/// `faults` on must report violations of `invariant` with examples carrying each of `details`, while the
/// run of `clean` shape (the same, without the fault) reports none and checks it.
struct CheckerProof: Sendable, CustomTestStringConvertible {
    let invariant: Invariant
    /// What the fault makes the client (or server) do.
    let fault: String
    var faults = FaultSwitches()
    let faulty: RunShape
    var clean: RunShape?
    /// Each must be in the detail of some example (an invariant checked in several places has one per place).
    let details: [String]
    /// The exact violation count, where the fault fixes it.
    var count: UInt64?
    /// What else the same misbehaviour may violate.
    var alsoViolated: Set<Invariant> = []
    /// Further expectations on the faulty run.
    var expectations: @Sendable (RunResult) throws -> Void = { _ in }

    var cleanShape: RunShape { clean ?? faulty }
    var testDescription: String { "\(invariant.rawValue) (\(details.joined(separator: "; "))): \(fault)" }

    init(_ invariant: Invariant, _ fault: String, _ switchOn: WritableKeyPath<FaultSwitches, Bool>?, on faulty: RunShape,
         clean: RunShape? = nil, details: [String], count: UInt64? = nil, alsoViolated: Set<Invariant> = [],
         expectations: @escaping @Sendable (RunResult) throws -> Void = { _ in }) {
        self.invariant = invariant
        self.fault = fault
        if let switchOn { faults[keyPath: switchOn] = true }
        self.faulty = faulty
        self.clean = clean
        self.details = details
        self.count = count
        self.alsoViolated = alsoViolated
        self.expectations = expectations
    }

    static let all: [CheckerProof] = [
        .init(.reconnectDelay, "the reference's whole-second backoff", \.truncateBackoffToWholeSeconds, on: .storm,
              details: ["delay 0us outside 100ms–100ms for attempt 1"]) { result in
            let example = try #require(result.invariants.examples[Invariant.reconnectDelay.rawValue]?.first)
            #expect(example.scenario == "storm" && example.history.contains { $0.contains("disconnected 1006") })
        },
        .init(.reconnectDelay, "reconnects after half of each delay", \.cutBackoffShort, on: .storm,
              details: ["of a 100ms backoff"]) { result in
            let examples = result.invariants.examples[Invariant.reconnectDelay.rawValue] ?? []
            #expect(examples.allSatisfy { $0.detail.hasPrefix("waited ") }, "the delays drawn are right: \(examples)")
        },
        .init(.attemptsReset, "attempts keep counting after a success", \.keepAttemptsAfterSuccess, on: .storm,
              details: ["first reconnect after a success is attempt 2"]),
        .init(.maximumAttempts, "one reconnect attempt beyond maxAttempts", \.attemptBeyondMaximum, on: .refused,
              details: ["reconnect attempt 3 since the last success, of at most 2"], count: 2) { result in
            #expect(result.total.counter("ws.connect_attempts") == 8, "1 connect and 3 reconnects each")
        },
        .init(.noReconnectAfterIntentional, "reconnects once after the run stopped it",
              \.reconnectAfterIntentionalDisconnect, on: .echoStopped,
              details: ["connect attempt after the run stopped this actor"], count: 4),
        .init(.oneLiveConnection, "opens a second connection while the first is live", \.connectWhileLive,
              on: .echoStopped, details: ["2 live connections"], count: 4),
        .init(.connectedAfterHandshake, "the reference's `.connected` before the 101", \.connectedBeforeHandshake,
              on: .echoFive, details: ["before the 101 was validated"], count: 3) { result in
            // The connections themselves work: only the order of events was wrong.
            #expect(result.total.counter("ws.messages_received") == 15)
        },
        .init(.messageSequence, "echo request #2 is never sent", \.dropOneEchoMessage, on: .echoTen,
              details: ["echo reply #3 where #2 was due"], count: 3) { result in
            #expect(result.total.counter("ws.messages_lost") == 3)
        },
        .init(.messageSequence, "pushed message #2 is lost on the client", \.dropOnePushedMessage, on: .push,
              details: ["pushed message #3 where #2 was due"], count: 3) { result in
            #expect(result.total.counter("ws.messages_lost") == 3)
        },
        .init(.cancellation, "a runtime handle left open after the run", \.leakHandle, on: .idle,
              details: ["1 runtime handles open"], count: 1) { result in
            #expect(result.liveHandlesAfterStop == 1)
        },
        .init(.closeAccounted, "the reason of a 1006 is lost", \.forgetAbnormalCloseReason, on: .storm,
              details: ["closed 1006 without a reason"]) { result in
            #expect(violations(result, .closeAccounted) == result.total.disconnects[1006], "one per drop")
        },
        .init(.stopWithinBound, "a stalled server never answers the close", nil, on: .idleStalled, clean: .idleStopped,
              details: ["after it was stopped (gracefulStop 300ms)"], count: 3) { result in
            #expect(result.unfinishedConnections == 3)
            let slowest = try #require(result.total.histograms["ws.stop_duration"])
            #expect(slowest.totalCount == 3 && slowest.maximum > 300_000)
        },
        .init(.nothingAfterDisconnect, "a message delivered after the connection ended", \.deliverAfterDisconnect,
              on: .echoFive, details: ["a message was delivered after the connection ended"], count: 3),
        .init(.transferCompletedOnce, "a download's completion delivered twice", \.deliverCompletionTwice,
              on: .downloads, details: ["download 0 completed 2 times"], count: 1),
        .init(.transferCompletedOnce, "an upload's completion delivered twice", \.deliverCompletionTwice,
              on: .uploads, details: ["upload 0 completed 2 times"], count: 1),
        .init(.transferDigest, "a torn write in the partial file a resume keeps", \.corruptPartialFile,
              on: .interruptedDownloads, details: ["(resumed) digests to"], count: 4),
        .init(.transferNoTemporaryFiles, "a partial file forgotten after an interruption", \.forgetPartialFile,
              on: .interruptedDownloads, details: ["left behind after download", "temporary files left in"], count: 8),
        .init(.transferNoTemporaryFiles, "multipart bodies left behind", \.keepMultipartBody, on: .multipartUploads,
              details: ["multipart body left behind", "temporary files left in"], count: 4),
    ] + FlowProofs.all
}

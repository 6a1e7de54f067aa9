import EmbeddedServer
import Foundation
import JSON
import LoadEngine
import Reporting
import Testing
import TestSupport

/// A storm against a server that drops every connection after `closeAfter`, with a policy whose delays
/// are exact (no jitter), so every checker has something to check.
private func stormRun(faults: FaultSwitches, connections: Int = 6, duration: String = "2500ms") async throws -> RunResult {
    // Drops come 50 ms after each handshake, so even a connection that opens late (other suites loading
    // the cores) goes through a few drop-and-reconnect cycles.
    try await withServer(ServerConfiguration(chaos: ChaosOptions(closeAfter: .milliseconds(50), closeMode: .drop))) { server in
        try await LoadRun(profile: try profile("""
            {"version": 1, "name": "oracle", "target": "\(server.url)", "duration": "\(duration)", "seed": 8,
             "scenarios": [{"name": "storm", "pattern": "echo", "connections": \(connections),
                            "schedule": {"model": "closed", "thinkTime": "5ms"},
                            "reconnect": {"initial": "100ms", "max": "1s", "multiplier": 2, "jitter": "none", "maxAttempts": 5}}]}
            """), faults: faults).run()
    }
}

/// A run of `scenario` (a JSON scenario object) against a plain embedded server, with one fault switched on.
private func faultyRun(
    _ fault: WritableKeyPath<FaultSwitches, Bool>, duration: String, scenario: String
) async throws -> RunResult {
    var faults = FaultSwitches()
    faults[keyPath: fault] = true
    return try await withServer { server in
        try await LoadRun(profile: try profile("""
            {"version": 1, "name": "fault", "target": "\(server.url)", "duration": "\(duration)", "scenarios": [\(scenario)]}
            """), faults: faults).run()
    }
}

private func violations(_ result: RunResult, _ invariant: Invariant) -> UInt64 {
    result.invariants.violations[invariant.rawValue] ?? 0
}

@Suite("The correctness oracle", .serialized)
struct InvariantTests {
    @Test("a clean storm checks every invariant and finds nothing")
    func clean() async throws {
        let result = try await stormRun(faults: FaultSwitches())
        #expect(result.invariantsHeld, "\(result.invariants)")
        for invariant in [Invariant.reconnectDelay, .attemptsReset, .maximumAttempts, .noReconnectAfterIntentional,
                          .oneLiveConnection, .connectedAfterHandshake, .messageSequence, .cancellation, .closeAccounted,
                          .stopWithinBound, .nothingAfterDisconnect] {
            #expect((result.invariants.checked[invariant.rawValue] ?? 0) > 0, "\(invariant) was never checked")
        }
        #expect(result.total.counter("ws.reconnects") >= 1, "\(result.total.counters) \(result.total.errors) \(result.total.disconnects) unfinished \(result.unfinishedConnections) elapsed \(result.elapsed)")
        let report = RunReport.json(result, toolVersion: "t", commit: nil)
        #expect(report["invariantsHeld"] == .bool(true))
        #expect(report["invariants"]?["reconnect.delay_within_bounds"]?["violations"]?.integerValue == 0)
    }

    @Test("the reference's whole-second backoff is caught by the delay checker")
    func truncatedBackoff() async throws {
        var faults = FaultSwitches()
        faults.truncateBackoffToWholeSeconds = true
        let result = try await stormRun(faults: faults)
        #expect(violations(result, .reconnectDelay) > 0, "\(result.invariants.checked) \(result.total.counters) \(result.total.errors) \(result.total.disconnects) unfinished \(result.unfinishedConnections)")
        let example = try #require(result.invariants.examples[Invariant.reconnectDelay.rawValue]?.first)
        #expect(example.detail.contains("delay 0us outside 100ms–100ms for attempt 1"), "\(example.detail)")
        #expect(example.scenario == "storm" && example.history.contains { $0.contains("disconnected 1006") })
        #expect(violations(result, .messageSequence) == 0 && violations(result, .cancellation) == 0)
    }

    @Test("attempts that do not reset after a success are caught")
    func attemptsNotReset() async throws {
        var faults = FaultSwitches()
        faults.keepAttemptsAfterSuccess = true
        let result = try await stormRun(faults: faults)
        #expect(violations(result, .attemptsReset) > 0)
        #expect(violations(result, .reconnectDelay) == 0)
    }

    @Test("a reconnect after an intentional disconnect is caught, once per actor")
    func reconnectAfterStop() async throws {
        let result = try await faultyRun(\.reconnectAfterIntentionalDisconnect, duration: "500ms", scenario: """
            {"name": "s", "pattern": "echo", "connections": 4, "schedule": {"model": "closed", "thinkTime": "5ms"}}
            """)
        #expect(violations(result, .noReconnectAfterIntentional) == 4)
    }

    @Test("clients that cannot finish within gracefulStop (a stalled server never answers the close) are violations, with the slowest stop reported")
    func stopBeyondBound() async throws {
        let result = try await withServer(ServerConfiguration(chaos: ChaosOptions(isReadingStopped: true))) { server in
            try await LoadRun(profile: try profile("""
                {"version": 1, "name": "stalled", "target": "\(server.url)", "duration": "500ms", "gracefulStop": "300ms",
                 "scenarios": [{"name": "s", "pattern": "idle", "connections": 3, "pingInterval": "10s"}]}
                """)).run()
        }
        #expect(result.unfinishedConnections == 3)
        #expect(violations(result, .stopWithinBound) == 3, "\(result.invariants)")
        let slowest = try #require(result.total.histograms["ws.stop_duration"])
        #expect(slowest.totalCount == 3 && slowest.maximum > 300_000)
    }

    @Test("the reference's `.connected` before the handshake is caught by the protocol checker")
    func connectedBeforeHandshake() async throws {
        let result = try await faultyRun(\.connectedBeforeHandshake, duration: "10s", scenario: """
            {"name": "s", "pattern": "echo", "connections": 3, "messagesPerConnection": 5}
            """)
        #expect(violations(result, .connectedAfterHandshake) == 3, "\(result.invariants)")
        let example = try #require(result.invariants.examples[Invariant.connectedAfterHandshake.rawValue]?.first)
        #expect(example.detail.contains("before the 101 was validated"), "\(example.detail)")
        // The connections themselves work: only the order of events was wrong.
        #expect(result.total.counter("ws.messages_received") == 15)
    }

    @Test("a dropped echo message is caught by the sequence checker")
    func droppedMessage() async throws {
        let result = try await faultyRun(\.dropOneEchoMessage, duration: "10s", scenario: """
            {"name": "s", "pattern": "echo", "connections": 3, "messagesPerConnection": 10}
            """)
        #expect(violations(result, .messageSequence) == 3)
        #expect(result.total.counter("ws.messages_lost") == 3)
        let example = try #require(result.invariants.examples[Invariant.messageSequence.rawValue]?.first)
        #expect(example.detail == "echo reply #3 where #2 was due")
    }

    @Test("a handle left open after the run is caught by the cancellation checker")
    func leakedHandle() async throws {
        let result = try await faultyRun(\.leakHandle, duration: "300ms", scenario: """
            {"name": "s", "pattern": "idle", "connections": 2, "pingInterval": "100ms"}
            """)
        #expect(violations(result, .cancellation) == 1)
        #expect(result.liveHandlesAfterStop == 1)
        #expect(!result.invariantsHeld)
    }

    @Test("invariant reports add exactly and read back from report JSON")
    func reportRoundTrip() throws {
        var first = InvariantReport()
        first.checked["a"] = 10
        first.violations["a"] = 1
        first.examples["a"] = [.init(actor: 7, scenario: "s", detail: "d", history: ["+1ms connect"])]
        var sum = first
        sum.add(first)
        #expect(sum.checked["a"] == 20 && sum.violations["a"] == 2 && sum.examples["a"]?.count == 2)
        let decoded = try InvariantReport(json: sum.json(), path: "invariants")
        #expect(decoded == sum)
        #expect(throws: ReportFormatError.self) { try InvariantReport(json: ["a": ["checked": "x"]], path: "invariants") }
    }
}

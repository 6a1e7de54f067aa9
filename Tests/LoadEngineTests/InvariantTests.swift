import EmbeddedServer
import Foundation
import JSON
import LoadEngine
import Profile
import Reporting
import Testing
import TestSupport

/// The oracle on a clean reconnect storm, and its report. The faults that make each checker fire are in
/// ``CheckerProofTests``.
@Suite("The correctness oracle", .serialized, .timeLimit(.minutes(2)))
struct InvariantTests {
    @Test("a clean storm: every invariant checked and held, every dropped connection recovered")
    func clean() async throws {
        let result = try await stormRun()
        let connections: UInt64 = 6
        let total = result.total
        let context = "\(total.counters) \(total.errors) \(total.disconnects) unfinished \(result.unfinishedConnections)"
        let stormInvariants: [Invariant] = [
            .reconnectDelay, .attemptsReset, .maximumAttempts, .noReconnectAfterIntentional, .oneLiveConnection,
            .connectedAfterHandshake, .messageSequence, .cancellation, .closeAccounted, .stopWithinBound,
            .nothingAfterDisconnect,
        ]
        let proven = CheckerProof.all.filter { $0.cleanShape == .storm }.map(\.invariant)
        expectHeld(result, checking: stormInvariants + proven)
        // Every connection opened ended once, with a close outcome; each actor's first connection aside,
        // every one of them was a recovery from a drop, and no actor gave up.
        let opened = total.counter("ws.connections_opened")
        #expect(opened > connections, "no connection was dropped and recovered: \(context)")
        #expect(total.disconnectCount == opened, "\(context)")
        #expect(total.disconnects[1006] ?? 0 >= opened - connections, "the drops: \(context)")
        #expect(total.samples("ws.reconnect_recovery") == opened - connections, "\(context)")
        #expect(total.counter("ws.reconnects") >= opened - connections, "\(context)")
        #expect(total.errors["reconnect_gave_up"] == nil, "\(context)")
        #expect(total.counter("ws.messages_lost") == 0 && total.counter("ws.messages_received") > 0, "\(context)")
        #expect(result.unfinishedConnections == 0 && result.liveHandlesAfterStop == 0 && result.waitingTasksAfterStop == 0)
        // The checks line up with what the clients did.
        #expect(checks(result, .oneLiveConnection) == opened && checks(result, .closeAccounted) == opened)
        #expect(checks(result, .nothingAfterDisconnect) == opened)
        #expect(checks(result, .maximumAttempts) == total.counter("ws.reconnects"))
        #expect(checks(result, .noReconnectAfterIntentional) == total.counter("ws.connect_attempts"))
        #expect(checks(result, .stopWithinBound) == connections)
        #expect(checks(result, .messageSequence) == total.counter("ws.messages_received"))
        #expect(checks(result, .reconnectDelay) >= opened - connections)
        let report = RunReport.json(result, toolVersion: "t", commit: nil)
        #expect(report["invariantsHeld"] == .bool(true))
        for invariant in stormInvariants {
            #expect(report["invariants"]?[invariant.rawValue]?["violations"]?.integerValue == 0, "\(invariant.rawValue)")
            #expect((report["invariants"]?[invariant.rawValue]?["checked"]?.integerValue ?? 0) > 0, "\(invariant.rawValue)")
        }
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

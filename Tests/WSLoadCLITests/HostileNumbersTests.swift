import Foundation
import JSON
import Profile
import Reporting
import Testing
import TestSupport

/// Hostile peers for the engine's counting (issue 13): an echo server whose replies claim sequences the
/// client never sent. `wsload` runs as a child, so a trap fails one test instead of the suite.
@Suite("hostile numbers: echo replies with impossible sequences", .serialized, .timeLimit(.minutes(3)))
struct HostileNumbersTests {
    @Test("echo replies with eight 0xFF bytes, sequences beyond what was sent and cut short: echo_mismatch, exit 0, report written",
          arguments: ["binary", "text"])
    func impossibleSequences(format: String) async throws {
        let scratch = try RunScratch()
        let (server, port) = try startPythonPeer("hostile_numbers.py")
        defer { server.stop() }
        // A message budget ends the run on its own however slow the box; the duration is only a backstop.
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "hostile", "target": "ws://127.0.0.1:\(port)/", "duration": "60s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2, "messagesPerConnection": 9,
                            "message": {"format": "\(format)", "size": 64}}]}
            """)
        let run = try await ChildProcess.run([wsloadExecutable, "run", profile, "--out", scratch.path("report.json")],
                                             within: .seconds(120))
        // Before the fix: trapped (arithmetic overflow in ConnectionRun's sequence accounting), no report.
        #expect(run.status == 0, "exit \(run.status): \(run.errors)")
        // Read back the way report/compare/merge read it: the report must be wsload-readable, not just JSON.
        let report = try LoadedReport(contentsOf: scratch.path("report.json")).result
        #expect(report.total.errors[EngineErrorCode.echoMismatch.rawValue] == 2 * 9, "one lie per request: \(report.total.errors)")
        #expect(report.total.counter(.messagesLost) == 0, "a lie is not a loss")
        #expect(report.invariantsHeld)
        #expect(report.total.counter(.messagesReceived) == 2 * 2 * 9)
    }

    @Test("pushed messages with sequences 2^64-1, past 2^53 and 2^20+1 ahead: push_mismatch, no loss, report reads back")
    func impossiblePushSequences() async throws {
        let scratch = try RunScratch()
        let (server, port) = try startPythonPeer("hostile_numbers.py")
        defer { server.stop() }
        // 12 honest pushes and 3 lies: the message budget ends the run; the duration is only a backstop.
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "hostile-push", "target": "ws://127.0.0.1:\(port)/", "duration": "60s",
             "scenarios": [{"name": "push", "pattern": "receive", "connections": 1, "messagesPerConnection": 15,
                            "path": "/push"}]}
            """)
        let run = try await ChildProcess.run([wsloadExecutable, "run", profile, "--out", scratch.path("report.json")],
                                             within: .seconds(120))
        #expect(run.status == 0, "exit \(run.status): \(run.errors)")
        // Before the fix: ws.messages_lost ~1.8e19, written as a Double no reader accepts (exit 65 here), and the
        // sequence due stuck at 2^64-1, so every honest push after the first lie was an invariant violation.
        let report = try LoadedReport(contentsOf: scratch.path("report.json")).result
        #expect(report.total.errors[EngineErrorCode.pushMismatch.rawValue] == 3, "\(report.total.errors)")
        #expect(report.total.counter(.messagesLost) == 0, "a lie is not a loss")
        #expect(report.invariantsHeld, "honest pushes after a lie are in sequence: \(report.invariants.violations)")
        #expect(report.total.counter(.messagesReceived) == 15)
    }

    @Test("a counter past 2^53 (a hostile peer's numbers, saturated) is written as 2^53-1 and reads back, in reports and the journal")
    func hugeCountersReadBack() throws {
        // Before: JSONValue(UInt64) wrote 1.8e19, which `integerValue` refuses: wsload could not read its own report.
        var metrics = MetricSet()
        metrics[counter: .messagesLost] = .max
        metrics.errors["echo_mismatch"] = 1 << 60
        metrics.disconnects[1006] = (1 << 53) + 1
        let read = try MetricSet(json: metrics.json(seconds: 1, operations: 0), path: "total.metrics")
        let limit = UInt64(JSONValue.maximumExactInteger)
        #expect(read.counter(.messagesLost) == limit)
        #expect(read.errors["echo_mismatch"] == limit)
        #expect(read.disconnects[1006] == limit)
        #expect(JSONValue(Int64.min) == .number(-Double(JSONValue.maximumExactInteger)))
        #expect(JSONValue(12345) == .number(12345))
    }
}

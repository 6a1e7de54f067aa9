import Foundation
import JSON
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
        let report = try scratch.json("report.json")
        let mismatches = try #require(report["errors"]?["echo_mismatch"]?.integerValue, "\(report["errors"] ?? .null)")
        #expect(mismatches == 2 * 9, "one lie per request")
        let lost = report["total"]?["metrics"]?["ws.messages_lost"]?["count"]?.integerValue ?? 0
        #expect(lost == 0, "a lie is not a loss")
        #expect(report["invariantsHeld"] == .bool(true))
        let received = try #require(report["total"]?["metrics"]?["ws.messages_received"]?["count"]?.integerValue)
        #expect(received == 2 * 2 * 9)
    }
}

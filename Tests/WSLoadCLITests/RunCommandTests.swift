import Foundation
import JSON
import Testing
import TestSupport
import WSLoadCLI

/// A scratch directory for one test's profiles and reports.
private final class Scratch: @unchecked Sendable {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-cli-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(at: url) }

    func write(_ name: String, _ text: String) throws -> String {
        let file = url.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file.path
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

private func shortProfile(thresholds: String = "[]", duration: String = "1s", connections: Int = 10) -> String {
    """
    {"version": 1, "name": "cli", "target": "embedded", "duration": "\(duration)", "gracefulStop": "5s",
     "scenarios": [{"name": "echo", "pattern": "echo", "connections": \(connections),
                    "schedule": {"model": "closed", "thinkTime": "5ms"}}],
     "thresholds": \(thresholds)}
    """
}

@Suite("wsload run and validate", .serialized, .timeLimit(.minutes(3)))
struct RunCommandTests {
    @Test("a passing run exits 0, prints the summary, writes the report where asked")
    func passingRun() async throws {
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", shortProfile(thresholds: #"["errors count < 1", "ws.message_rtt p99 < 10s"]"#))
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["run", profile, "--out", scratch.path("r/report.json")], output: captured.commandOutput)
        #expect(code == .success, "\(captured.error)")
        #expect(captured.output.contains("wsload run cli: completed"))
        #expect(captured.output.contains("✓ errors count < 1"))
        #expect(captured.error.contains("report: \(scratch.path("r/report.json"))"))
        let report = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: scratch.path("r/report.json")))))
        #expect(report["thresholdsPassed"] == .bool(true))
        #expect(report["tool"]?["version"]?.stringValue == WSLoad.version)
        // Plain progress lines (not a terminal), no escape sequences.
        #expect(!captured.error.contains("\u{1B}"))
    }

    @Test("failing thresholds exit 3 with the report still written; --json prints it")
    func failingThresholds() async throws {
        let scratch = try Scratch()
        // A message budget, so there are samples however loaded the machine is (a latency threshold with no
        // samples passes).
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "cli", "target": "embedded", "duration": "30s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 3, "messagesPerConnection": 20}],
             "thresholds": ["ws.message_rtt p50 < 1us"]}
            """)
        let captured = CapturedOutput()
        let code = await WSLoad.main(
            arguments: ["run", profile, "--report-dir", scratch.path("out"), "--json", "--quiet"], output: captured.commandOutput)
        #expect(code == .thresholdsFailed && code.rawValue == 3)
        let printed = try JSONValue(parsing: captured.output)
        #expect(printed["thresholdsPassed"] == .bool(false))
        #expect(printed["thresholds"]?.arrayValue?.first?["passed"] == .bool(false))
        let files = try FileManager.default.contentsOfDirectory(atPath: scratch.path("out"))
        #expect(files.count == 1 && files[0].hasPrefix("cli-") && files[0].hasSuffix("Z.json"))
        #expect(!captured.error.contains("report:"), "--quiet prints nothing but errors")
    }

    @Test("an invalid profile exits 65 listing every problem; a missing one exits 66; bad options 64")
    func badInput() async throws {
        let scratch = try Scratch()
        let invalid = try scratch.write("bad.json", #"{"version": 1, "name": "x", "target": "embedded", "durration": "1s", "scenarios": []}"#)
        for command in ["run", "validate"] {
            let captured = CapturedOutput()
            let code = await WSLoad.main(arguments: [command, invalid], output: captured.commandOutput)
            #expect(code == .invalidInput)
            #expect(captured.error == """
                \(invalid): 3 problems:
                  durration: unknown key (did you mean "duration"?)
                  duration: is required
                  scenarios: must hold at least one scenario

                """)
        }
        let missing = CapturedOutput()
        #expect(await WSLoad.main(arguments: ["run", scratch.path("nope.json")], output: missing.commandOutput) == .noInput)
        #expect(missing.error.contains("cannot read \(scratch.path("nope.json")): no such file"))
        let valid = try scratch.write("ok.json", shortProfile())
        let checked = CapturedOutput()
        #expect(await WSLoad.main(arguments: ["validate", valid], output: checked.commandOutput) == .success)
        #expect(checked.output == "\(valid): valid — 1 scenario, 10 connections, 1.0s\n")
        for arguments in [["run"], ["run", valid, "--duration", "soon"], ["run", valid, "--target", "http://x"], ["validate"]] {
            let captured = CapturedOutput()
            #expect(await WSLoad.main(arguments: arguments, output: captured.commandOutput) == .usage, "\(arguments)")
        }
    }

    @Test("a target that refuses every connection: exit 1, the report still written with the errors")
    func refused() async throws {
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "refused", "target": "ws://127.0.0.1:1/", "duration": "500ms",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 3}]}
            """)
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["run", profile, "--out", scratch.path("r.json")], output: captured.commandOutput)
        #expect(code == .failure)
        #expect(captured.error.contains("Error: none of 3 connection attempts succeeded (connect 3)."), "\(captured.error)")
        let report = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: scratch.path("r.json")))))
        #expect(report["errors"]?["connect"]?.integerValue == 3)
    }

    @Test("SIGINT mid-run in a child process: a complete report marked interrupted, exit 130")
    func interrupt() async throws {
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", shortProfile(duration: "60s", connections: 50))
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("report.json")])
        // The first progress line with every connection up means connections are up and measured. Lines come
        // every 5 s at most; a bounded wait that fails saying so, never a wait for the whole run.
        try await child.wait(untilPrinted: "connections 50 up / 50 target", onStandardError: true, within: .seconds(30))
        child.signal(SIGINT)
        let status = try await child.waitForExit(within: .seconds(60))
        #expect(status == 130, "\(child.errors)")
        let report = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: scratch.path("report.json")))))
        #expect(report["run"]?["interrupted"] == .bool(true))
        #expect(report["run"]?["interruptedBy"]?.stringValue == "SIGINT")
        #expect(report["run"]?["unfinishedConnections"]?.integerValue == 0)
        #expect((report["run"]?["elapsedSeconds"]?.numberValue ?? 60) < 30)
        let metrics = try #require(report["total"]?["metrics"])
        let sent = metrics["ws.messages_sent"]?["count"]?.integerValue ?? 0
        #expect(sent > 0 && metrics["ws.messages_received"]?["count"]?.integerValue == sent)
        #expect(metrics["ws.disconnects"]?["byCode"]?["1000"]?.integerValue == 50)
        #expect(metrics["ws.message_rtt"]?["count"]?.integerValue == sent)
    }
}

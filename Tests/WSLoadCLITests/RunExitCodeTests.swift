import Foundation
import JSON
import Testing
import TestSupport
import WSLoadCLI

/// `wsload run`'s exit codes past the happy path (README, "Exit codes"): 3 for failed or aborting thresholds,
/// 4 for invariant violations, 74 for a report that cannot be written, each with the report (or the reason
/// there is none) where the README promises it.
@Suite("wsload run exit codes", .serialized, .timeLimit(.minutes(3)))
struct RunExitCodeTests {
    @Test("an abortOnFail threshold stops the run early: exit 3, the report names it and ran short of the duration")
    func abortOnFail() async throws {
        let scratch = try RunScratch()
        // Every echo takes longer than 1 µs: the threshold fails at the first gather that has a sample.
        let profile = try scratch.write("p.json", echoProfile(
            name: "abort", duration: "60s", connections: 3,
            thresholds: #"[{"expression": "ws.message_rtt max < 1us", "abortOnFail": true}, "errors count < 1000000"]"#))
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["run", profile, "--out", scratch.path("report.json")], output: captured.commandOutput)
        #expect(code == .thresholdsFailed, "\(captured.error)")
        let report = try scratch.json("report.json")
        let run = try #require(report["run"])
        #expect(run["abortedBy"]?.stringValue == "ws.message_rtt max < 1us")
        #expect(run["interrupted"] == .bool(false))
        // Stopped early: what the run recorded, not a wall-clock window (a run that ignored the abort lasts 60 s).
        let elapsed = try #require(run["elapsedSeconds"]?.numberValue)
        #expect(run["plannedSeconds"]?.numberValue == 60)
        #expect(elapsed < 60, "the run went on for \(elapsed) s after its abortOnFail threshold failed")
        #expect(report["thresholdsPassed"] == .bool(false))
        let thresholds = try #require(report["thresholds"]?.arrayValue)
        try #require(thresholds.count == 2)
        #expect(thresholds[0]["passed"] == .bool(false) && thresholds[0]["abortOnFail"] == .bool(true))
        #expect(thresholds[1]["passed"] == .bool(true))
        #expect(captured.output.contains("wsload run abort: aborted: ws.message_rtt max < 1us failed after"), "\(captured.output)")
        #expect(captured.output.contains("✗ ws.message_rtt max < 1us"))
    }

    @Test("abortDelay: the failing threshold stops the run, but not before the delay")
    func abortDelay() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(
            name: "delayed", duration: "60s", connections: 3,
            thresholds: #"[{"expression": "ws.message_rtt max < 1us", "abortOnFail": true, "abortDelay": "3s"}]"#))
        let captured = CapturedOutput()
        let code = await WSLoad.main(
            arguments: ["run", profile, "--out", scratch.path("report.json"), "--quiet"], output: captured.commandOutput)
        #expect(code == .thresholdsFailed, "\(captured.error)")
        let run = try #require(try scratch.json("report.json")["run"])
        #expect(run["abortedBy"]?.stringValue == "ws.message_rtt max < 1us")
        let elapsed = try #require(run["elapsedSeconds"]?.numberValue)
        #expect(elapsed >= 3, "aborted after \(elapsed) s, before its abortDelay of 3 s")
        #expect(elapsed < 60, "the run went on for \(elapsed) s after its delayed abortOnFail threshold failed")
        // The run's messages before the abort are in the report: it measured for the whole delay.
        let sent = try #require(try scratch.json("report.json")["total"]?["metrics"]?["ws.messages_sent"]?["count"]?.integerValue)
        #expect(sent > 0)
    }

    @Test("a server that duplicates echoes: the oracle flags messages.in_sequence, exit 4, the report lists the violations")
    func invariantViolations() async throws {
        let scratch = try RunScratch()
        let server = try PythonRunTarget(["--duplicate-every", "3"])
        // A message budget, so the run ends on its own however slow the box; no thresholds to fail.
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "dup", "target": "\(server.url)", "duration": "60s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2, "messagesPerConnection": 12}]}
            """)
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["run", profile, "--out", scratch.path("report.json")], output: captured.commandOutput)
        _ = try server.stop()
        #expect(code == .invariantViolated && code.rawValue == 4, "\(captured.error)")
        let report = try scratch.json("report.json")
        #expect(report["invariantsHeld"] == .bool(false))
        let sequence = try #require(report["invariants"]?["messages.in_sequence"])
        let violations = try #require(sequence["violations"]?.integerValue)
        #expect(violations > 0)
        let examples = try #require(sequence["examples"]?.arrayValue)
        #expect(!examples.isEmpty && examples.count <= 5)
        #expect(captured.output.contains("✗ messages.in_sequence: "), "\(captured.output)")
        #expect(captured.error.contains("report: \(scratch.path("report.json"))"))
    }

    @Test("the same server without duplicates: the run holds, exit 0 (the violation above is the server's)")
    func invariantsHoldAgainstAnHonestServer() async throws {
        let scratch = try RunScratch()
        let server = try PythonRunTarget()
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "honest", "target": "\(server.url)", "duration": "60s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2, "messagesPerConnection": 12}]}
            """)
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["run", profile, "--out", scratch.path("report.json")], output: captured.commandOutput)
        _ = try server.stop()
        #expect(code == .success, "\(captured.error)")
        let report = try scratch.json("report.json")
        #expect(report["invariantsHeld"] == .bool(true))
        #expect(report["invariants"]?["messages.in_sequence"]?["checked"]?.integerValue == 24)
    }
}

/// Exit 74: the report cannot be written. The error names the path, the measurements still reach stdout, and
/// nothing half-written is left at the path or beside it.
@Suite("wsload run: a report that cannot be written", .serialized, .timeLimit(.minutes(3)))
struct RunReportWriteTests {
    @Test("--out under a regular file: exit 74 naming the path; the summary (or --json, the report) still on stdout")
    func outUnderAFile() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "1s", thresholds: #"["errors count < 1000000"]"#))
        let blocked = scratch.path("p.json") + "/report.json"
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["run", profile, "--out", blocked], output: captured.commandOutput)
        #expect(code == .ioError && code.rawValue == 74)
        #expect(captured.error.contains("Error: cannot write the report to \(blocked)"), "\(captured.error)")
        #expect(captured.output.contains("wsload run run: completed after"), "the measurements must not be lost silently")
        #expect(!captured.error.contains("report: "), "no report path is announced when none was written")

        let json = CapturedOutput()
        let jsonCode = await WSLoad.main(arguments: ["run", profile, "--out", blocked, "--json", "--quiet"], output: json.commandOutput)
        #expect(jsonCode == .ioError)
        #expect(json.error.contains("Error: cannot write the report to \(blocked)"), "\(json.error)")
        let printed = try JSONValue(parsing: json.output)
        #expect(printed["schema"]?.stringValue == "wsload.report/1")
        #expect(try #require(printed["total"]?["metrics"]?["ws.messages_sent"]?["count"]?.integerValue) > 0)
        #expect(try scratch.files() == ["p.json"])
    }

    @Test("--out naming a directory: exit 74; the directory is untouched, no temporary file left in it or beside it")
    func outIsADirectory() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "1s"))
        try FileManager.default.createDirectory(atPath: scratch.path("out/taken"), withIntermediateDirectories: true)
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["run", profile, "--out", scratch.path("out/taken"), "--quiet"], output: captured.commandOutput)
        #expect(code == .ioError)
        #expect(captured.error.contains("Error: cannot write the report to \(scratch.path("out/taken"))"), "\(captured.error)")
        // The run journal beside it is kept: the only record of the run, recoverable with `report --recover`.
        #expect(try scratch.files(in: "out") == ["taken", "taken.partial"])
        #expect(captured.error.contains("report --recover \(scratch.path("out/taken.partial"))"), "\(captured.error)")
        #expect(try scratch.files(in: "out/taken").isEmpty)
    }

    @Test("a report larger than the file-size limit (a real wsload, prlimit): exit 74, no partial report, no temporary file")
    func fileSizeLimit() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "1s"))
        // The report is over 10 KB; writing it stops at 4 KiB with EFBIG.
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("out/report.json")], prefix: ["prlimit", "--fsize=4096"])
        let status = try await child.waitForExit(within: .seconds(60))
        #expect(status == 74, "\(child.errors)")
        #expect(child.errors.contains("Error: cannot write the report to \(scratch.path("out/report.json"))"), "\(child.errors)")
        #expect(child.output.contains("wsload run run: completed after"), "the measurements must not be lost silently")
        // Atomic: never a partial report at the path, and the partial temporary file is removed.
        let files = try scratch.files(in: "out")
        #expect(files == [], "left behind: \(files)")
    }

    @Test("--html that cannot be written: exit 74 naming it, while the JSON report is written")
    func htmlUnwritable() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "1s"))
        let blocked = scratch.path("p.json") + "/report.html"
        let captured = CapturedOutput()
        let code = await WSLoad.main(
            arguments: ["run", profile, "--out", scratch.path("report.json"), "--html", blocked, "--quiet"], output: captured.commandOutput)
        #expect(code == .ioError)
        #expect(captured.error.contains("Error: cannot write \(blocked)"), "\(captured.error)")
        #expect(try scratch.json("report.json")["schema"]?.stringValue == "wsload.report/1")
    }
}

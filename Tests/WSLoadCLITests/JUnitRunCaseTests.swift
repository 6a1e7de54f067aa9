import Foundation
import JSON
import Profile
import Reporting
import Testing
import TestSupport
@testable import WSLoadCLI

/// The `run` case of `run --junit`: CI sees red when the run did not complete — interrupted (130), no connection (1),
/// stopped before it began, or its report not written (74) — whatever its thresholds say; and the summary shows a
/// profile's threshold text through the printable filter.
@Suite("JUnit XML: the run case; the summary's threshold text", .serialized, .timeLimit(.minutes(4)))
struct JUnitRunCaseTests {
    @Test("the writer: an interrupted run with a problem after it fails its run case with both, byte for byte; a run with no result too")
    func runCaseDocument() throws {
        var result = try JUnitWriterTests.result()
        result.interruptedBy = "SIGINT"
        let xml = JUnitReport.run(result, problems: ["the report was not written: cannot write /x/r.json: No such file"]).xml()
        #expect(xml.contains("""
              <testsuite name="run" tests="1" failures="1" errors="0" skipped="0" time="10.250" timestamp="2026-01-01T00:00:00Z">
                <testcase name="run" classname="wsload.junit.run">
                  <failure message="interrupted by SIGINT" type="run">interrupted by SIGINT
            the report was not written: cannot write /x/r.json: No such file</failure>
                </testcase>
              </testsuite>
            """), "\(xml)")
        #expect(xml.contains(#"<testsuites name="wsload run junit" tests="7" failures="4""#), "\(xml)")
        result.interruptedBy = nil
        result.total.counters[Metric.connectionsOpened.name] = 0
        #expect(JUnitReport.run(result).xml().contains(
            #"<failure message="no connection: none of 2 connection attempts succeeded (timeout 1)" type="run">"#))
        let failed = JUnitReport.failedRun(profile: "p", at: JUnitWriterTests.start, reason: "stopped by SIGINT <before>").xml()
        #expect(failed == """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites name="wsload run p" tests="1" failures="1" errors="0" time="0.000">
              <testsuite name="run" tests="1" failures="1" errors="0" skipped="0" time="0.000" timestamp="2026-01-01T00:00:00Z">
                <testcase name="run" classname="wsload.p.run">
                  <failure message="stopped by SIGINT &lt;before&gt;" type="run">stopped by SIGINT &lt;before&gt;</failure>
                </testcase>
              </testsuite>
            </testsuites>

            """, "\(failed)")
    }

    /// The run case of the JUnit file at `path`, as junitparser reads it (the document validated first).
    private func runCase(_ path: String) async throws -> JSONValue {
        let read = try await JUnitConsumers.read(path)
        let (_, cases) = try JUnitConsumers.suite(read, "run")
        return try #require(cases["run"], "no run case")
    }

    @Test("no connection (exit 1) and a report that cannot be written (exit 74): the JUnit is written, its run case failing and saying why")
    func noConnectionAndUnwritableReport() async throws {
        let scratch = try RunScratch()
        let refused = try scratch.write("refused.json", """
            {"version": 1, "name": "refused", "target": "ws://127.0.0.1:9/", "duration": "1s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 1}], "thresholds": ["errors count < 1000000"]}
            """)
        let none = await runCLIArray(["run", refused, "--out", scratch.path("r.json"), "--junit", scratch.path("none.xml"), "--quiet"])
        #expect(none.code == .failure, "\(none.error)")
        let noneCase = try await runCase(scratch.path("none.xml"))
        #expect(noneCase["result"]?.stringValue == "failure")
        #expect(noneCase["results"]?.arrayValue?.first?["message"]?.stringValue?.hasPrefix("no connection: none of ") == true,
                "\(noneCase)")

        let profile = try scratch.write("p.json", echoProfile(duration: "1s", connections: 1, thresholds: #"["errors count < 1000000"]"#))
        let blocked = scratch.path("p.json") + "/r.json"  // under a regular file: never writable
        let unwritten = await runCLIArray(["run", profile, "--out", blocked, "--junit", scratch.path("unwritten.xml"), "--quiet"])
        #expect(unwritten.code == .ioError, "\(unwritten.error)")
        let unwrittenCase = try await runCase(scratch.path("unwritten.xml"))
        let message = unwrittenCase["results"]?.arrayValue?.first?["message"]?.stringValue ?? ""
        #expect(message.hasPrefix("the report was not written: cannot write \(blocked)"), "\(unwrittenCase)")
        let read = try await JUnitConsumers.read(scratch.path("unwritten.xml"))
        #expect(try JUnitConsumers.suite(read, "thresholds").cases["errors count < 1000000"]?["result"]?.stringValue == "passed",
                "the thresholds are still there")
    }

    @Test("interrupted (SIGINT mid-run, exit 130) and stopped while waiting for --start-at (130, no report): the run case fails")
    func interruptedRuns() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "60s", connections: 1))
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("r.json"), "--junit", scratch.path("int.xml"), "--quiet"])
        try await child.wait(for: "the run journal's first interval", within: .seconds(90)) {
            ((try? String(contentsOfFile: scratch.path("r.json.partial"), encoding: .utf8)) ?? "").split(separator: "\n").count >= 2
        }
        child.signal(SIGINT)
        #expect(try await child.waitForExit(within: .seconds(60)) == 130, "\(child.errors)")
        let interrupted = try await runCase(scratch.path("int.xml"))
        #expect(interrupted["results"]?.arrayValue?.first?["message"]?.stringValue == "interrupted by SIGINT", "\(interrupted)")

        let later = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3600))
        let waiter = try WSLoadProcess(["run", profile, "--out", scratch.path("w.json"), "--start-at", later,
                                        "--junit", scratch.path("wait.xml")])
        try await waiter.wait(untilPrinted: "waiting until", onStandardError: true, within: .seconds(60))
        waiter.signal(SIGINT)
        #expect(try await waiter.waitForExit(within: .seconds(60)) == 130, "\(waiter.errors)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("w.json")))
        let stopped = try await runCase(scratch.path("wait.xml"))
        #expect(stopped["results"]?.arrayValue?.first?["message"]?.stringValue?.contains("while waiting for the start time") == true,
                "\(stopped)")
    }

    @Test("a threshold's text with escape sequences reaches the summary escaped, never raw")
    func thresholdTextEscaped() throws {
        var result = try JUnitWriterTests.result()
        result.thresholds[0].threshold.expression = "ws.message_rtt p99 < 10ms\u{1B}]0;owned\u{07}\u{1B}[2J"
        let summary = RunSummary.text(result, colors: false)
        #expect(!summary.unicodeScalars.contains("\u{1B}") && !summary.unicodeScalars.contains("\u{07}"), "\(summary)")
        #expect(summary.contains(#"✗ ws.message_rtt p99 < 10ms\u{1B}]0;owned\u{07}\u{1B}[2J  (actual 12.3ms)"#), "\(summary)")
    }
}

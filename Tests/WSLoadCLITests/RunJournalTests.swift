import Foundation
import JSON
import Profile
import Reporting
import Testing
import TestSupport
import WSLoadCLI

/// The run journal with the real binary: a run killed with SIGKILL leaves `<report>.partial`, and
/// `wsload report --recover` turns it into a report marked incomplete holding every journaled interval.
@Suite("wsload run journal", .serialized, .timeLimit(.minutes(3)))
struct RunJournalTests {
    /// An echo run of a minute against the embedded server, closing an interval every 200 ms.
    private func profile(_ scratch: RunScratch) throws -> String {
        try scratch.write("p.json", """
            {"version": 1, "name": "journal", "target": "embedded", "duration": "60s", "gracefulStop": "5s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 3,
                            "schedule": {"model": "closed", "thinkTime": "5ms"}}],
             "report": {"interval": "200ms"}}
            """)
    }

    /// The complete (newline-terminated) records of the journal at `path`.
    private func records(_ path: String) -> [JSONValue] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let complete = data.prefix(through: data.lastIndex(of: UInt8(ascii: "\n")) ?? -1)
        return complete.split(separator: UInt8(ascii: "\n")).compactMap { line in
            // A line being written concurrently is not yet complete: skip it, the next poll sees it whole.
            try? JSONValue(parsing: Array(line))
        }
    }

    @Test("SIGKILL mid-run, then --recover: an incomplete report of every journaled interval, totals their exact sum")
    func sigkillThenRecover() async throws {
        let scratchDir = try RunScratch()
        let out = scratchDir.path("out/r.json")
        let journal = out + ".partial"
        let child = try WSLoadProcess(["run", try profile(scratchDir), "--out", out, "--quiet"])
        try await child.wait(for: "3 intervals in \(journal)", within: .seconds(90)) {
            records(journal).filter { $0["record"]?.stringValue == "interval" }.count >= 3
        }
        child.signal(SIGKILL)
        #expect(try await child.waitForExit() == 128 + SIGKILL)
        #expect(!FileManager.default.fileExists(atPath: out), "killed: no report")
        let journaled = records(journal)
        #expect(journaled.first?["record"]?.stringValue == "header")
        #expect(journaled.first?["run"]?["seed"]?.stringValue != nil)
        let intervalCount = journaled.count - 1
        #expect(intervalCount >= 3)

        let recovered = await runCLIArray(["report", "--recover", journal, "--out", out])
        #expect(recovered.code == .success, "\(recovered.error)")
        let report = try LoadedReport(contentsOf: out)
        #expect(report.result.isIncomplete)
        #expect(report.document["run"]?["incomplete"] == .bool(true))
        #expect(report.result.intervals.count == intervalCount, "every complete interval of the journal")
        var sum = MetricSet()
        for interval in report.result.intervals { try sum.add(interval.metrics) }
        let json = { (metrics: MetricSet) in metrics.json(seconds: 1, operations: 0).formatted(pretty: false) }
        #expect(json(sum) == json(report.result.total), "totals are the exact sum of the intervals (histograms merged)")
        #expect(report.result.scenarios.first.map { json($0.metrics) } == json(report.result.total), "one scenario: its metrics are the total")
        #expect(report.result.total.counter(.messagesSent) > 0, "the run measured something before it died")
        let summary = await runCLIArray(["report", out])
        #expect(summary.output.contains("INCOMPLETE"), "\(summary.output)")
        let runID = try #require(journaled.first?["run"]?["id"]?.stringValue, "the header names the run's id")
        #expect(report.result.runID == runID, "the recovered report keeps the run's id, so merge refuses it twice")
    }

    @Test("a completed run (--report-dir) writes its report and removes the journal")
    func completedRunRemovesJournal() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "2s", connections: 2)
            .replacingOccurrences(of: #""thresholds""#, with: #""report": {"interval": "200ms"}, "thresholds""#))
        let child = try WSLoadProcess(["run", profile, "--report-dir", scratch.path("reports"), "--quiet"])
        // (That the journal exists while a run goes is the SIGKILL test's: polling for it here was at the mercy of
        // a busy box's scheduling.)
        #expect(try await child.waitForExit(within: .seconds(90)) == 0, "\(child.errors)")
        let files = try scratch.files(in: "reports")
        #expect(files.count == 1 && files[0].hasSuffix(".json") && !files[0].contains("partial"), "\(files)")
    }

    @Test("an earlier run's journal at the report's path is never replaced: exit 74 before running, file untouched")
    func existingJournalRefused() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "1s", connections: 1))
        let kept = try scratch.write("out/r.json.partial", "a journal of an earlier run\n")
        let result = await runCLIArray(["run", profile, "--out", scratch.path("out/r.json"), "--quiet"])
        #expect(result.code == .ioError)
        #expect(result.error.contains("\(kept) exists"), "\(result.error)")
        #expect(try String(contentsOfFile: kept, encoding: .utf8) == "a journal of an earlier run\n")
        #expect(try scratch.files(in: "out") == ["r.json.partial"])
        // A dangling symlink there is refused the same way, and its target is not created.
        try FileManager.default.removeItem(atPath: kept)
        try FileManager.default.createSymbolicLink(atPath: kept, withDestinationPath: scratch.path("victim"))
        #expect(await runCLIArray(["run", profile, "--out", scratch.path("out/r.json"), "--quiet"]).code == .ioError)
        #expect(!FileManager.default.fileExists(atPath: scratch.path("victim")))
    }
}

/// `runCLI` with an array of arguments.
func runCLIArray(_ arguments: [String]) async -> (code: ExitCode, output: String, error: String) {
    let captured = CapturedOutput()
    let code = await WSLoad.main(arguments: arguments, output: captured.commandOutput)
    return (code, captured.output, captured.error)
}

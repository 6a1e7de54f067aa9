import Foundation
import JSON
import Profile
import Reporting
import Testing
import TestSupport
import WSLoadCLI

/// `wsload report --recover` and the interval log, with the real binary against the embedded server: a completed
/// run's log (it ends with the end record) recovers as the run's complete report; a recovered report names an interval
/// log beside itself, never the journal wherever that was; `--out` in another directory than the working one puts the
/// journal, the kept log and the name the report gives it beside the report.
@Suite("wsload report --recover: the end record and the interval log's place", .serialized, .timeLimit(.minutes(5)))
struct RecoveredLogTests {
    /// An echo run at 100 ms intervals, at most 4 of them in the report (downsampled after 0.4 s).
    private func profile(_ scratch: RunScratch, duration: String) throws -> String {
        try scratch.write("p.json", """
            {"version": 1, "name": "recover", "target": "embedded", "duration": "\(duration)", "gracefulStop": "5s", "seed": 5,
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2,
                            "schedule": {"model": "closed", "thinkTime": "5ms"}}],
             "thresholds": ["ws.message_rtt p99 < 10s"],
             "report": {"interval": "100ms", "maxIntervals": 4}}
            """)
    }

    /// The records of the journal or log at `path` that are complete lines.
    private func records(_ path: String) -> [JSONValue] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let complete = data.prefix(through: data.lastIndex(of: UInt8(ascii: "\n")) ?? -1)
        return complete.split(separator: UInt8(ascii: "\n")).compactMap { try? JSONValue(parsing: Array($0)) }
    }

    /// `document` without `intervalSeries.file` (the one field a recovery names differently: its own log), and its
    /// intervals without their rates (a journal keeps an interval's bounds to the millisecond, as a report does, and
    /// rates computed from them differ from the run's in the last digits; counts and histograms are exact).
    private func withoutLogName(_ document: JSONValue) -> JSONValue {
        guard var root = document.objectValue, var series = root["intervalSeries"]?.objectValue else { return document }
        series["file"] = nil
        root["intervalSeries"] = .object(series)
        func withoutRates(_ value: JSONValue) -> JSONValue {
            if let elements = value.arrayValue { return .array(elements.map(withoutRates)) }
            guard var object = value.objectValue else { return value }
            object["perSecond"] = nil
            object["messagesPerSecond"] = nil
            for (key, member) in object.members { object[key] = withoutRates(member) }
            return .object(object)
        }
        root["intervals"] = root["intervals"].map(withoutRates)
        return .object(root)
    }

    @Test("a completed run's interval log ends with the end record and recovers as the complete report: the same document but the log's name")
    func completedLogRecoversComplete() async throws {
        let scratch = try RunScratch()
        let out = scratch.path("out/r.json")
        let child = try WSLoadProcess(["run", try profile(scratch, duration: "2s"), "--out", out, "--quiet"])
        #expect(try await child.waitForExit(within: .seconds(120)) == 0, "\(child.errors)")
        let log = scratch.path("out/r.intervals.jsonl")
        let lines = records(log)
        #expect(lines.last?["record"]?.stringValue == "end", "the kept log ends with the end record")
        #expect(lines.last?["intervals"]?.integerValue == lines.count - 2)

        // Recovered into another directory: complete, and its log beside it, the run's own log untouched.
        let recovered = await runCLIArray(["report", "--recover", log, "--out", scratch.path("elsewhere/x.json")])
        #expect(recovered.code == .success, "\(recovered.error)")
        #expect(recovered.error.contains("(complete"), "\(recovered.error)")
        #expect(!recovered.output.contains("INCOMPLETE"), "\(recovered.output)")
        #expect(try scratch.files(in: "elsewhere") == ["x.intervals.jsonl", "x.json"])
        #expect(try scratch.files(in: "out") == ["r.intervals.jsonl", "r.json"])
        let original = try LoadedReport(contentsOf: out)
        let again = try LoadedReport(contentsOf: scratch.path("elsewhere/x.json"))
        #expect(!again.result.isIncomplete && again.document["run"]?["incomplete"] == nil)
        #expect(again.result.intervalLog?.file == "x.intervals.jsonl")
        // The recovered report is the run's own: totals, thresholds, invariants, end, series (compared key by key, so
        // a difference names its key instead of printing two reports).
        let (mine, theirs) = (withoutLogName(again.document), withoutLogName(original.document))
        #expect(mine.objectValue?.keys == theirs.objectValue?.keys)
        for key in theirs.objectValue?.keys ?? [] {
            for (field, value) in theirs[key]?.objectValue?.members ?? [] where mine[key]?[field] != value {
                let shown = mine[key]?[field].map { String($0.formatted(pretty: false).prefix(300)) } ?? "missing"
                Issue.record("\(key).\(field) differs: \(shown) against \(String(value.formatted(pretty: false).prefix(300)))")
            }
            #expect(mine[key] == theirs[key], "\(key)")
        }
        #expect(original.result.total.counter(.messagesReceived) > 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.path("elsewhere/x.intervals.jsonl")))
            == Data(contentsOf: URL(fileURLWithPath: log)), "the named log holds every interval")
    }

    @Test("SIGKILL, then --recover r.json.partial --out elsewhere: the journal becomes the log beside the recovered report, which names it; --hlog reads it")
    func killedJournalBecomesTheLog() async throws {
        let scratch = try RunScratch()
        let out = scratch.path("out/r.json")
        let journal = out + ".partial"
        let child = try WSLoadProcess(["run", try profile(scratch, duration: "60s"), "--out", out, "--quiet"])
        try await child.wait(for: "6 intervals in \(journal)", within: .seconds(90)) {
            records(journal).filter { $0["record"]?.stringValue == "interval" }.count >= 6
        }
        child.signal(SIGKILL)
        #expect(try await child.waitForExit() == 128 + SIGKILL)
        let taken = try scratch.write("elsewhere/y.intervals.jsonl", "someone else's file\n")

        let recovered = await runCLIArray(["report", "--recover", journal, "--out", scratch.path("elsewhere/y.json")])
        #expect(recovered.code == .success, "\(recovered.error)")
        #expect(try String(contentsOfFile: taken, encoding: .utf8) == "someone else's file\n", "never replaced")
        #expect(try scratch.files(in: "elsewhere") == ["y-2.intervals.jsonl", "y.intervals.jsonl", "y.json"])
        #expect(try scratch.files(in: "out") == [], "the journal was renamed: a run with the same --out may start again")
        let report = try LoadedReport(contentsOf: scratch.path("elsewhere/y.json"))
        #expect(report.result.isIncomplete)
        let series = try #require(report.result.intervalLog)
        #expect(series.factor > 1 && series.file == "y-2.intervals.jsonl", "\(series)")
        #expect(report.document["intervalSeries"]?["file"]?.stringValue == "y-2.intervals.jsonl")

        let exported = await runCLIArray(["report", scratch.path("elsewhere/y.json"), "--hlog", scratch.path("y.hlog")])
        #expect(exported.code == .success, "\(exported.error)")
        #expect(!exported.error.contains("warning"), "\(exported.error)")
        let tagged = try String(contentsOfFile: scratch.path("y.hlog"), encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("Tag=ws.message_rtt,") }
        #expect(tagged.count > report.result.intervals.count, "every base interval, from the log: \(tagged.count) lines")
    }

    @Test("--out in another directory than the working one: the journal, the kept log and its name are beside the report")
    func outElsewhereKeepsEverythingBeside() async throws {
        let scratch = try RunScratch()
        _ = try scratch.write("cwd/.keep", "")
        let journal = scratch.path("other/r.json.partial")
        for out in [scratch.path("other/r.json"), "../other/r.json"] {
            let child = try WSLoadProcess(["run", try profile(scratch, duration: "60s"), "--out", out, "--quiet"],
                                          prefix: ["env", "-C", scratch.path("cwd")])
            try await child.wait(for: "5 intervals in \(journal)", within: .seconds(90)) {
                records(journal).filter { $0["record"]?.stringValue == "interval" }.count >= 5
            }
            #expect(records(journal).first?["report"]?["file"]?.stringValue == "r.json")
            child.signal(SIGINT)  // the first Ctrl-C: the report is written, and the log kept
            #expect(try await child.waitForExit(within: .seconds(60)) == 130, "\(child.errors)")
            #expect(try scratch.files(in: "cwd") == [".keep"], "nothing in the working directory (--out \(out))")
            #expect(try scratch.files(in: "other") == ["r.intervals.jsonl", "r.json"], "--out \(out)")
            let report = try LoadedReport(contentsOf: scratch.path("other/r.json"))
            #expect(report.result.intervalLog?.file == "r.intervals.jsonl")
            #expect(report.result.interruptedBy != nil)
            // Interrupted, the run still ended: its log recovers as the complete (interrupted) report.
            let recovered = await runCLIArray(["report", "--recover", scratch.path("other/r.intervals.jsonl"),
                                               "--out", scratch.path("other/again.json")])
            #expect(recovered.code == .success, "\(recovered.error)")
            let again = try LoadedReport(contentsOf: scratch.path("other/again.json"))
            #expect(!again.result.isIncomplete && again.result.interruptedBy == report.result.interruptedBy)
            #expect(again.result.intervalLog?.file == "again.intervals.jsonl")
            for name in ["r.json", "r.intervals.jsonl", "again.json", "again.intervals.jsonl"] {
                try FileManager.default.removeItem(atPath: scratch.path("other/" + name))
            }
        }
    }
}

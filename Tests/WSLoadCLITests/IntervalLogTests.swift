import Foundation
import JSON
import Profile
import Reporting
import Testing
import TestSupport
import WSLoadCLI

/// Memory that does not grow with the run (issue 15 item 1), with the real binary against the embedded server: the
/// report keeps at most `report.maxIntervals` intervals, merged exactly, and names the full-resolution interval log
/// the run kept beside it; `report --recover` and `--hlog` read that log.
@Suite("wsload run: bounded interval series and the interval log", .serialized, .timeLimit(.minutes(4)))
struct IntervalLogTests {
    /// An echo run of `duration` at 100 ms intervals, at most `maxIntervals` of them in the report.
    private func profile(_ scratch: RunScratch, duration: String, maxIntervals: Int?) throws -> String {
        let maximum = maxIntervals.map { #", "maxIntervals": \#($0)"# } ?? ""
        return try scratch.write("p.json", """
            {"version": 1, "name": "series", "target": "embedded", "duration": "\(duration)", "gracefulStop": "5s", "seed": 3,
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2,
                            "schedule": {"model": "closed", "thinkTime": "5ms"}}],
             "report": {"interval": "100ms"\(maximum)}}
            """)
    }

    private func run(_ arguments: [String]) async throws -> (code: Int32, errors: String) {
        let child = try WSLoadProcess(arguments)
        let code = try await child.waitForExit(within: .seconds(120))
        return (code, child.errors)
    }

    /// A metric set without the one counter no interval holds (connections cancelled at the stop: none here).
    private func json(_ metrics: MetricSet) -> String {
        var metrics = metrics
        metrics.counters[Metric.unfinishedAtStop.name] = nil
        return metrics.json(seconds: 1, operations: 0).formatted(pretty: false)
    }

    @Test("maxIntervals 8 over a few seconds: ≤ 8 intervals adding up to the totals, the log of every interval beside, recovered to the same totals, --hlog from the log")
    func downsampledRunKeepsItsLog() async throws {
        let scratch = try RunScratch()
        let out = scratch.path("out/r.json")
        let ran = try await run(["run", try profile(scratch, duration: "3s", maxIntervals: 8), "--out", out, "--quiet",
                                 "--hlog", scratch.path("out/r.hlog")])
        #expect(ran.code == 0, "\(ran.errors)")
        #expect(try scratch.files(in: "out") == ["r.hlog", "r.intervals.jsonl", "r.json"], "no journal left, the log kept")

        let report = try LoadedReport(contentsOf: out)
        let log = try #require(report.result.intervalLog, "a run's report has intervalSeries")
        #expect(report.result.intervals.count <= 8 && report.result.intervals.count >= 2, "\(report.result.intervals.count)")
        #expect(log.factor > 1 && log.factor & (log.factor - 1) == 0, "downsampled by a power of two: \(log.factor)")
        #expect(log.count > 8 && log.count <= report.result.intervals.count * log.factor, "\(log)")
        #expect(log.baseSeconds == 0.1)
        #expect(log.file == "r.intervals.jsonl")
        #expect(report.document["intervalSeries"]?["file"]?.stringValue == "r.intervals.jsonl")
        var sum = MetricSet()
        for interval in report.result.intervals { try sum.add(interval.metrics) }
        #expect(json(sum) == json(report.result.total), "the merged intervals add up to exactly the run's totals")
        #expect(report.result.total.counter(.messagesReceived) > 0)

        // The log: the journal's format, every base interval.
        let lines = try String(contentsOfFile: scratch.path("out/r.intervals.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2 + log.count, "a header, every one of the \(log.count) base intervals and the end record")
        var reader = try JournalReader(contentsOf: scratch.path("out/r.intervals.jsonl"))
        var budget = HistogramDecodeBudget()
        var base: [RunResult.Interval] = []
        while let next = try reader.nextInterval(budget: &budget) { base.append(next.0.total) }
        reader.close()
        #expect(base.count == log.count)
        var baseSum = MetricSet()
        for interval in base { try baseSum.add(interval.metrics) }
        #expect(json(baseSum) == json(report.result.total), "the log adds up to the totals too")

        // report --recover of the log: the same totals, and the same merged series (the same merges of the same intervals);
        // the recovered report names the log kept beside itself.
        let recovered = await runCLIArray(["report", "--recover", scratch.path("out/r.intervals.jsonl"), "--out", scratch.path("x.json")])
        #expect(recovered.code == .success, "\(recovered.error)")
        let again = try LoadedReport(contentsOf: scratch.path("x.json"))
        #expect(again.result.total.json(seconds: 1, operations: 0) == report.result.total.json(seconds: 1, operations: 0))
        #expect(FileManager.default.fileExists(atPath: scratch.path("x.intervals.jsonl")))
        #expect(try again.result.intervals.map { json(try $0.metrics) } == report.result.intervals.map { json(try $0.metrics) })
        #expect(again.result.intervalLog == RunResult.IntervalLog(file: "x.intervals.jsonl", count: log.count, baseSeconds: 0.1,
                                                                  factor: log.factor))

        // --hlog wrote every base interval with samples, not the report's merged ones; `report --hlog` writes the same.
        let hlog = try String(contentsOfFile: scratch.path("out/r.hlog"), encoding: .utf8)
        let tagged = hlog.split(separator: "\n").filter { $0.hasPrefix("Tag=ws.message_rtt,") }
        let withSamples = try base.filter { ((try $0.histogram(named: Metric.messageRoundTrip.name))?.totalCount ?? 0) > 0 }
        #expect(tagged.count == withSamples.count && tagged.count > report.result.intervals.count, "\(tagged.count) lines")
        let exported = await runCLIArray(["report", out, "--hlog", scratch.path("again.hlog")])
        #expect(exported.code == .success, "\(exported.error)")
        // (The StartTime line may differ in its last millisecond: the report keeps the start to the millisecond.)
        let againTagged = try String(contentsOfFile: scratch.path("again.hlog"), encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("Tag=") }
        #expect(againTagged == hlog.split(separator: "\n").filter { $0.hasPrefix("Tag=") })
    }

    @Test("a short run whose report holds every interval keeps no interval log (factor 1, file null)")
    func shortRunKeepsNoLog() async throws {
        let scratch = try RunScratch()
        let out = scratch.path("out/r.json")
        let ran = try await run(["run", try profile(scratch, duration: "1s", maxIntervals: nil), "--out", out, "--quiet"])
        #expect(ran.code == 0, "\(ran.errors)")
        #expect(try scratch.files(in: "out") == ["r.json"])
        let report = try LoadedReport(contentsOf: out)
        #expect(report.result.intervalLog == RunResult.IntervalLog(file: nil, count: report.result.intervals.count,
                                                                   baseSeconds: 0.1, factor: 1))
        #expect(report.document["intervalSeries"]?["file"] == .null)
    }

    @Test("an interval log already at the name is never replaced: the next free name is taken, the report names it")
    func existingLogNeverReplaced() async throws {
        let scratch = try RunScratch()
        let out = scratch.path("out/r.json")
        let earlier = try scratch.write("out/r.intervals.jsonl", "an earlier run's interval log\n")
        let ran = try await run(["run", try profile(scratch, duration: "1s", maxIntervals: 2), "--out", out, "--quiet"])
        #expect(ran.code == 0, "\(ran.errors)")
        #expect(try String(contentsOfFile: earlier, encoding: .utf8) == "an earlier run's interval log\n")
        #expect(try scratch.files(in: "out") == ["r-2.intervals.jsonl", "r.intervals.jsonl", "r.json"].sorted())
        let report = try LoadedReport(contentsOf: out)
        #expect(report.result.intervalLog?.file == "r-2.intervals.jsonl")
        let recovered = await runCLIArray(["report", "--recover", scratch.path("out/r-2.intervals.jsonl"), "--out", scratch.path("x.json")])
        #expect(recovered.code == .success, "\(recovered.error)")
    }
}

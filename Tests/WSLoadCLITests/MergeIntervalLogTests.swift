import Foundation
import JSON
import Profile
import Reporting
import Testing
import TestSupport
import WSLoadCLI

/// `wsload merge` and the shards' interval logs, with real shard runs of the binary: the merge writes the merged
/// full-resolution log beside the merged report and names it (`--hlog` on the merged report then writes every base
/// interval); when an input has no log it says so in one warning line and in `intervalSeries.fileMissing`.
@Suite("wsload merge: the merged interval log", .serialized, .timeLimit(.minutes(5)))
struct MergeIntervalLogTests {
    private func profile(_ scratch: RunScratch) throws -> String {
        try scratch.write("p.json", """
            {"version": 1, "name": "merge-log", "target": "embedded", "duration": "2s", "gracefulStop": "5s", "seed": 9,
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2,
                            "schedule": {"model": "closed", "thinkTime": "5ms"}}],
             "report": {"interval": "100ms", "maxIntervals": 4}}
            """)
    }

    @Test("two downsampled shards with their logs: the merged log beside the merged report, named, adding up to its totals; --hlog writes every base interval; a log missing: one warning, fileMissing, --hlog the entries")
    func mergedLog() async throws {
        let scratch = try RunScratch()
        let profile = try profile(scratch)
        for shard in 1...2 {
            let child = try WSLoadProcess(["run", profile, "--shard", "\(shard)/2", "--out", scratch.path("shards/s\(shard).json"),
                                           "--quiet"])
            #expect(try await child.waitForExit(within: .seconds(120)) == 0, "\(child.errors)")
        }
        #expect(try scratch.files(in: "shards") == ["s1.intervals.jsonl", "s1.json", "s2.intervals.jsonl", "s2.json"])
        let merged = await runCLIArray(["merge", scratch.path("shards/s1.json"), scratch.path("shards/s2.json"),
                                        "-o", scratch.path("merged/m.json")])
        #expect(merged.code == .success, "\(merged.error)")
        #expect(!merged.error.contains("warning"), "\(merged.error)")
        #expect(try scratch.files(in: "merged") == ["m.intervals.jsonl", "m.json"])
        let report = try LoadedReport(contentsOf: scratch.path("merged/m.json"))
        let series = try #require(report.result.intervalLog)
        #expect(series.factor > 1 && series.file == "m.intervals.jsonl" && series.fileMissing == nil, "\(series)")

        // The merged log: every merged base interval, adding up to the merged totals (but what no interval holds).
        var reader = try JournalReader(contentsOf: scratch.path("merged/m.intervals.jsonl"))
        var budget = HistogramDecodeBudget()
        #expect(try reader.readHeader().runID == report.result.runID)
        var count = 0
        var sum = MetricSet()
        while let next = try reader.nextInterval(budget: &budget) {
            try sum.add(next.0.total.metrics)
            count += 1
        }
        reader.close()
        #expect(count == series.count, "one merged record per base interval: \(count) of \(series.count)")
        #expect(reader.end != nil, "it ends with the merged end record")
        for metric in [Metric.messagesSent, .messagesReceived, .connectionsOpened] {
            #expect(sum.counter(metric) == report.result.total.counter(metric), "\(metric.name)")
        }
        #expect(sum[histogram: .messageRoundTrip]?.totalCount == report.result.total[histogram: .messageRoundTrip]?.totalCount)
        // Recovered, it is the merged report again.
        let recovered = await runCLIArray(["report", "--recover", scratch.path("merged/m.intervals.jsonl"), "--out", scratch.path("again.json")])
        #expect(recovered.code == .success, "\(recovered.error)")
        let again = try LoadedReport(contentsOf: scratch.path("again.json"))
        #expect(!again.result.isIncomplete)
        #expect(again.document["total"] == report.document["total"])

        let hlog = await runCLIArray(["report", scratch.path("merged/m.json"), "--hlog", scratch.path("m.hlog")])
        #expect(hlog.code == .success, "\(hlog.error)")
        #expect(!hlog.error.contains("warning"), "\(hlog.error)")
        let tagged = try String(contentsOfFile: scratch.path("m.hlog"), encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("Tag=ws.message_rtt,") }
        #expect(tagged.count > report.result.intervals.count, "full resolution: \(tagged.count) lines for \(report.result.intervals.count) entries")

        // One shard's log gone: one warning naming it, the merged report says why, --hlog writes the merged entries.
        try FileManager.default.removeItem(atPath: scratch.path("shards/s2.intervals.jsonl"))
        let partial = await runCLIArray(["merge", scratch.path("shards/s1.json"), scratch.path("shards/s2.json"),
                                         "-o", scratch.path("merged/n.json")])
        #expect(partial.code == .success, "\(partial.error)")
        let warnings = partial.error.split(separator: "\n").filter { $0.hasPrefix("warning:") }
        #expect(warnings.count == 1 && warnings[0].contains(scratch.path("shards/s2.json")), "\(partial.error)")
        #expect(try scratch.files(in: "merged") == ["m.intervals.jsonl", "m.json", "n.json"])
        let without = try LoadedReport(contentsOf: scratch.path("merged/n.json"))
        #expect(without.result.intervalLog?.file == nil)
        #expect(without.document["intervalSeries"]?["fileMissing"]?.stringValue?.contains("s2.json") == true,
                "\(without.document["intervalSeries"] ?? .null)")
        let entries = await runCLIArray(["report", scratch.path("merged/n.json"), "--hlog", scratch.path("n.hlog")])
        #expect(entries.code == .success, "\(entries.error)")
        let lines = try String(contentsOfFile: scratch.path("n.hlog"), encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("Tag=ws.message_rtt,") }
        #expect(lines.count == without.result.intervals.count)
    }
}

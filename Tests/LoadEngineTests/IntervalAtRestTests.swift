import Foundation
import Histogram
import JSON
import LoadEngine
import Profile
import Reporting
import Testing

/// Issue 15's end-of-run and read-back transient: a run's series and a report's intervals stay compressed
/// (``CompressedHistogram``) until one is used, one interval at a time. Memory itself is measured by
/// scripts/bench-intervals.sh, never asserted here.
@Suite("intervals at rest: written without decoding, read back compressed, decoded only where used",
       .serialized, .timeLimit(.minutes(4)))
struct IntervalAtRestTests {
    @Test("a real run's series written at rest is byte-identical to the same series written decoded, and reads back the same")
    func writtenAtRestIsIdentical() async throws {
        let run = LoadRun(profile: try profile("""
            {"version": 1, "name": "at-rest", "target": "embedded", "duration": "3s", "gracefulStop": "2s", "seed": 3,
             "loops": 1, "scenarios": [{"name": "echo", "pattern": "echo", "connections": 5, "message": {"size": 64},
                                        "schedule": {"model": "closed", "thinkTime": "10ms"}}],
             "report": {"interval": "100ms", "maxIntervals": 8}}
            """))
        let result = try await run.hostedRun()
        #expect(result.intervalFactor > 1, "the series merged: factor \(result.intervalFactor)")
        #expect(result.intervals.contains { !$0.histogramNames.isEmpty }, "some entry holds a histogram")
        let isAtRest = result.intervals.allSatisfy { $0.isAtRest }
        #expect(isAtRest, "the run hands its series over compressed")

        // The same series with every entry decoded (what the writer did before): the same bytes.
        var decoded = result
        decoded.intervals = try result.intervals.map {
            RunResult.Interval(start: $0.start, end: $0.end, liveConnections: $0.liveConnections, metrics: try $0.metrics)
        }
        #expect(decoded.intervals.contains { !$0.isAtRest })
        let text = RunReport.json(result, toolVersion: "test", commit: nil).formatted()
        #expect(text == RunReport.json(decoded, toolVersion: "test", commit: nil).formatted())
        #expect(try RunHTML.render(result, toolVersion: "test") == RunHTML.render(decoded, toolVersion: "test"))

        // Read back: kept compressed, and written again (each blob decoded once for its figures) the same.
        let document = try JSONValue(parsing: Array(text.utf8))
        let loaded = try LoadedReport(document: document, source: "r.json")
        #expect(loaded.result.intervals.count == result.intervals.count)
        let isReadAtRest = loaded.result.intervals.allSatisfy { $0.isAtRest }
        #expect(isReadAtRest)
        // (Rates differ: a report's times are in milliseconds. The histogram entries do not.)
        let rewritten = RunReport.json(loaded.result, toolVersion: "test", commit: nil)
        func histogramEntries(_ report: JSONValue) -> [[String: JSONValue]] {
            (report["intervals"]?.arrayValue ?? []).map { interval in
                var entries: [String: JSONValue] = [:]
                for member in interval["metrics"]?.objectValue?.members ?? [] where member.value["histogram"] != nil {
                    entries[member.key] = member.value
                }
                return entries
            }
        }
        #expect(histogramEntries(rewritten) == histogramEntries(document))
        #expect(histogramEntries(document).contains { !$0.isEmpty })
        for (read, written) in zip(loaded.result.intervals, result.intervals) {
            #expect(try read.metrics.json(seconds: 1, operations: 0) == written.metrics.json(seconds: 1, operations: 0))
        }
    }

    @Test("an interval blob damaged past its header loads, and fails with its place only where it is used: --html, --hlog, merge, compare")
    func damagedBlobFailsWhereUsed() async throws {
        let directory = try scratchDirectory("at-rest-damaged")
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let three = try SyntheticReport.loaded(intervals: SyntheticReport.series(median: 1000, intervals: 3, seed: 1))
        var document = RunReport.json(three.result, toolVersion: "test", commit: nil)
        let place = "intervals[2].metrics.ws.message_rtt.histogram"
        guard case .object(var root) = document, case .array(var intervals)? = root["intervals"],
            case .object(var entry) = intervals[2], case .object(var metrics)? = entry["metrics"],
            case .object(var rtt)? = metrics["ws.message_rtt"], let blob = rtt["histogram"]?.stringValue,
            var bytes = Data(base64Encoded: blob)
        else { Issue.record("the report has no interval RTT histogram"); return }
        // The last byte is the zlib stream's Adler-32: the header and the layout still read, the counts do not.
        bytes[bytes.count - 1] ^= 0xff
        rtt["histogram"] = .string(bytes.base64EncodedString())
        metrics["ws.message_rtt"] = .object(rtt)
        entry["metrics"] = .object(metrics)
        intervals[2] = .object(entry)
        root["intervals"] = .array(intervals)
        document = .object(root)
        try Data((document.formatted() + "\n").utf8).write(to: URL(fileURLWithPath: path("damaged.json")))
        // Another run with one interval: merge adds into the first and takes the other two as they are.
        try SyntheticReport.write(
            try SyntheticReport.loaded(intervals: SyntheticReport.series(median: 1000, intervals: 1, seed: 2)), to: path("other.json"))

        let loaded = try LoadedReport(contentsOf: path("damaged.json"))
        _ = try loaded.result.intervals[1].metrics
        let error = #expect(throws: ReportFormatError.self) { _ = try loaded.result.intervals[2].metrics }
        #expect(error?.path == path("damaged.json") + ": " + place && error?.reason.contains("zlib") == true,
                "\(String(describing: error))")

        let summary = try await wsloadProcess(["report", path("damaged.json")])
        #expect(summary.code == .success, "the summary uses no interval: \(summary.error)")
        let uses: [(name: String, arguments: [String], output: String?)] = [
            ("--html", ["report", path("damaged.json"), "--html", path("r.html")], path("r.html")),
            ("--hlog", ["report", path("damaged.json"), "--hlog", path("r.hlog")], path("r.hlog")),
            ("merge", ["merge", path("damaged.json"), path("other.json"), "-o", path("m.json")], path("m.json")),
            ("compare", ["compare", path("other.json"), path("damaged.json")], nil),
        ]
        for use in uses {
            let result = try await wsloadProcess(use.arguments)
            #expect(result.code == .invalidInput, "\(use.name): exit \(result.code): \(result.error)")
            #expect(result.error.contains(place), "\(use.name): \(result.error)")
            if let output = use.output { #expect(!FileManager.default.fileExists(atPath: output), "\(use.name) wrote \(output)") }
        }
    }
}

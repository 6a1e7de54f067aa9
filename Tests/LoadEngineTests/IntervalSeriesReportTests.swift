import Crypto
import Foundation
import Histogram
import JSON
import Profile
import Testing
import TestSupport
import WSLoadCLI

@testable import Reporting

/// The report's `intervalSeries` as files carry it (issue 15 item 1): merged across shards of different factors,
/// refused when crafted, and the journal (the interval log) streamed in chunks with the same result as in memory.
@Suite("Interval series in reports and journals", .serialized, .timeLimit(.minutes(4)))
struct IntervalSeriesReportTests {
    static func json(_ metrics: MetricSet) -> String { metrics.json(seconds: 1, operations: 0).formatted(pretty: false) }

    /// A shard's report whose 8 one-second base intervals are `series`, held at `factor` base intervals per entry.
    private func shardReport(_ series: [MetricSet], shard: Shard, factor: Int, file: String?) throws -> LoadedReport {
        var report = try SyntheticReport.loaded(intervals: series, shard: shard, source: "shard\(shard.index).json")
        report.result.intervals = try IntervalSeries.coarsened(report.result.intervals, by: factor)
        report.result.intervalLog = .init(file: file, count: series.count, baseSeconds: 1, factor: factor)
        return try LoadedReport(document: RunReport.json(report.result, toolVersion: "test", commit: nil), source: report.source)
    }

    @Test("shards of different factors merge: the finer is coarsened to the largest factor, then entries add by position")
    func mergeCoarsensToTheLargestFactor() async throws {
        let directory = try scratchDirectory("series-merge")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = SyntheticReport.series(median: 500, intervals: 8, perInterval: 20, seed: 1)
        let second = SyntheticReport.series(median: 900, intervals: 8, perInterval: 30, seed: 2)
        let fine = try shardReport(first, shard: Shard(index: 0, count: 2), factor: 1, file: nil)
        let coarse = try shardReport(second, shard: Shard(index: 1, count: 2), factor: 4, file: "b.intervals.jsonl")
        #expect(fine.result.intervals.count == 8 && coarse.result.intervals.count == 2)
        var expected: [MetricSet] = []
        for entry in 0..<2 {
            var sum = MetricSet()
            for index in entry * 4..<(entry + 1) * 4 {
                try sum.add(first[index])
                try sum.add(second[index])
            }
            expected.append(sum)
        }
        for order in [[fine, coarse], [coarse, fine]] {
            let merged = try ReportMerger.merge(order)
            #expect(try merged.intervals.map { Self.json(try $0.metrics) } == expected.map(Self.json), "each entry: 4 base intervals of each shard")
            #expect(merged.intervalLog == RunResult.IntervalLog(file: nil, count: 8, baseSeconds: 1, factor: 4),
                    "no one file holds every interval of a merge")
            var total = MetricSet()
            for metrics in first + second { try total.add(metrics) }
            #expect(Self.json(merged.total) == Self.json(total))
        }
        // Through the command line, and read back.
        try SyntheticReport.write(fine, to: directory.appendingPathComponent("a.json").path)
        try SyntheticReport.write(coarse, to: directory.appendingPathComponent("b.json").path)
        let result = await wsload(["merge", directory.appendingPathComponent("a.json").path,
                                   directory.appendingPathComponent("b.json").path, "--out", directory.appendingPathComponent("m.json").path])
        #expect(result.code == .success, "\(result.error)")
        let document = try JSONValue(parsing: Array(try Data(contentsOf: directory.appendingPathComponent("m.json"))))
        // Synthetic reports have no interval logs: the merge names none, and says why.
        #expect(document["intervalSeries"]?["file"] == .null && document["intervalSeries"]?["factor"] == 4
            && document["intervalSeries"]?["count"] == 8 && document["intervalSeries"]?["baseSeconds"] == 1)
        #expect(document["intervalSeries"]?["fileMissing"]?.stringValue?.contains("a.json names no interval log") == true,
                "\(document["intervalSeries"] ?? .null)")
        #expect(result.error.contains("warning: no merged interval log: "), "\(result.error)")
        #expect(document["intervals"]?.arrayValue?.count == 2)
    }

    @Test("reports from before interval series (no key) read as factor 1 and merge with series as before")
    func reportsWithoutSeries() throws {
        let old = try SyntheticReport.loaded(intervals: SyntheticReport.series(median: 500, intervals: 3, seed: 4))
        #expect(old.result.intervalLog == nil && old.result.intervalFactor == 1)
        #expect(RunReport.json(old.result, toolVersion: "t", commit: nil)["intervalSeries"] == nil, "none written for none read")
    }

    /// A report with 2 intervals and a valid `intervalSeries`.
    private func baseDocument() throws -> JSONValue {
        var report = try SyntheticReport.loaded(intervals: SyntheticReport.series(median: 500, intervals: 2, perInterval: 10, seed: 5))
        report.result.intervalLog = .init(file: nil, count: 2, baseSeconds: 1, factor: 1)
        return RunReport.json(report.result, toolVersion: "test", commit: nil)
    }

    private func replacing(_ document: JSONValue, _ key: String?, with value: JSONValue) -> JSONValue {
        guard var root = document.objectValue else { return document }
        guard let key else {
            root["intervalSeries"] = value
            return .object(root)
        }
        var series = root["intervalSeries"]?.objectValue ?? JSONObject()
        series[key] = value
        root["intervalSeries"] = .object(series)
        return .object(root)
    }

    @Test("a crafted intervalSeries is refused, exit 65 naming its JSON path; a valid one reads")
    func hostileSeries() async throws {
        let directory = try scratchDirectory("series-hostile")
        defer { try? FileManager.default.removeItem(at: directory) }
        let base = try baseDocument()
        let cases: [(String?, JSONValue, String)] = [
            (nil, "all of them", "intervalSeries: expected an object"),
            ("factor", 3, "intervalSeries.factor"), ("factor", 0, "intervalSeries.factor"), ("factor", -2, "intervalSeries.factor"),
            ("factor", 2.5, "intervalSeries.factor"), ("factor", "4", "intervalSeries.factor"),
            ("factor", .number(Double(1 << 62)), "intervalSeries.factor"), ("factor", .null, "intervalSeries.factor"),
            ("count", 1, "intervalSeries.count"), ("count", -1, "intervalSeries.count"), ("count", 3, "intervalSeries.count"),
            ("baseSeconds", 0, "intervalSeries.baseSeconds"), ("baseSeconds", -1, "intervalSeries.baseSeconds"),
            ("baseSeconds", .number(1e300), "intervalSeries.baseSeconds"), ("baseSeconds", "1", "intervalSeries.baseSeconds"),
            ("file", "../../etc/passwd", "intervalSeries.file"), ("file", "logs/r.intervals.jsonl", "intervalSeries.file"),
            ("file", "/tmp/x", "intervalSeries.file"), ("file", "", "intervalSeries.file"), ("file", "..", "intervalSeries.file"),
            ("file", "a\u{1}b", "intervalSeries.file"), ("file", .string(String(repeating: "x", count: 256)), "intervalSeries.file"),
            ("file", 7, "intervalSeries.file"),
        ]
        for (index, (key, value, place)) in cases.enumerated() {
            let file = directory.appendingPathComponent("crafted-\(index).json").path
            try Data((replacing(base, key, with: value).formatted() + "\n").utf8).write(to: URL(fileURLWithPath: file))
            let result = try await wsloadProcess(["report", file])
            #expect(result.code.rawValue == 65, "\(key ?? "-") = \(value): exit \(result.code.rawValue): \(result.error)")
            #expect(result.error.contains("\(file): \(place)"), "\(place): \(result.error)")
        }
        // The control: downsampled (2 entries of up to 2), naming a plain file that is not there.
        let valid = replacing(replacing(replacing(base, "factor", with: 2), "count", with: 3), "file", with: "r.intervals.jsonl")
        let file = directory.appendingPathComponent("valid.json").path
        try Data((valid.formatted() + "\n").utf8).write(to: URL(fileURLWithPath: file))
        let read = try LoadedReport(contentsOf: file)
        #expect(read.result.intervalLog == RunResult.IntervalLog(file: "r.intervals.jsonl", count: 3, baseSeconds: 1, factor: 2))
        // --hlog of it: the log it names is missing, so the report's intervals are written, with a warning.
        let hlog = directory.appendingPathComponent("v.hlog").path
        let exported = await wsload(["report", file, "--hlog", hlog])
        #expect(exported.code == .success && exported.error.contains("r.intervals.jsonl"), "\(exported.error)")
        #expect(try String(contentsOfFile: hlog, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("Tag=") }.count == 2)
    }

    /// A journal of `intervals` intervals in `RunJournal`'s records (several MiB: more than one read chunk), written
    /// at once rather than fsync'd record by record.
    private func writeJournal(at report: String, intervals: Int, maxIntervals: Int) throws -> [MetricSet] {
        let text = SyntheticReport.profileText.replacingOccurrences(of: #""seed": 1,"#, with: #""seed": 1, "report": {"maxIntervals": \#(maxIntervals)},"#)
        let profile = try ProfileDecoder.decode(Array(text.utf8))
        var lines = [RunJournal.headerRecord(profile: profile, seed: 1, shard: nil, loops: 1, startedAt: Date(timeIntervalSince1970: 1_800_000_000),
                                             report: report, toolVersion: "test", commit: nil, runID: "streamed").formatted(pretty: false)]
        let series = SyntheticReport.series(median: 700, intervals: intervals, perInterval: 300, seed: 9)
        for (index, metrics) in series.enumerated() {
            lines.append(RunJournal.intervalRecord(
                .init(start: .seconds(index), end: .seconds(index + 1), liveConnections: 3, metrics: metrics), index: index,
                scenarios: [("s", metrics)], invariants: InvariantReport()).formatted(pretty: false))
        }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: report + ".partial"))
        return series
    }

    @Test("a journal of many chunks streams: the same report from the file as from memory, a torn tail at its true offset, a bounded series")
    func journalStreamsInChunks() async throws {
        let directory = try scratchDirectory("series-stream")
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = directory.appendingPathComponent("r.json").path
        let path = report + ".partial"
        // Written and read off the cooperative pool: seconds of decoding in a debug build.
        let (series, bytes, intact, fromFile, fromBytes) = try await offPool {
            let series = try self.writeJournal(at: report, intervals: 900, maxIntervals: 50)
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            let intact = bytes.count
            bytes += Array(#"{"record":"interval","index":900,"sta"#.utf8)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let fromFile = try JournalRecovery(contentsOf: path)
            var budget = HistogramDecodeBudget()
            let fromBytes = try JournalRecovery(bytes: bytes, source: path, name: "r.json.partial", budget: &budget)
            return (series, bytes, intact, fromFile, fromBytes)
        }
        #expect(bytes.count > 1 << 20, "\(bytes.count) bytes: more than one of the reader's 1 MiB chunks")
        #expect(fromFile.warnings == fromBytes.warnings)
        #expect(fromFile.warnings.first?.contains("torn last record at byte offset \(intact)") == true, "\(fromFile.warnings)")
        #expect(Self.json(fromFile.result.total) == Self.json(fromBytes.result.total))
        var sum = MetricSet()
        for metrics in series { try sum.add(metrics) }
        #expect(Self.json(fromFile.result.total) == Self.json(sum), "the totals are every interval's, not the series'")
        #expect(fromFile.result.intervals.count <= 50 && fromFile.result.intervals.count > 25)
        // A recovery names no file itself: `report --recover` places the journal beside the report it writes and names that.
        #expect(fromFile.result.intervalLog == RunResult.IntervalLog(file: nil, count: 900, baseSeconds: 1, factor: 32))
        #expect(try fromFile.result.intervals.map { Self.json(try $0.metrics) } == fromBytes.result.intervals.map { Self.json(try $0.metrics) })
        #expect(fromFile.result.elapsed == .seconds(900))
    }

    @Test("a line past the 64 MiB record cap: an error naming its line and offset, or a torn tail when it is the last")
    func oversizedRecord() async throws {
        let directory = try scratchDirectory("series-oversized")
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = directory.appendingPathComponent("r.json").path
        _ = try writeJournal(at: report, intervals: 1, maxIntervals: 600)
        let path = report + ".partial"
        let intact = Int(try FileManager.default.attributesOfItem(atPath: path)[.size] as! UInt64)
        // 65 MiB written and read twice: off the cooperative pool.
        let (torn, error) = try await offPool { () -> (JournalRecovery, JournalFormatError?) in
            let handle = FileHandle(forWritingAtPath: path)!
            handle.seekToEndOfFile()
            let filler = Data(repeating: UInt8(ascii: "x"), count: 1 << 20)
            for _ in 0..<(RunJournal.maximumRecordSize >> 20) + 1 { handle.write(filler) }
            try handle.close()
            // Torn: no line end before the end of the journal.
            let torn = try JournalRecovery(contentsOf: path)
            // Oversized: a line end after it.
            let more = FileHandle(forWritingAtPath: path)!
            more.seekToEndOfFile()
            more.write(Data("\n{}\n".utf8))
            try more.close()
            do {
                _ = try JournalRecovery(contentsOf: path)
                return (torn, nil)
            } catch {
                return (torn, error as? JournalFormatError)
            }
        }
        let tornLength = RunJournal.maximumRecordSize + (1 << 20)
        let warning = torn.warnings.first ?? ""
        #expect(warning.contains("torn last record at byte offset \(intact) (\(tornLength) bytes"), "\(warning)")
        #expect(torn.result.intervals.count == 1)
        #expect(error?.description.contains("line 3 (byte offset \(intact)): a record longer than the journal's cap of 64 MiB") == true,
                "\(String(describing: error))")
    }

    @Test("a journal that is not a regular file (/dev/zero never ends) is refused before it is read, not streamed forever")
    func notARegularFile() throws {
        let error = #expect(throws: JournalFormatError.self) { _ = try JournalRecovery(contentsOf: "/dev/zero") }
        #expect(error?.isUnreadable == true && error?.description == "/dev/zero: is a character device, not a regular file", "\(String(describing: error))")
    }

    @Test("the decode budget of a journal grows with its size (an honest journal of days reads) and is the command's for a small one")
    func budgetScalesWithSize() {
        #expect(JournalRecovery.decodeBudget(forJournalOf: 1000).remainingSlots == HistogramDecodeBudget.commandSlots)
        #expect(JournalRecovery.decodeBudget(forJournalOf: 8 << 30).remainingSlots == (8 << 30) * 256)
        #expect(JournalRecovery.decodeBudget(forJournalOf: .max).remainingSlots == .max)
    }
}

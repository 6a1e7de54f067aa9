import Foundation
import Histogram
import JSON
import Profile
import Reporting
import Testing
import TestSupport
import WSLoadCLI

/// The run journal's writer and its recovery, without sockets: a journal written by `RunJournal` with known
/// intervals, then torn, corrupted, oversized or left in the way, and read back by `wsload report --recover`.
/// A metric set as its report JSON.
func fingerprint(_ metrics: MetricSet) -> String { metrics.json(seconds: 1, operations: 0).formatted(pretty: false) }

@Suite("Run journal format and recovery", .serialized, .timeLimit(.minutes(2)))
struct RunJournalFormatTests {
    private static let profile = try! ProfileDecoder.decode(Array(SyntheticReport.profileText.utf8))  // a fixed, valid profile

    /// A journal of `intervals` one-second intervals of echo metrics, written by `RunJournal` under `directory`;
    /// returns its path and the intervals' metrics.
    private func writeJournal(in directory: URL, intervals: Int = 3) throws -> (path: String, metrics: [MetricSet]) {
        let report = directory.appendingPathComponent("r.json").path
        let journal = RunJournal(toolVersion: "test", commit: nil, reportPath: { _ in report })
        journal.begin(profile: Self.profile, seed: 7, shard: nil, loops: 2, startedAt: Date(timeIntervalSince1970: 1_800_000_000))
        let series = SyntheticReport.series(median: 800, intervals: intervals, perInterval: 50, seed: 3)
        for (index, metrics) in series.enumerated() {
            var invariants = InvariantReport()
            invariants.checked["messages.in_sequence"] = 50
            journal.append(.init(start: .seconds(index), end: .seconds(index + 1), liveConnections: 10, metrics: metrics),
                           scenarios: [("s", metrics)], invariants: invariants)
        }
        #expect(journal.problem == nil)
        #expect(journal.intervalCount == intervals)
        journal.close()
        return (report + ".partial", series)
    }

    @Test("recovery: a report marked incomplete whose totals are the exact sum of the journaled intervals")
    func recoversExactSum() async throws {
        let directory = try scratchDirectory("journal")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (journal, series) = try writeJournal(in: directory)
        let lines = try String(contentsOfFile: journal, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4, "a header and one line per interval")
        #expect(try JSONValue(parsing: String(lines[0]))["schema"]?.stringValue == "wsload.journal/1")
        let out = directory.appendingPathComponent("r.json").path
        let result = await wsload(["report", "--recover", journal])
        #expect(result.code == .success, "\(result.error)")
        #expect(result.output.contains("INCOMPLETE"), "\(result.output)")
        let report = try LoadedReport(contentsOf: out)
        #expect(report.result.isIncomplete)
        #expect(report.document["run"]?["incomplete"] == .bool(true))
        #expect(report.result.intervals.count == 3)
        var sum = MetricSet()
        for metrics in series { try sum.add(metrics) }
        // Compared as report JSON (the histogram blobs are lossless): a mismatch prints two short documents.
        #expect(fingerprint(report.result.total) == fingerprint(sum))
        #expect(report.result.scenarios.first.map { fingerprint($0.metrics) } == fingerprint(sum))
        #expect(report.result.invariants.checked["messages.in_sequence"] == 150)
        #expect(report.result.seed == 7)
        #expect(report.result.elapsed == .seconds(3))
        // `wsload report` shows it; merge refuses it; compare warns.
        #expect(await wsload(["report", out]).output.contains("INCOMPLETE"))
        let other = directory.appendingPathComponent("other.json").path
        try SyntheticReport.write(try SyntheticReport.loaded(intervals: series), to: other)
        let merged = await wsload(["merge", out, other])
        #expect(merged.code == .invalidInput && merged.error.contains("incomplete"), "\(merged.error)")
        let compared = await wsload(["compare", other, out])
        #expect(compared.error.contains("warning: \(out) is incomplete"), "\(compared.error)")
    }

    @Test("a torn last line is ignored with a warning naming its byte offset")
    func tornLastLine() async throws {
        let directory = try scratchDirectory("journal")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (journal, _) = try writeJournal(in: directory)
        let intact = try Data(contentsOf: URL(fileURLWithPath: journal))
        try (intact + Data(#"{"record":"interval","index":3,"start":3,"me"#.utf8)).write(to: URL(fileURLWithPath: journal))
        let result = await wsload(["report", "--recover", journal, "--out", directory.appendingPathComponent("x.json").path])
        #expect(result.code == .success, "\(result.error)")
        #expect(result.error.contains("torn last record at byte offset \(intact.count)"), "\(result.error)")
        #expect(try LoadedReport(contentsOf: directory.appendingPathComponent("x.json").path).result.intervals.count == 3)
    }

    @Test("a corrupt middle line is an error naming the line and its byte offset (exit 65); nothing is written")
    func corruptMiddleLine() async throws {
        let directory = try scratchDirectory("journal")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (journal, _) = try writeJournal(in: directory)
        var lines = try String(contentsOfFile: journal, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let offset = lines[0].utf8.count + 1 + lines[1].utf8.count + 1
        lines[2] = Substring(lines[2].replacingOccurrences(of: "\"index\":1", with: "\"index\":1,,"))
        try lines.joined(separator: "\n").write(toFile: journal, atomically: false, encoding: .utf8)
        let out = directory.appendingPathComponent("x.json").path
        let result = await wsload(["report", "--recover", journal, "--out", out])
        #expect(result.code == .invalidInput)
        #expect(result.error.contains("line 3 (byte offset \(offset))"), "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test("an interval whose counts would overflow the sum is refused with its line, not wrapped")
    func overflowingSum() async throws {
        let directory = try scratchDirectory("journal")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (journal, _) = try writeJournal(in: directory, intervals: 0)
        var text = try String(contentsOfFile: journal, encoding: .utf8)
        // 2^53 − 1 per line (the largest exact JSON integer): the 2,050th such line passes 2^64 − 1.
        for index in 0..<2100 {
            text += #"{"record":"interval","index":\#(index),"start":\#(index),"end":\#(index + 1),"connections":1,"#
                + #""metrics":{"ws.messages_sent":{"count":9007199254740991}},"#
                + #""scenarios":[{"name":"s","metrics":{}}],"invariants":{}}"# + "\n"
        }
        try text.write(toFile: journal, atomically: false, encoding: .utf8)
        let result = await wsload(["report", "--recover", journal, "--out", directory.appendingPathComponent("x.json").path])
        #expect(result.code == .invalidInput, "\(result.error)")
        #expect(result.error.contains("line 2050 ") && result.error.contains("overflow"), "\(result.error)")
    }

    @Test("a journal over the size cap is refused by its size, before it is read (exit 65)")
    func oversizedJournal() async throws {
        let directory = try scratchDirectory("journal")
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = directory.appendingPathComponent("big.json.partial").path
        #expect(FileManager.default.createFile(atPath: journal, contents: nil))
        #expect(truncate(journal, off_t(RunJournal.maximumSize + 1)) == 0, "a sparse file: no disk used")
        let result = await wsload(["report", "--recover", journal])
        #expect(result.code == .invalidInput)
        #expect(result.error.contains("larger than the journal cap"), "\(result.error)")
    }

    @Test("not a journal, an empty file, a missing file: 65, 65, 66")
    func notAJournal() async throws {
        let directory = try scratchDirectory("journal")
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = directory.appendingPathComponent("a.json.partial").path
        try SyntheticReport.write(try SyntheticReport.loaded(intervals: []), to: report)
        let notJournal = await wsload(["report", "--recover", report, "--out", directory.appendingPathComponent("o.json").path])
        #expect(notJournal.code == .invalidInput && notJournal.error.contains("line 1 (byte offset 0)"), "\(notJournal.error)")
        let empty = directory.appendingPathComponent("e.json.partial").path
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        #expect(await wsload(["report", "--recover", empty]).code == .invalidInput)
        #expect(await wsload(["report", "--recover", directory.appendingPathComponent("none.partial").path]).code == .noInput)
    }

    @Test("the journal is created O_EXCL and never through a symlink: an existing file or link is left alone")
    func neverReplacesOrFollows() throws {
        let directory = try scratchDirectory("journal")
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = directory.appendingPathComponent("r.json").path
        let elsewhere = directory.appendingPathComponent("elsewhere").path
        try FileManager.default.createSymbolicLink(atPath: report + ".partial", withDestinationPath: elsewhere)
        let journal = RunJournal(toolVersion: "test", commit: nil, reportPath: { _ in report })
        journal.begin(profile: Self.profile, seed: 1, shard: nil, loops: 1, startedAt: Date())
        #expect(journal.problem?.contains("cannot create") == true, "\(journal.problem ?? "")")
        #expect(!FileManager.default.fileExists(atPath: elsewhere), "the link was not followed")
        journal.append(.init(start: .zero, end: .seconds(1), liveConnections: 0, metrics: MetricSet()), scenarios: [], invariants: .init())
        journal.remove()
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: report + ".partial")) == elsewhere,
                "a journal never created is never removed")  // nil (no link) fails the expectation
    }
}

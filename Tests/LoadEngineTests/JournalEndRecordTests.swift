import Foundation
import Histogram
import JSON
import Profile
import Reporting
import Testing
import TestSupport
import WSLoadCLI

/// The run journal's end record and its header's start time, without sockets: journals written by `RunJournal` with
/// known figures, read back by `JournalRecovery` and `wsload report --recover`, then damaged.
@Suite("Run journal: the end record and run.startAt", .serialized, .timeLimit(.minutes(2)))
struct JournalEndRecordTests {
    private static let profile = try! ProfileDecoder.decode(Array(SyntheticReport.profileText.utf8))
    private static let startedAt = Date(timeIntervalSince1970: 1_800_000_000)

    /// A journal of three one-second intervals under `directory`, begun with `startAt`; with `finished`, the end record
    /// of a result whose totals add what no interval holds (a counter counted at the stop, a check after it), with a
    /// chaos record, a reconnect storm and an interruption. Returns the journal's path and that result.
    private func journal(in directory: URL, startAt: Date? = nil, finished: Bool) throws -> (path: String, result: RunResult) {
        let report = directory.appendingPathComponent("r.json").path
        let journal = RunJournal(toolVersion: "test", commit: nil, startAt: startAt, reportPath: { _ in report })
        journal.begin(profile: Self.profile, seed: 7, shard: nil, loops: 2, startedAt: Self.startedAt)
        let series = SyntheticReport.series(median: 800, intervals: 3, perInterval: 50, seed: 3)
        var total = MetricSet()
        var invariants = InvariantReport()
        for (index, metrics) in series.enumerated() {
            var checks = InvariantReport()
            checks.checked["messages.in_sequence"] = 50
            journal.append(.init(start: .seconds(index), end: .seconds(index + 1), liveConnections: 10, metrics: metrics),
                           scenarios: [("s", metrics)], invariants: checks)
            try total.add(metrics)
            invariants.add(checks)
        }
        total.counters[Metric.unfinishedAtStop.name] = 2
        invariants.checked["cancellation.stopped_within_bound"] = 10
        var result = RunResult(
            profile: Self.profile, seed: 7, loops: 2, startedAt: Self.startedAt, endedAt: Self.startedAt + 3.5,
            elapsed: .milliseconds(3_250), interruptedBy: "SIGINT", abortedBy: nil,
            scenarios: [.init(scenario: Self.profile.scenarios[0], metrics: total)], total: total, intervals: [],
            unfinishedConnections: 2, liveHandlesAfterStop: 1, waitingTasksAfterStop: 3, shard: nil, mergedFrom: [],
            invariants: invariants, chaos: [.init(at: .seconds(1), firedAt: .milliseconds(1_004), action: "kill 50%", affected: 5)],
            reconnectStorm: .init(peakReconnectsPer100ms: 4, peakDropsPer100ms: 5))
        result.runID = journal.runID
        if finished {
            journal.finish(result)
            // Nothing follows the end record: an interval appended after it is not written.
            journal.append(.init(start: .seconds(3), end: .seconds(4), liveConnections: 1, metrics: series[0]),
                           scenarios: [("s", series[0])], invariants: InvariantReport())
        }
        #expect(journal.problem == nil)
        #expect(journal.isFinished == finished)
        journal.close()
        return (report + ".partial", result)
    }

    @Test("a journal with its end record recovers as the complete report: the totals, invariants, end, leaks, chaos and storm the run had")
    func endRecordRecoversComplete() throws {
        let directory = try scratchDirectory("journal-end")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (path, expected) = try journal(in: directory, finished: true)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 5, "a header, three intervals, the end record; nothing after it")
        let end = try JSONValue(parsing: String(lines[4]))
        #expect(end["record"]?.stringValue == "end" && end["intervals"]?.integerValue == 3)

        let recovered = try JournalRecovery(contentsOf: path).result
        #expect(!recovered.isIncomplete)
        #expect(fingerprint(recovered.total) == fingerprint(expected.total), "the run's totals, not only the intervals' sum")
        #expect(recovered.total.counter(.unfinishedAtStop) == 2)
        #expect(recovered.scenarios.map { fingerprint($0.metrics) } == [fingerprint(expected.total)])
        #expect(recovered.invariants.json() == expected.invariants.json())
        #expect(recovered.endedAt == expected.endedAt && recovered.elapsed == expected.elapsed)
        #expect(recovered.interruptedBy == "SIGINT" && recovered.abortedBy == nil)
        #expect(recovered.unfinishedConnections == 2 && recovered.liveHandlesAfterStop == 1 && recovered.waitingTasksAfterStop == 3)
        #expect(recovered.chaos == expected.chaos && recovered.reconnectStorm == expected.reconnectStorm)
        #expect(recovered.runID == expected.runID)
        #expect(recovered.intervals.count == 3 && recovered.intervalLog?.file == nil)
        // Written as a report, it is the run's report (the writer is the same; only the host may differ).
        let written = RunReport.json(recovered, toolVersion: "test", commit: nil)
        let original = RunReport.json(expected, toolVersion: "test", commit: nil)
        for key in ["run", "total", "scenarios", "thresholds", "invariants", "chaos", "errors"] {
            #expect(written[key] == original[key], "\(key)")
        }
    }

    @Test("without the end record the recovery is marked incomplete, its totals the intervals' sum")
    func noEndRecordIsIncomplete() throws {
        let directory = try scratchDirectory("journal-no-end")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (path, expected) = try journal(in: directory, finished: false)
        let recovered = try JournalRecovery(contentsOf: path).result
        #expect(recovered.isIncomplete && recovered.interruptedBy == nil && recovered.chaos.isEmpty)
        #expect(recovered.total.counter(.unfinishedAtStop) == 0)
        #expect(recovered.total.counter(.messagesSent) == expected.total.counter(.messagesSent))
    }

    @Test("run.startAt: the header records it with lateBy, a recovery keeps it; a header without one (older journals) reads")
    func startAtRecovered() async throws {
        let directory = try scratchDirectory("journal-start")
        defer { try? FileManager.default.removeItem(at: directory) }
        let startAt = Self.startedAt - 0.25
        let (path, _) = try journal(in: directory, startAt: startAt, finished: false)
        let header = try JSONValue(parsing: String(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")[0]))
        #expect(header["run"]?["startAt"]?.stringValue?.hasSuffix(":59.750Z") == true, "\(header["run"] ?? .null)")
        #expect(header["run"]?["lateBy"]?.numberValue == 0.25)
        let out = directory.appendingPathComponent("x.json").path
        let recovered = await wsload(["report", "--recover", path, "--out", out])
        #expect(recovered.code == .success, "\(recovered.error)")
        let report = try LoadedReport(contentsOf: out)
        #expect(report.result.scheduledStart == .init(at: startAt, lateBy: 0.25))
        #expect(report.document["run"]?["startAt"] == header["run"]?["startAt"])

        // An older journal's header, without the fields: no start time, as before.
        let (plain, _) = try journal(in: directory.appendingPathComponent("old"), finished: false)
        #expect(try JournalRecovery(contentsOf: plain).result.scheduledStart == nil)
    }

    /// `path`'s lines with line `index` (0-based) replaced by `transform` of its JSON, written to `name` beside it.
    private func damaged(_ path: String, line index: Int, as name: String, _ transform: (inout JSONObject) -> Void) throws -> String {
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        var object = try #require(try JSONValue(parsing: lines[index]).objectValue)
        transform(&object)
        lines[index] = JSONValue.object(object).formatted(pretty: false)
        let target = URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(name).path
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: target))
        return target
    }

    @Test("damaged: a bad start time, an end record counting other intervals, a bad end field, a record after the end: exit 65 naming line and field")
    func damagedJournalsRefused() async throws {
        let directory = try scratchDirectory("journal-damaged")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (path, _) = try journal(in: directory, startAt: Self.startedAt, finished: true)
        let cases: [(name: String, line: Int, expected: String, change: (inout JSONObject) -> Void)] = [
            ("a.partial", 0, "line 1 (byte offset 0): run.startAt: expected an RFC 3339 time", { header in
                var run = header["run"]!.objectValue!
                run["startAt"] = "yesterday"
                header["run"] = .object(run)
            }),
            ("b.partial", 4, "line 5", { $0["intervals"] = 2 }),
            ("c.partial", 4, "elapsedSeconds: expected seconds", { $0["elapsedSeconds"] = -1 }),
            ("d.partial", 4, "scenarios: expected one entry per scenario", { $0["scenarios"] = .array([]) }),
        ]
        for (name, line, expected, change) in cases {
            let journal = try damaged(path, line: line, as: name, change)
            let result = await wsload(["report", "--recover", journal, "--out", directory.appendingPathComponent(name + ".json").path])
            #expect(result.code == .invalidInput, "\(name): \(result.error)")
            #expect(result.error.contains(expected), "\(name): \(result.error)")
        }
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.append(lines[3])
        let after = directory.appendingPathComponent("e.partial").path
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: after))
        let result = await wsload(["report", "--recover", after, "--out", directory.appendingPathComponent("e.json").path])
        #expect(result.code == .invalidInput)
        #expect(result.error.contains("line 6") && result.error.contains("after the end record"), "\(result.error)")
    }
}

import Foundation
import JSON
import Reporting
import Testing
import TestSupport
@testable import WSLoadCLI

/// Four real shard reports, made once: four `wsload run --shard i/4` processes on this box started together with
/// one `--start-at` (the shape a Slurm array or an Indexed Job runs), each against its own embedded server.
private actor ShardRun {
    static let shared = ShardRun()
    private var reports: [String: Data]?

    /// The shards' reports by file name (`shard-1.json` … `shard-4.json`).
    func files() async throws -> [String: Data] {
        if let reports { return reports }
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(name: "sharded", duration: "1s", connections: 8))
        // A lead long enough for four debug binaries to come up on a busy box; a shard that came up later starts at
        // once and its lateBy says so (the skew figure then shows it).
        let startAt = RunReport.timestamp(Date().addingTimeInterval(6))
        let children = try (1...4).map { index in
            try WSLoadProcess(["run", profile, "--shard", "\(index)/4", "--loops", "1", "--start-at", startAt,
                               "--out", scratch.path("reports/shard-\(index).json"), "--quiet"])
        }
        for child in children {
            let status = try await child.waitForExit(within: .seconds(120))
            #expect(status == 0, "\(child.errors)")
        }
        var files: [String: Data] = [:]
        for index in 1...4 {
            files["shard-\(index).json"] = try Data(contentsOf: URL(fileURLWithPath: scratch.path("reports/shard-\(index).json")))
        }
        reports = files
        return files
    }
}

/// `wsload merge DIR` (README "Distributed runs"): every shard report in a directory, refusing a missing shard
/// (exit 6, named), a duplicate, another start (unless `--allow-different-starts`); skipping a merged report and
/// JSON that is not a report, with a note; refusing what should be a report and is not one.
@Suite("wsload merge DIR", .serialized, .timeLimit(.minutes(5)))
struct MergeDirectoryTests {
    /// A scratch directory holding the four shard reports as `reports/shard-<i>.json`.
    private func shardDirectory() async throws -> RunScratch {
        let scratch = try RunScratch()
        for (name, data) in try await ShardRun.shared.files() { try scratch.write("reports/" + name, String(decoding: data, as: UTF8.self)) }
        return scratch
    }

    private func merge(_ arguments: String...) async -> (code: ExitCode, output: String, error: String) {
        await runCLIArray(["merge"] + arguments)
    }

    private static func seconds(_ value: JSONValue?) throws -> Double {
        let text = try #require(value?.stringValue)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return try #require(formatter.date(from: text)).timeIntervalSince1970
    }

    private static func count(_ report: JSONValue, _ metric: String) -> Int {
        report["total"]?["metrics"]?[metric]?["count"]?.integerValue ?? 0
    }

    /// Rewrites a report's `run` section.
    private static func editingRun(_ document: JSONValue, _ edit: (inout JSONObject) -> Void) throws -> String {
        var root = try #require(document.objectValue)
        var run = try #require(root["run"]?.objectValue)
        edit(&run)
        root["run"] = .object(run)
        return JSONValue.object(root).formatted()
    }

    @Test("the four shards merge: sums, one startAt kept, the latest lateBy, startSkew = latest − earliest start")
    func mergesShards() async throws {
        let scratch = try await shardDirectory()
        let result = await merge(scratch.path("reports"), "--out", scratch.path("merged.json"))
        #expect(result.code == .success, "\(result.error)")
        #expect(result.error.contains("merged 4 reports into"), "\(result.error)")
        let merged = try scratch.json("merged.json")
        let shards = try (1...4).map { try scratch.json("reports/shard-\($0).json") }
        for metric in ["ws.connections_opened", "ws.messages_sent", "ws.messages_received"] {
            #expect(Self.count(merged, metric) == shards.map { Self.count($0, metric) }.reduce(0, +), "\(metric)")
        }
        #expect(Self.count(merged, "ws.connections_opened") == 8)
        #expect(merged["scenarios"]?.arrayValue?.first?["connections"]?.integerValue == 8)
        #expect(merged["invariantsHeld"] == .bool(true))
        let run = try #require(merged["run"])
        #expect(run["mergedFrom"]?.arrayValue?.count == 4)
        #expect(run["shard"] == nil)
        let startAt = try #require(shards[0]["run"]?["startAt"]?.stringValue)
        #expect(shards.allSatisfy { $0["run"]?["startAt"]?.stringValue == startAt })
        #expect(run["startAt"]?.stringValue == startAt)
        let lateBys = try shards.map { try #require($0["run"]?["lateBy"]?.numberValue) }
        #expect(run["lateBy"]?.numberValue == lateBys.max())
        let starts = try shards.map { try Self.seconds($0["run"]?["start"]) }
        let skew = try #require(run["startSkew"]?.numberValue)
        #expect(abs(skew - (starts.max()! - starts.min()!)) <= 0.0015, "startSkew \(skew) is the latest start − the earliest")
        #expect(skew >= 0 && skew < 3600, "a sane skew: \(skew)")
        #expect(try Self.seconds(run["start"]) == starts.min()!)
        print("figure: start skew of 4 local shards with one --start-at (debug build, 4 processes, 2 cores): "
            + "\(Int((skew * 1000).rounded())) ms; lateBy per shard \(lateBys.map { "\(Int(($0 * 1000).rounded())) ms" })")
    }

    @Test("a missing shard exits 6 naming it (and the journal a dead shard left); no merged report")
    func missingShard() async throws {
        let scratch = try await shardDirectory()
        try FileManager.default.removeItem(atPath: scratch.path("reports/shard-3.json"))
        let result = await merge(scratch.path("reports"), "--out", scratch.path("merged.json"))
        #expect(result.code == .shardMissing && result.code.rawValue == 6)
        #expect(result.error.contains("shard 3/4 missing (found 3 of 4): a shard is missing, the merge is incomplete"),
                "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("merged.json")))
        try scratch.write("reports/shard-3.json.partial", "{}\n")
        try FileManager.default.removeItem(atPath: scratch.path("reports/shard-1.json"))
        let two = await merge(scratch.path("reports"))
        #expect(two.code == .shardMissing)
        #expect(two.error.contains("shards 1/4, 3/4 missing (found 2 of 4)"), "\(two.error)")
        #expect(two.error.contains("run journals left in \(scratch.path("reports")): shard-3.json.partial"), "\(two.error)")
    }

    @Test("a duplicate shard, another start, or none beside a start: refused (65) naming the files")
    func refusals() async throws {
        let scratch = try await shardDirectory()
        let reports = scratch.path("reports")
        let second = try scratch.json("reports/shard-2.json")
        try scratch.write("reports/shard-2-again.json", second.formatted())
        let duplicate = await merge(reports)
        #expect(duplicate.code == .invalidInput)
        #expect(duplicate.error.contains("are both shard 2/4"), "\(duplicate.error)")
        try FileManager.default.removeItem(atPath: scratch.path("reports/shard-2-again.json"))

        let fourth = try scratch.json("reports/shard-4.json")
        let original = try #require(fourth["run"]?["startAt"]?.stringValue)
        let later = RunReport.timestamp(Date(timeIntervalSince1970: try Self.seconds(.string(original)) + 1))
        try scratch.write("reports/shard-4.json", try Self.editingRun(fourth) { $0["startAt"] = .string(later) })
        let different = await merge(reports, "--out", scratch.path("merged.json"))
        #expect(different.code == .invalidInput)
        #expect(different.error.contains("shard-4.json starts at \(later) but"), "\(different.error)")
        #expect(different.error.contains("starts at \(original); the shards of one run share --start-at"), "\(different.error)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("merged.json")))
        let allowed = await merge(reports, "--allow-different-starts", "--out", scratch.path("merged.json"))
        #expect(allowed.code == .success, "\(allowed.error)")
        let merged = try #require(try scratch.json("merged.json")["run"])
        #expect(merged["startAt"] == nil && merged["lateBy"] == nil, "different starts: no one startAt")
        #expect(merged["startSkew"]?.numberValue != nil)

        try scratch.write("reports/shard-4.json", try Self.editingRun(fourth) {
            $0["startAt"] = nil
            $0["lateBy"] = nil
        })
        let none = await merge(reports)
        #expect(none.code == .invalidInput)
        #expect(none.error.contains("shard-4.json has no start time (run.startAt)"), "\(none.error)")
        // The file form checks the same.
        let files = await merge(scratch.path("reports/shard-1.json"), scratch.path("reports/shard-4.json"))
        #expect(files.code == .invalidInput && files.error.contains("has no start time"), "\(files.error)")
    }

    @Test("a report that lies about its shard is refused (65): one slice's copy under another number, or the wrong share")
    func lyingShard() async throws {
        let scratch = try await shardDirectory()
        let reports = scratch.path("reports")
        // Shard 1's report copied as shard 4 with a run id of its own: without the check, slice 1 counts twice and the
        // set looks complete.
        let first = try scratch.json("reports/shard-1.json")
        try scratch.write("reports/shard-4.json", try Self.editingRun(first) {
            $0["shard"] = "4/4"
            $0["id"] = "lie-0000"
        })
        let copied = await merge(reports, "--out", scratch.path("merged.json"))
        #expect(copied.code == .invalidInput)
        #expect(copied.error.contains("shard-4.json and ") && copied.error.contains("shard-1.json ran with the same seed (run.seed "),
                "\(copied.error)")
        #expect(copied.error.contains("): one slice's report under two shard numbers"), "\(copied.error)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("merged.json")))

        // A report whose scenario holds another share than its shard's (8 connections: 2 each).
        try FileManager.default.removeItem(atPath: scratch.path("reports/shard-4.json"))
        try scratch.write("reports/shard-4.json", String(decoding: try await ShardRun.shared.files()["shard-4.json"]!, as: UTF8.self))
        var third = try #require(try scratch.json("reports/shard-3.json").objectValue)
        var scenarios = try #require(third["scenarios"]?.arrayValue)
        var scenario = try #require(scenarios[0].objectValue)
        scenario["connections"] = 3
        scenarios[0] = .object(scenario)
        third["scenarios"] = .array(scenarios)
        try scratch.write("reports/shard-3.json", JSONValue.object(third).formatted())
        let share = await merge(reports)
        #expect(share.code == .invalidInput)
        #expect(share.error.contains("shard-3.json says it is shard 3/4, whose share of scenario \"echo\"'s 8 connections is 2, "
            + "but it ran 3: not that shard's report"), "\(share.error)")
        // Unedited, the four merge (the checks refuse only the lie).
        try scratch.write("reports/shard-3.json", String(decoding: try await ShardRun.shared.files()["shard-3.json"]!, as: UTF8.self))
        #expect(await merge(reports).code == .success)
    }

    @Test("a merged report in DIR and JSON that is not a report are skipped with a note; the sums stay")
    func skips() async throws {
        let scratch = try await shardDirectory()
        let reports = scratch.path("reports")
        let first = await merge(reports, "--out", scratch.path("reports/merged.json"))  // the merge written into DIR
        #expect(first.code == .success, "\(first.error)")
        try scratch.write("reports/profile.json", echoProfile(duration: "1s"))
        try scratch.write("reports/other.json", #"{"schema": "someone-else/1", "run": {}}"#)
        try scratch.write("reports/list.json", "[1, 2, 3]")
        try scratch.write("reports/.shard-1.json", try scratch.json("reports/shard-1.json").formatted())  // hidden: not read
        try scratch.write("reports/notes.txt", "not json")
        let again = await merge(reports, "--out", scratch.path("again.json"))
        #expect(again.code == .success, "\(again.error)")
        #expect(again.error.contains("note: \(reports)/merged.json is a merged report (run.mergedFrom): skipped"), "\(again.error)")
        #expect(again.error.contains("note: \(reports)/profile.json is not a wsload report (no \"schema\"): skipped"))
        #expect(again.error.contains("note: \(reports)/other.json is not a wsload report (schema \"someone-else/1\"): skipped"))
        #expect(again.error.contains("note: \(reports)/list.json is not a wsload report"))
        #expect(!again.error.contains(".shard-1.json") && !again.error.contains("notes.txt"))
        let merged = try scratch.json("reports/merged.json")
        let remerged = try scratch.json("again.json")
        for metric in ["ws.connections_opened", "ws.messages_sent", "ws.messages_received"] {
            #expect(Self.count(remerged, metric) == Self.count(merged, metric), "\(metric) counted once")
        }
        #expect(remerged["run"]?["startSkew"] == merged["run"]?["startSkew"])
    }

    @Test("run.mergedFrom: null is a report of one run, as the reader takes it: merged, not skipped")
    func nullMergedFrom() async throws {
        let scratch = try await shardDirectory()
        let fourth = try scratch.json("reports/shard-4.json")
        try scratch.write("reports/shard-4.json", try Self.editingRun(fourth) { $0["mergedFrom"] = .null })
        let result = await merge(scratch.path("reports"), "--out", scratch.path("merged.json"))
        #expect(result.code == .success, "\(result.error)")
        #expect(!result.error.contains("is a merged report"), "\(result.error)")
        #expect(try scratch.json("merged.json")["run"]?["mergedFrom"]?.arrayValue?.count == 4)
    }

    @Test("what should be a report and is not: cut-off JSON, another schema version, a FIFO; an empty DIR; mixed arguments")
    func brokenInputs() async throws {
        let scratch = try await shardDirectory()
        let reports = scratch.path("reports")
        let text = try String(contentsOfFile: scratch.path("reports/shard-2.json"), encoding: .utf8)
        try scratch.write("reports/shard-5.json", String(text.prefix(text.count / 2)))
        let cut = await merge(reports)
        #expect(cut.code == .invalidInput)
        #expect(cut.error.contains("\(reports)/shard-5.json: not valid JSON"), "\(cut.error)")
        try FileManager.default.removeItem(atPath: scratch.path("reports/shard-5.json"))

        try scratch.write("reports/future.json", #"{"schema": "wsload.report/2"}"#)
        let future = await merge(reports)
        #expect(future.code == .invalidInput && future.error.contains("is not wsload.report/1"), "\(future.error)")
        try FileManager.default.removeItem(atPath: scratch.path("reports/future.json"))

        #expect(mkfifo(scratch.path("reports/fifo.json"), 0o600) == 0)
        let fifo = await merge(reports)  // never opened: a FIFO would wait for a writer
        #expect(fifo.code == .noInput && fifo.error.contains("fifo.json: is not a regular file"), "\(fifo.error)")
        try FileManager.default.removeItem(atPath: scratch.path("reports/fifo.json"))

        try FileManager.default.createDirectory(atPath: scratch.path("empty"), withIntermediateDirectories: true)
        let empty = await merge(scratch.path("empty"))
        #expect(empty.code == .noInput && empty.error.contains("holds no wsload report"), "\(empty.error)")
        let mixed = await merge(reports, scratch.path("reports/shard-1.json"))
        #expect(mixed.code == .usage && mixed.error.contains("is a directory"), "\(mixed.error)")
        let gone = await merge(scratch.path("nowhere"))
        #expect(gone.code == .usage, "one path that is not a directory: a merge needs two reports")
        let all = await merge(reports)
        #expect(all.code == .success, "after the removals the four shards merge: \(all.error)")
    }

    @Test("startSkew is exact on known starts, and a merge of merges keeps the whole spread")
    func skewArithmetic() async throws {
        let scratch = try await shardDirectory()
        // Shards' starts moved to known instants (start − startAt = lateBy kept consistent).
        let base = 1_796_167_800.0
        let offsets = [0.0, 0.010, 0.020, 0.250]
        var loaded: [LoadedReport] = []
        for index in 1...4 {
            let document = try scratch.json("reports/shard-\(index).json")
            let start = RunReport.timestamp(Date(timeIntervalSince1970: base + offsets[index - 1]))
            let text = try Self.editingRun(document) {
                $0["start"] = .string(start)
                $0["startAt"] = .string(RunReport.timestamp(Date(timeIntervalSince1970: base)))
                $0["lateBy"] = .number(offsets[index - 1])
            }
            loaded.append(try LoadedReport(document: try JSONValue(parsing: text), source: "shard-\(index).json"))
        }
        let whole = try ReportMerger.merge(loaded)
        #expect(whole.startSkew.map { ($0 * 1000).rounded() } == 250)
        #expect(whole.scheduledStart?.lateBy == 0.25)
        #expect(whole.startedAt.timeIntervalSince1970 == base)
        // Two merges of two, merged: the spread is the whole run's, not the gap between the two merges' starts.
        func reread(_ result: RunResult, _ name: String) throws -> LoadedReport {
            let text = RunReport.json(result, toolVersion: "test", commit: nil).formatted()
            return try LoadedReport(document: try JSONValue(parsing: text), source: name)
        }
        let low = try reread(try ReportMerger.merge([loaded[0], loaded[3]]), "a.json")  // 0 and 250 ms: skew 250
        let high = try reread(try ReportMerger.merge([loaded[1], loaded[2]]), "b.json")  // 10 and 20 ms: skew 10
        #expect(low.result.startSkew.map { ($0 * 1000).rounded() } == 250)
        let nested = try ReportMerger.merge([high, low])
        #expect(nested.startSkew.map { ($0 * 1000).rounded() } == 250, "\(String(describing: nested.startSkew))")
        #expect(nested.scheduledStart?.lateBy == 0.25)
    }
}

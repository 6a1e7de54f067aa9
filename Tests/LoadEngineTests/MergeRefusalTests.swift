import Crypto
import Foundation
import Histogram
import JSON
import LoadEngine
import Profile
import Reporting
import Testing
import WSLoadCLI

/// `wsload merge` adds only what adds exactly: shards of one split, each once, of one profile, with
/// histograms of one layout. Anything else is refused with exit 65 and a message naming what differs.
@Suite("Merge refusals", .timeLimit(.minutes(2)))
struct MergeRefusalTests {
    /// A shard's (or whole run's) report: 2,000 seeded echoes around 1 ms.
    private func report(shard: Shard?, seed: UInt64 = 1, profile: String = SyntheticReport.profileText,
                        source: String) throws -> LoadedReport {
        var random = SeededRandomNumberGenerator(seed: seed)
        return try SyntheticReport.loaded(
            total: SyntheticReport.echoMetrics(median: 1000, count: 2000, random: &random), shard: shard, profile: profile,
            source: source)
    }

    /// Writes `reports` (named by their sources) into a scratch directory and merges them on the command line;
    /// expects exit 65, `message` (with `DIR/` standing for the directory) on stderr, and no merged file.
    private func expectRefusal(
        _ reports: [LoadedReport], _ message: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let directory = try scratchDirectory("merge-refusal")
        defer { try? FileManager.default.removeItem(at: directory) }
        var paths: [String] = []
        for report in reports {
            let path = directory.appendingPathComponent(report.source).path
            try SyntheticReport.write(report, to: path)
            paths.append(path)
        }
        let out = directory.appendingPathComponent("merged.json").path
        let result = await wsload(["merge"] + paths + ["-o", out])
        #expect(result.code == .invalidInput && result.code.rawValue == 65, "\(result.error)", sourceLocation: sourceLocation)
        let expected = message.replacingOccurrences(of: "DIR/", with: directory.path + "/")
        #expect(result.error.contains(expected), "wanted \(expected) in: \(result.error)", sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: out), "a refused merge wrote \(out)", sourceLocation: sourceLocation)
        // The merger says the same through its API.
        do {
            let merged = try ReportMerger.merge(reports)
            Issue.record("merged \(merged.mergedFrom)", sourceLocation: sourceLocation)
        } catch {
            let bare = message.replacingOccurrences(of: "DIR/", with: "")
            #expect(error.description.contains(bare), "wanted \(bare) in: \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("the shards of one split merge: the control the refusals are measured against")
    func oneSplitMerges() async throws {
        let directory = try scratchDirectory("merge-control")
        defer { try? FileManager.default.removeItem(at: directory) }
        let paths = ["a.json", "b.json", "c.json"].map { directory.appendingPathComponent($0).path }
        for (index, path) in paths.enumerated() {
            try SyntheticReport.write(try report(shard: Shard(index: index, count: 3), seed: UInt64(index), source: "x"), to: path)
        }
        let out = directory.appendingPathComponent("merged.json").path
        let result = await wsload(["merge"] + paths + ["-o", out])
        #expect(result.code == .success, "\(result.error)")
        let merged = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: out))))
        #expect(merged["total"]?["metrics"]?["ws.message_rtt"]?["count"]?.integerValue == 6000)
        #expect(merged["run"]?["mergedFrom"]?.arrayValue?.count == 3 && merged["run"]?["shard"] == nil)
    }

    @Test("shards of different splits (1/2 with 2/3, and 1/2 with 1/3) are refused, naming each split")
    func differentSplits() async throws {
        // 1/2 and 2/3 are different slices, so only the split check can refuse them.
        try await expectRefusal(
            [try report(shard: Shard(index: 0, count: 2), source: "a.json"), try report(shard: Shard(index: 1, count: 3), source: "b.json")],
            "shards of different splits: DIR/a.json (1/2), DIR/b.json (2/3)")
        try await expectRefusal(
            [try report(shard: Shard(index: 0, count: 2), source: "a.json"), try report(shard: Shard(index: 0, count: 3), source: "b.json")],
            "shards of different splits: DIR/a.json (1/2), DIR/b.json (1/3)")
    }

    @Test("a shard and a whole run are refused")
    func shardAndWholeRun() async throws {
        try await expectRefusal(
            [try report(shard: Shard(index: 0, count: 2), source: "a.json"), try report(shard: nil, source: "w.json")],
            "a mix of shards and whole runs: DIR/a.json (1/2), DIR/w.json (whole run)")
    }

    @Test("the same shard twice is refused, naming both files")
    func duplicateShard() async throws {
        try await expectRefusal(
            [try report(shard: Shard(index: 0, count: 2), source: "a.json"), try report(shard: Shard(index: 0, count: 2), seed: 2, source: "c.json")],
            "DIR/c.json and DIR/a.json are both shard 1/2")
        // Three of three slices, but one of them twice and one missing.
        try await expectRefusal(
            [try report(shard: Shard(index: 0, count: 3), source: "a.json"), try report(shard: Shard(index: 1, count: 3), source: "b.json"),
             try report(shard: Shard(index: 1, count: 3), seed: 3, source: "c.json")],
            "DIR/c.json and DIR/b.json are both shard 2/3")
    }

    @Test("reports of a different profile are refused, with both SHA-256 digests")
    func differentProfile() async throws {
        let base = try report(shard: nil, source: "a.json")
        let other = try report(
            shard: nil, profile: SyntheticReport.profileText.replacingOccurrences(of: #""duration": "10s""#, with: #""duration": "20s""#),
            source: "b.json")
        #expect(base.profileDigest != other.profileDigest && base.profileDigest.hasPrefix("sha256:"))
        try await expectRefusal(
            [base, other], "DIR/b.json ran a different profile than DIR/a.json (\(other.profileDigest) vs \(base.profileDigest))")
    }

    @Test("histograms of another layout are refused, naming the metric and both layouts")
    func differentLayout() async throws {
        let base = try report(shard: Shard(index: 0, count: 2), source: "a.json")
        var metrics = base.result.total
        // The same samples at two significant digits: the slots no longer line up with three-digit ones.
        var coarse = Histogram(significantDigits: 2)
        var random = SeededRandomNumberGenerator(seed: 5)
        for _ in 0..<500 { coarse.record(500 + random.next() % 1000) }
        metrics.histograms["ws.message_rtt"] = coarse
        let other = try SyntheticReport.loaded(total: metrics, shard: Shard(index: 1, count: 2), source: "b.json")
        let decoded = try #require(other.result.total.histograms["ws.message_rtt"])
        #expect(decoded.significantDigits == 2, "the report kept the layout")
        try await expectRefusal(
            [base, other],
            "DIR/b.json: total ws.message_rtt has another histogram layout than in DIR/a.json "
                + "(1...3600000000 µs, 2 digits vs 1...3600000000 µs, 3 digits)")
    }
}

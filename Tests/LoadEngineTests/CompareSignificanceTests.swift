import Crypto
import Foundation
import JSON
import LoadEngine
import Profile
import Reporting
import Testing
import WSLoadCLI

/// `wsload compare` on seeded synthetic reports: each significance path (block bootstrap over a single
/// run's intervals, bootstrap over the HDR histograms of reports without a series, Poisson rates,
/// Mann–Whitney across repeated runs) must flag a real change — exit 5 under the default budgets — and
/// must not flag two draws from one distribution. Nothing here depends on the box's speed.
// Serialized: each test computes for a second or more, and one core at a time is enough to leave the rest
// of the suite (timing-sensitive network tests among it) the other.
@Suite("compare: significance paths", .serialized, .timeLimit(.minutes(2)))
struct CompareSignificanceTests {
    /// Writes `base` and `head` (a report or a directory of reports each) and runs
    /// `wsload compare base head --json`: the exit code, stderr and the rows by `metric statistic`.
    private func compare(
        base: [LoadedReport], head: [LoadedReport], options: [String] = []
    ) async throws -> (code: ExitCode, error: String, rows: [String: JSONValue]) {
        let directory = try scratchDirectory("compare")
        defer { try? FileManager.default.removeItem(at: directory) }
        var sides: [String] = []
        for (name, reports) in [("base", base), ("head", head)] {
            if reports.count == 1 {
                let path = directory.appendingPathComponent(name + ".json").path
                try SyntheticReport.write(reports[0], to: path)
                sides.append(path)
            } else {
                let folder = directory.appendingPathComponent(name)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                for (index, report) in reports.enumerated() {
                    try SyntheticReport.write(report, to: folder.appendingPathComponent("run\(index).json").path)
                }
                sides.append(folder.path)
            }
        }
        let result = try await wsloadProcess(["compare"] + sides + ["--json"] + options)
        let document = try JSONValue(parsing: Array(result.output.utf8))
        let list = try #require(document["rows"]?.arrayValue, "compare printed no rows: \(result.output) \(result.error)")
        var rows: [String: JSONValue] = [:]
        for row in list {
            let metric = try #require(row["metric"]?.stringValue), statistic = try #require(row["statistic"]?.stringValue)
            rows[metric + " " + statistic] = row
        }
        #expect(document["base"]?["runs"]?.integerValue == base.count && document["head"]?["runs"]?.integerValue == head.count)
        return (result.code, result.error, rows)
    }

    /// Expects `rows[key]` to exist, to come from `test`, and to be (or not be) significant.
    private func expectRow(
        _ rows: [String: JSONValue], _ key: String, test: String, significant: Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let row = try #require(rows[key], "no row \(key) in \(rows.keys.sorted())", sourceLocation: sourceLocation)
        #expect(row["test"]?.stringValue == test, "\(key): \(row)", sourceLocation: sourceLocation)
        #expect(row["significant"] == .bool(significant), "\(key): \(row.formatted(pretty: false))", sourceLocation: sourceLocation)
    }

    @Test("single runs with a series: the interval bootstrap flags a head twice as slow (exit 5) and not a second draw")
    func intervalBootstrap() async throws {
        let base = try SyntheticReport.loaded(intervals: SyntheticReport.series(median: 1000, seed: 1))
        let slower = try SyntheticReport.loaded(intervals: SyntheticReport.series(median: 2000, seed: 2))
        let shifted = try await compare(base: [base], head: [slower])
        #expect(shifted.code == .regression && shifted.code.rawValue == 5, "\(shifted.error)")
        #expect(shifted.error.contains("regression: ws.message_rtt p50 +"), "\(shifted.error)")
        for statistic in ["p50", "p90", "p99", "mean"] {
            try expectRow(shifted.rows, "ws.message_rtt \(statistic)", test: "interval-bootstrap", significant: true)
        }

        // A second draw whose intervals drift as much on average as the base's (the calibration test below
        // covers draws that drift apart by chance).
        let again = try SyntheticReport.loaded(intervals: SyntheticReport.series(median: 1000, seed: 8))
        let same = try await compare(base: [base], head: [again])
        #expect(same.code == .success, "\(same.error)")
        for statistic in ["p50", "p90", "p99", "mean"] {
            try expectRow(same.rows, "ws.message_rtt \(statistic)", test: "interval-bootstrap", significant: false)
        }
        try expectRow(same.rows, "ws.messages_received per_second", test: "interval-bootstrap", significant: false)
    }

    @Test("reports without a series: the HDR histogram bootstrap flags a head twice as slow (exit 5) and not a second draw")
    func histogramBootstrap() async throws {
        func report(median: Double, seed: UInt64) throws -> LoadedReport {
            var random = SeededRandomNumberGenerator(seed: seed)
            return try SyntheticReport.loaded(total: SyntheticReport.echoMetrics(median: median, count: 4000, random: &random))
        }
        let base = try report(median: 1000, seed: 11)
        #expect(base.result.intervals.isEmpty)
        let shifted = try await compare(base: [base], head: [try report(median: 2000, seed: 12)])
        #expect(shifted.code == .regression && shifted.code.rawValue == 5, "\(shifted.error)")
        #expect(shifted.error.contains("regression: ws.message_rtt p50 +"), "\(shifted.error)")
        for statistic in ["p50", "p90", "p99", "mean"] {
            try expectRow(shifted.rows, "ws.message_rtt \(statistic)", test: "histogram-bootstrap", significant: true)
        }

        let same = try await compare(base: [base], head: [try report(median: 1000, seed: 13)])
        #expect(same.code == .success, "\(same.error)")
        for statistic in ["p50", "p90", "p99", "mean"] {
            try expectRow(same.rows, "ws.message_rtt \(statistic)", test: "histogram-bootstrap", significant: false)
        }
    }

    @Test("reports without a series: Poisson rates flag throughput halved (exit 5) and not a 0.5% wobble; proportions the error rate")
    func poissonRates() async throws {
        // Counts only (no latencies): the rows are the throughput's and the error rate's.
        func report(received: UInt64, errors: UInt64 = 0) throws -> LoadedReport {
            var metrics = MetricSet()
            metrics.counters["ws.messages_received"] = received
            metrics.counters["ws.messages_sent"] = 20_000
            if errors > 0 { metrics.errors["transport"] = errors }
            return try SyntheticReport.loaded(total: metrics)
        }
        let base = try report(received: 20_000, errors: 20)
        let halved = try await compare(base: [base], head: [try report(received: 10_000, errors: 20)])
        #expect(halved.code == .regression && halved.code.rawValue == 5, "\(halved.error)")
        #expect(halved.error.contains("regression: ws.messages_received per_second -50.0%"), "\(halved.error)")
        #expect(halved.rows.count == 2, "\(halved.rows.keys.sorted())")
        try expectRow(halved.rows, "ws.messages_received per_second", test: "histogram-bootstrap", significant: true)
        try expectRow(halved.rows, "errors rate", test: "histogram-bootstrap", significant: false)

        // 1,990 against 2,000 a second over 10 s: z ≈ 0.5.
        let wobble = try await compare(base: [base], head: [try report(received: 19_900, errors: 20)])
        #expect(wobble.code == .success, "\(wobble.error)")
        try expectRow(wobble.rows, "ws.messages_received per_second", test: "histogram-bootstrap", significant: false)

        // 20 errors in 20,000 operations against 200: the binomial test, gated by a budget on the rate.
        let errors = try await compare(base: [base], head: [try report(received: 20_000, errors: 200)],
                                       options: ["--fail-on", "errors rate +50%"])
        #expect(errors.code == .regression, "\(errors.error)")
        try expectRow(errors.rows, "errors rate", test: "histogram-bootstrap", significant: true)
        try expectRow(errors.rows, "ws.messages_received per_second", test: "histogram-bootstrap", significant: false)
        let wobblingErrors = try await compare(base: [base], head: [try report(received: 20_000, errors: 22)],
                                               options: ["--fail-on", "errors rate +5%"])
        #expect(wobblingErrors.code == .success, "\(wobblingErrors.error)")
        try expectRow(wobblingErrors.rows, "errors rate", test: "histogram-bootstrap", significant: false)
    }

    @Test("five runs a side, as directories: Mann–Whitney flags a head twice as slow (exit 5) and not five more runs of the base")
    func mannWhitneyDirectories() async throws {
        func runs(median: Double, seed: UInt64) throws -> [LoadedReport] {
            try (0..<5).map { index in
                // Each run's level moves by a few percent, as repeated runs do.
                try SyntheticReport.loaded(
                    intervals: SyntheticReport.series(median: median * (0.97 + 0.015 * Double((Int(seed) + index * 3) % 5)),
                                                      intervals: 4, seed: seed * 100 + UInt64(index)),
                    source: "run\(index).json")
            }
        }
        let base = try runs(median: 1000, seed: 1)
        let shifted = try await compare(base: base, head: try runs(median: 2000, seed: 2))
        #expect(shifted.code == .regression && shifted.code.rawValue == 5, "\(shifted.error)")
        #expect(shifted.error.contains("regression: ws.message_rtt p50 +"), "\(shifted.error)")
        try expectRow(shifted.rows, "ws.message_rtt p50", test: "mann-whitney", significant: true)
        // Completely separated 5 and 5: the exact p-value is 2/252.
        let p = try #require(shifted.rows["ws.message_rtt p50"]?["pValue"]?.numberValue)
        #expect(abs(p - 2.0 / 252) < 1e-9, "p = \(p)")

        let same = try await compare(base: base, head: try runs(median: 1000, seed: 3))
        #expect(same.code == .success, "\(same.error)")
        for statistic in ["p50", "p99", "mean"] {
            try expectRow(same.rows, "ws.message_rtt \(statistic)", test: "mann-whitney", significant: false)
        }
    }

    @Test("two draws of one drifting distribution are flagged about as often as α says: 10 pairs, interval bootstrap")
    func calibration() async throws {
        @Sendable func run(_ intervals: [MetricSet]) throws -> ComparisonSide.Run {
            var total = MetricSet()
            for interval in intervals { try total.add(interval) }
            return .init(metrics: total, seconds: Double(intervals.count), intervals: intervals.map { ($0, 1) })
        }
        // The bootstraps compute for a few seconds: on a thread of their own, not the cooperative pool.
        let rows = try await offPool {
            try (0..<10).map { pair in
                let base = try run(SyntheticReport.series(median: 1000, seed: 1000 + UInt64(pair) * 2))
                let head = try run(SyntheticReport.series(median: 1000, seed: 1001 + UInt64(pair) * 2))
                // 200 replicates (compare uses 400): p-values down to 0.01, enough to tell 0.05 apart, at half the cost.
                return Comparator.compare(base: .init(label: "b", runs: [base]), head: .init(label: "h", runs: [head]), replicates: 200)
            }
        }
        var flagged = 0
        for pairRows in rows {
            let p50 = try #require(pairRows.first { $0.metric == "ws.message_rtt" && $0.statistic == "p50" })
            #expect(p50.test == "interval-bootstrap" && p50.pValue > 0 && p50.pValue <= 1, "\(p50)")
            if p50.isSignificant(alpha: 0.05) { flagged += 1 }
        }
        // At α = 0.05 one pair in 20 is expected; three or more of 10 (p ≈ 0.01) would be a test that cries wolf.
        #expect(flagged <= 2, "\(flagged) of 10 pairs of one distribution flagged")
    }
}

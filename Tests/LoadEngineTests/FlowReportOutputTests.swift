import Crypto
import Foundation
import Histogram
import JSON
import LoadEngine
import Profile
import Reporting
import Testing
import WSLoadCLI

/// A histogram of `count` samples of `value` µs each.
private func samples(_ value: UInt64, count: Int) -> Histogram {
    var histogram = Histogram()
    for _ in 0..<count { histogram.record(value) }
    return histogram
}

/// Two steps (`join`: 10 at 2 ms and 2 failures; `count`: 5 at 500 µs, first results 3 at 100 µs), pushed types and
/// flow counters, with step names as given.
private func flowMetrics(join: String = "join", count: String = "count", pushed: String = "said") -> MetricSet {
    var metrics = MetricSet()
    metrics.histograms["flow.step." + join] = samples(2000, count: 10)
    metrics.counters["flow.step_errors." + join] = 2
    metrics.histograms["flow.step." + count] = samples(500, count: 5)
    metrics.histograms["flow.first_result." + count] = samples(100, count: 3)
    metrics.counters["flow.pushed." + pushed] = 7
    metrics.counters["flow.pushed.other"] = 1
    metrics.counters["flow.completed"] = 3
    metrics.counters["flow.iterations"] = 12
    return metrics
}

@Suite("Flow steps in the summary, the HTML report and compare output", .serialized, .timeLimit(.minutes(3)))
struct FlowReportOutputTests {
    @Test("the summary shows a flow steps table, pushed types and flow counters, aligned")
    func summaryLines() async throws {
        let directory = try scratchDirectory("flow-summary")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("run.json").path
        try SyntheticReport.write(try SyntheticReport.loaded(total: flowMetrics()), to: path)
        let result = try await wsloadProcess(["report", path])
        #expect(result.code == .success, "\(result.error)")
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex(of: "  flow steps"), "\(result.output)")
        #expect(Array(lines[start..<min(lines.count, start + 7)]) == [
            "  flow steps",
            "    step            count  errors    p50    p90    p99    max",
            "    count               5       0  500us  500us  500us  500us",
            "      first result      3          100us  100us  100us  100us",
            "    join               10       2  2.0ms  2.0ms  2.0ms  2.0ms",
            "  pushed        other 1, said 7",
            "  flow          completed 3, iterations 12",
        ], "\(result.output)")
    }

    @Test("long and hostile step names are cut and shown printable, keeping 30 steps aligned")
    func summaryNames() async throws {
        var metrics = MetricSet()
        for index in 0..<30 { metrics.histograms["flow.step.s\(index)"] = samples(1000, count: 1) }
        metrics.histograms["flow.step." + String(repeating: "n", count: 60)] = samples(1000, count: 1)
        metrics.counters["flow.pushed.\u{1B}[31mred"] = 1
        let directory = try scratchDirectory("flow-names")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("run.json").path
        try SyntheticReport.write(try SyntheticReport.loaded(total: metrics), to: path)
        let result = try await wsloadProcess(["report", path])
        #expect(result.code == .success, "\(result.error)")
        #expect(!result.output.contains("\u{1B}[31m"), "a pushed type reached the terminal raw")
        let rows = result.output.split(separator: "\n").filter { $0.hasPrefix("    ") && $0.hasSuffix("1.0ms") }
        #expect(rows.count == 31)
        #expect(Set(rows.map(\.count)).count == 1, "rows differ in width: \(rows)")
        #expect(rows.contains { $0.hasPrefix("    " + String(repeating: "n", count: 24) + "… ") })
    }

    @Test("the HTML report has a flow section with escaped step names, a p99 chart and one chart per step")
    func html() throws {
        let hostile = "<script>alert(1)</script>"
        var interval = flowMetrics(join: hostile, pushed: "<b>said</b>")
        interval.counters["ws.connect_attempts"] = 1
        let report = try SyntheticReport.loaded(intervals: [interval, interval])
        let html = try RunHTML.render(report.result, toolVersion: "test")
        #expect(!html.contains("<script>alert") && !html.contains("<b>"))
        #expect(html.contains("<section id=\"flow\"><h2>Flow steps</h2>"))
        #expect(html.contains("<td class=\"text\">&lt;script&gt;alert(1)&lt;/script&gt;</td><td>20</td><td>4</td><td>16.667%</td>"))
        #expect(html.contains("<td class=\"text\">count (first result)</td><td>6</td>"))
        #expect(html.contains("<td class=\"text\">&lt;b&gt;said&lt;/b&gt;</td><td>14</td>"))
        #expect(html.contains("<td>flow.completed</td><td>6</td>"))
        #expect(html.contains("id=\"flow-steps-p99\"") && html.contains("id=\"flow-step-0\"") && html.contains("id=\"flow-step-1\""))
        #expect(html.contains("data-series=\"&lt;script&gt;alert(1)&lt;/sc…\"") && html.contains("data-series=\"count\""))
        #expect(!html.contains("src=") && !html.contains("href=\"http"), "the report fetches nothing")
        #expect(html.components(separatedBy: "<script").count == 2, "one script, the report's own hover script")
        // A run without flow metrics has no flow section.
        var random = SeededRandomNumberGenerator(seed: 1)
        let plain = try SyntheticReport.loaded(total: SyntheticReport.echoMetrics(median: 1000, count: 100, random: &random))
        #expect(try !RunHTML.render(plain.result, toolVersion: "test").contains("id=\"flow\""))
    }

    @Test("compare shows steps as flow.step{step=X} rows, a regressed step, a step error rate, added and removed steps")
    func compare() throws {
        var random = SeededRandomNumberGenerator(seed: 7)
        func side(_ join: UInt64, failures: UInt64, extra: String) -> ComparisonSide {
            var metrics = MetricSet()
            var histogram = Histogram()
            for _ in 0..<2000 { histogram.record(join + random.next() % (join / 10)) }
            metrics.histograms["flow.step.join"] = histogram
            metrics.counters["flow.step_errors.join"] = failures
            metrics.histograms["flow.step." + extra] = samples(300, count: 50)
            return ComparisonSide(label: extra, runs: [.init(metrics: metrics, seconds: 10)])
        }
        let rows = Comparator.compare(base: side(1000, failures: 1, extra: "gone"), head: side(3000, failures: 400, extra: "new"))
        func row(_ metric: String, _ statistic: String) throws -> ComparisonRow {
            try #require(rows.first { $0.metric == metric && $0.statistic == statistic }, "no \(metric) \(statistic) in \(rows.map { "\($0.metric) \($0.statistic)" })")
        }
        #expect(Set(rows.filter { $0.metric == "flow.step{step=join}" }.map(\.statistic)) == ["p50", "p99"])
        let p99 = try row("flow.step{step=join}", "p99")
        #expect(p99.isWorse(alpha: 0.05) && p99.presence == .both && p99.head > p99.base)
        let rate = try row("errors{step=join}", "rate")
        #expect(rate.base == 1.0 / 2001.0 && rate.head == 400.0 / 2400.0 && rate.isWorse(alpha: 0.05))
        let removed = try row("flow.step{step=gone}", "p99")
        let added = try row("flow.step{step=new}", "p99")
        #expect(removed.presence == .removed && removed.head == 0 && removed.base > 0 && !removed.isSignificant(alpha: 0.05))
        #expect(added.presence == .added && added.base == 0 && added.head > 0 && !added.isWorse(alpha: 0.05))
        // A budget on a step reads the row's name; an added step never breaks one.
        let budget = try #require(RegressionBudget(parsing: "flow.step{step=join} p99 +10%"))
        #expect(budget.isExceeded(by: p99, alpha: 0.05))
        #expect(!RegressionBudget(metric: "flow.step{step=new}", statistic: "p99", percent: 0).isExceeded(by: added, alpha: 0.05))
        // The same runs twice: nothing significant, nothing added or removed.
        let same = Comparator.compare(base: side(1000, failures: 1, extra: "x"), head: side(1000, failures: 1, extra: "x"))
        #expect(same.allSatisfy { $0.presence == .both })
        #expect(!same.contains { $0.metric.hasPrefix("flow.step") && $0.isWorse(alpha: 0.001) })
    }

    @Test("wsload compare prints added, removed and regressed steps, and exits 5 on a step budget")
    func compareCommand() async throws {
        let directory = try scratchDirectory("flow-compare")
        defer { try? FileManager.default.removeItem(at: directory) }
        var random = SeededRandomNumberGenerator(seed: 3)
        func report(_ join: UInt64, extra: String) throws -> String {
            var metrics = MetricSet()
            var histogram = Histogram()
            for _ in 0..<2000 { histogram.record(join + random.next() % (join / 10)) }
            metrics.histograms["flow.step.join"] = histogram
            metrics.histograms["flow.step." + extra] = samples(300, count: 50)
            let path = directory.appendingPathComponent(extra == "gone" ? "base.json" : "head.json").path
            try SyntheticReport.write(try SyntheticReport.loaded(total: metrics), to: path)
            return path
        }
        let base = try report(1000, extra: "gone"), head = try report(3000, extra: "n\u{1B}w")
        let result = try await wsloadProcess(["compare", base, head, "--fail-on", "flow.step{step=join} p99 +10%"])
        #expect(result.code == .regression, "\(result.output) \(result.error)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("flow.step{step=join} p99 ") && $0.contains("REGRESSION") }, "\(result.output)")
        #expect(lines.contains { $0.hasPrefix("flow.step{step=gone} p99 ") && $0.contains(" removed") }, "\(result.output)")
        #expect(lines.contains { $0.hasPrefix("flow.step{step=n\\u{1B}w} p99 ") && $0.contains(" added") }, "\(result.output)")
        #expect(!result.output.contains("\u{1B}"))
        #expect(result.error.contains("regression: flow.step{step=join} p99"))
    }
}

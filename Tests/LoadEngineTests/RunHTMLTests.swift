import Foundation
import Histogram
import JSON
import Profile
import Reporting
import Testing

/// `count` samples of `value` µs.
private func histogram(_ value: UInt64, count: UInt64) -> Histogram {
    var histogram = Histogram()
    histogram.record(value, count: count)
    return histogram
}

/// Interval `index` (one second long): 100 round trips at 1 ms, and every fourth interval 100 more at 50 ms, so a
/// bucket of four merged exactly has a p99 of 50 ms where the mean of its four p99s is about 13 ms; `index % 7` live
/// connections at its end.
private func interval(_ index: Int) -> RunResult.Interval {
    var metrics = MetricSet()
    var rtt = histogram(1000, count: 100)
    if index % 4 == 1 { rtt.record(50_000, count: 100) }
    metrics.histograms[Metric.messageRoundTrip.name] = rtt
    metrics.counters[Metric.messagesReceived.name] = UInt64(100 + index)
    metrics.counters[Metric.messagesSent.name] = 100
    if index % 10 == 0 { metrics.errors["connect"] = 5 }
    return RunResult.Interval(start: .seconds(index), end: .seconds(index + 1), liveConnections: index % 7, metrics: metrics)
}

/// A run read back from a synthetic report, then given `profile` (its scenario's name as it pleases), `intervals` and
/// their sum as its totals.
private func run(_ intervals: [RunResult.Interval], profile: String = SyntheticReport.profileText) throws -> RunResult {
    var result = try SyntheticReport.loaded().result
    result.profile = try ProfileDecoder.decode(Array(profile.utf8))
    result.scenarios = [.init(scenario: result.profile.scenarios[0], metrics: MetricSet())]
    var total = MetricSet()
    for interval in intervals { try total.add(interval.metrics) }
    result.intervals = intervals
    result.total = total
    result.scenarios = result.scenarios.map { .init(scenario: $0.scenario, metrics: total) }
    result.evaluateThresholds()
    return result
}

/// Every chart's hover data: `data-hover` attributes, unescaped and parsed, by the chart's id.
private func hoverData(_ html: String) throws -> [String: JSONValue] {
    var charts: [String: JSONValue] = [:]
    for piece in html.components(separatedBy: "<svg id=\"").dropFirst() {
        let id = String(piece.prefix { $0 != "\"" })
        guard let start = piece.range(of: "data-hover=\"") else { continue }
        let attribute = piece[start.upperBound...].prefix { $0 != "\"" }
        let text = attribute.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
        charts[id] = try JSONValue(parsing: text)
    }
    return charts
}

/// The label, value and detail of the headline tile `figure`.
/// A bucket's counters and its histograms decoded.
private func bucketMetrics(_ bucket: HTMLTimeline.Bucket) throws -> MetricSet {
    var metrics = bucket.counts
    for (name, histogram) in bucket.histograms { metrics.histograms[name] = try histogram.decoded(at: name) }
    return metrics
}

private func tile(_ html: String, _ figure: String) throws -> (label: String, value: String, detail: String) {
    let piece = try #require(html.components(separatedBy: "data-figure=\"\(figure)\"").dropFirst().first, "no tile \(figure)")
    func text(after marker: String) -> String {
        guard let range = piece.range(of: marker) else { return "" }
        return String(piece[range.upperBound...].prefix { $0 != "<" })
    }
    return (text(after: "<div class=\"label\">"), text(after: "<div class=\"value\">"), text(after: "<div class=\"detail\">"))
}

@Suite("The HTML report: headline, exact downsampling, per-second points, escaping")
struct RunHTMLTests {
    @Test("the timeline merges 1,000 intervals into 250 buckets of 4, histograms added exactly, connections last and peak")
    func timelineMergesExactly() throws {
        let intervals = (0..<1000).map(interval)
        let timeline = try HTMLTimeline(intervals)
        #expect(timeline.factor == 4 && timeline.buckets.count == 250)
        for (index, bucket) in timeline.buckets.enumerated() {
            var expected = MetricSet()
            for member in intervals[(index * 4)..<(index * 4 + 4)] { try expected.add(try member.metrics) }
            // Decoded blobs keep each slot, not the exact extremes: compared as the report writes them.
            #expect(try bucketMetrics(bucket).json(seconds: 1, operations: 0) == expected.json(seconds: 1, operations: 0))
            #expect(bucket.start == .seconds(index * 4) && bucket.end == .seconds(index * 4 + 4))
            #expect(bucket.liveConnections == (index * 4 + 3) % 7)
            #expect(bucket.peakConnections == (index * 4..<index * 4 + 4).map { $0 % 7 }.max())
        }
        // The p99 of a merged bucket is the 50 ms of its fourth interval, not the mean of four p99s.
        let p99 = timeline.percentile(Metric.messageRoundTrip.name, 99)
        #expect(p99.count == 250 && p99.allSatisfy { $0.y == Double(histogram(50_000, count: 1).value(atPercentile: 99)) })
        #expect(timeline.rate(Metric.messagesSent.name).allSatisfy { $0.y == 100 })
        #expect(timeline.label(4) == "0–4s" && timeline.label(1000) == "16m36s–16m40s")
        // Few intervals are drawn as they are.
        let short = try HTMLTimeline(Array(intervals.prefix(15)))
        #expect(try short.factor == 1 && short.buckets.count == 15
                && bucketMetrics(short.buckets[3]).json(seconds: 1, operations: 0) == intervals[3].metrics.json(seconds: 1, operations: 0))
        #expect(try HTMLTimeline([]).buckets.isEmpty)
    }

    @Test("no chart of a 2,000-interval run draws more than 300 points; a 15-second run draws one per second")
    func pointsPerChart() throws {
        let long = try RunHTML.render(try run((0..<2000).map(interval)), toolVersion: "test")
        let charts = try hoverData(long)
        #expect(charts.count >= 6, "\(charts.keys.sorted())")
        for (id, chart) in charts {
            let xs = try #require(chart["x"]?.arrayValue, "\(id)")
            #expect(!xs.isEmpty && xs.count <= HTMLTimeline.maximumPoints, "\(id): \(xs.count) points")
            for series in chart["s"]?.arrayValue ?? [] {
                #expect(series["y"]?.arrayValue?.count == xs.count && series["v"]?.arrayValue?.count == xs.count, "\(id)")
            }
        }
        for path in long.components(separatedBy: " d=\"").dropFirst() {
            let commands = path.prefix { $0 != "\"" }.split(separator: " ")
            #expect(commands.count <= HTMLTimeline.maximumPoints)
        }
        // The merged buckets' hover values are the exact percentiles: 50 ms at p99 in every bucket of 7 intervals.
        let rtt = try #require(charts["over-time-ws.message_rtt"])
        #expect(rtt["x"]?.arrayValue?.count == 286)
        let p99 = try #require(rtt["s"]?.arrayValue?.first { $0["n"] == "p99" })
        let exact = formatMicroseconds(Double(histogram(50_000, count: 1).value(atPercentile: 99)))
        #expect(p99["v"]?.arrayValue?.allSatisfy { $0 == .string(exact) } == true, "\(p99)")
        #expect(long.contains("7 intervals per point"))

        let short = try RunHTML.render(try run((0..<15).map(interval)), toolVersion: "test")
        let shortRTT = try #require(try hoverData(short)["over-time-ws.message_rtt"])
        #expect(shortRTT["x"]?.arrayValue?.count == 15)
        #expect(shortRTT["t"]?.arrayValue?.first == "0–1s" && shortRTT["t"]?.arrayValue?.last == "14s–15s")
        let shortP99 = try #require(shortRTT["s"]?.arrayValue?.first { $0["n"] == "p99" }?["v"]?.arrayValue)
        #expect(shortP99[1] == .string(exact) && shortP99[2] == .string(formatMicroseconds(1000)))
        #expect(!short.contains("intervals per point"))
    }

    @Test("the headline tiles: connections peak and now, messages/s, RTT p50/p99/p99.9, errors and their rate, verdicts")
    func headline() throws {
        let profile = """
            {"version": 1, "name": "headline", "target": "embedded", "duration": "10s",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 12}],
             "thresholds": ["ws.message_rtt p99 < 10ms", "errors count < 1000"]}
            """
        var result = try run((0..<10).map(interval), profile: profile)
        result.invariants.checked["messages.in_sequence"] = 1000
        result.invariants.violations["messages.in_sequence"] = 2
        let html = try RunHTML.render(result, toolVersion: "test")
        let rtt = result.total[histogram: .messageRoundTrip]!
        #expect(try tile(html, "connections") == ("connections peak", "6", "now 2 · target 12"))
        #expect(try tile(html, "messages-per-second") == ("messages/s", "105", "received; sent 100"))
        #expect(try tile(html, "rtt-p50") == ("RTT p50", formatMicroseconds(Double(rtt.value(atPercentile: 50))), "1,300 samples"))
        #expect(try tile(html, "rtt-p99").value == formatMicroseconds(Double(rtt.value(atPercentile: 99))))
        #expect(try tile(html, "rtt-p99.9") == ("RTT p99.9", formatMicroseconds(Double(rtt.value(atPercentile: 99.9))),
                                                "max " + formatMicroseconds(Double(rtt.maximum))))
        // 5 connect errors in 1,000 messages sent.
        #expect(try tile(html, "errors") == ("errors", "5", "rate 0.500%"))
        #expect(html.contains("<div class=\"tile fail\" data-figure=\"errors\""))
        #expect(try tile(html, "invariants") == ("invariants", "violated", "2 violations in 1,000 checks"))
        #expect(try tile(html, "thresholds") == ("thresholds", "failed", "1 of 2 pass"))
        #expect(html.contains("<span class=\"badge fail\">failed</span>"))
        // The first grid, in order: RTT over time, throughput, connections, errors.
        let order = ["over-time-ws.message_rtt", "messages-per-second", "connections", "errors-per-second"]
        let positions = order.map { html.range(of: "<svg id=\"\($0)\"")?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil } && positions.map { $0! } == positions.map { $0! }.sorted())
        let overview = try #require(html.components(separatedBy: "<section id=\"overview\"").dropFirst().first?
            .components(separatedBy: "</section>").first)
        #expect(order.allSatisfy { overview.contains("<svg id=\"\($0)\"") })
    }

    @Test("a report without intervals (merged from old reports, say) still renders: tiles from the totals, empty charts")
    func noIntervals() throws {
        var result = try run((0..<4).map(interval))
        result.intervals = []
        let html = try RunHTML.render(result, toolVersion: "test")
        #expect(try tile(html, "connections").value == "–")
        #expect(try tile(html, "rtt-p50").detail == "500 samples")
        #expect(html.contains("no samples") && html.contains("<svg id=\"over-time-ws.message_rtt\""))
        #expect(try hoverData(html)["over-time-ws.message_rtt"]?["x"] == [])
    }

    @Test("author and report strings are escaped everywhere: scenario, threshold, step and error code names")
    func escaping() throws {
        let hostile = "<img src=x onerror=alert(1)>"
        let profile = """
            {"version": 1, "name": "escape", "target": "embedded", "duration": "10s",
             "scenarios": [{"name": "s<script>x", "pattern": "echo", "connections": 1}],
             "thresholds": ["ws.message_rtt{scenario=s<script>x} p99 < 1s"]}
            """
        var intervals = (0..<5).map(interval)
        for index in intervals.indices {
            var metrics = try intervals[index].metrics
            metrics.errors[hostile] = 1
            metrics.histograms[MetricFamily.flowStep.name("<b>step</b>")] = histogram(300, count: 3)
            intervals[index] = .init(start: intervals[index].start, end: intervals[index].end,
                                     liveConnections: intervals[index].liveConnections, metrics: metrics)
        }
        let html = try RunHTML.render(try run(intervals, profile: profile), toolVersion: "<i>v</i>")
        for raw in ["<img", "<b>", "<i>", "<script>x"] { #expect(!html.contains(raw), "\(raw) reached the page raw") }
        #expect(html.components(separatedBy: "<script").count == 2, "one script: the report's own")
        #expect(!html.contains(" src=\"") && !html.contains("href="), "nothing fetched")
        #expect(html.contains("&lt;img src=x onerror=alert(1)&gt;") && html.contains(">s&lt;script&gt;x</td>")
            && html.contains("{scenario=s&lt;script&gt;x} p99"))
        // In the hover data the names are the raw strings (the script shows them with textContent).
        let errors = try #require(try hoverData(html)["errors-per-second"]?["s"]?.arrayValue)
        #expect(errors.contains { $0["n"] == .string(hostile) })
        let steps = try #require(try hoverData(html)["flow-steps-p99"]?["s"]?.arrayValue)
        #expect(steps.first?["n"] == "<b>step</b>")
        // The comparison page escapes its labels too.
        let result = try run(intervals, profile: profile)
        let comparison = try RunHTML.renderComparison(
            base: [result], head: [result], baseLabel: "<b>base</b>", headLabel: hostile, rows: [], isRegression: { _ in false },
            alpha: 0.05, toolVersion: "test")
        #expect(!comparison.contains("<b>") && !comparison.contains("<img") && comparison.contains("&lt;b&gt;base&lt;/b&gt;"))
    }

    @Test("axis and hover labels: seconds, percentiles")
    func labels() {
        #expect([0, 0.5, 12, 59.96, 60, 150, 3600, 3900, 86400].map(SVGChart.secondsLabel)
            == ["0", "0.5s", "12s", "60s", "1m", "2m30s", "1h", "1h05m", "24h"])
        #expect([0, 1, 2, 3, 2.5].map(SVGChart.percentileLabel) == ["p0", "p90", "p99", "p99.9", "p99.68"])
        #expect(RunHTML.formatRate(0) == "0" && RunHTML.formatRate(0.25) == "0.25" && RunHTML.formatRate(12.34) == "12.3"
            && RunHTML.formatRate(4567.8) == "4,568" && RunHTML.formatRate(.nan) == "–")
    }
}

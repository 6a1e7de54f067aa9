import Foundation
import Histogram
import Profile

/// The HTML report: one self-contained file (inline CSS, SVG and one small hover script; nothing fetched). Its
/// first screen holds what matters — the headline figures and the verdicts, then RTT percentiles, throughput,
/// connections and errors over time — in a grid of cards; below come every latency over time and its percentile
/// spectrum on HdrHistogram's log axis, flow steps, transfers, thresholds, invariants, errors and close codes, and
/// the counters. Charts draw the report's intervals merged exactly (``HTMLTimeline``) to a few hundred points.
/// Every string a profile, a server or a report file supplies goes through `escape`.
package enum RunHTML {
    static let palette = ["#1f77b4", "#ff7f0e", "#d62728", "#2ca02c", "#9467bd"]
    /// The percentiles an "over time" chart draws, and their colours (cool to hot).
    static let percentileLines: [(percentile: Double, color: String)] = [
        (50, "#2563eb"), (90, "#0d9488"), (99, "#e8890c"), (99.9, "#d62728"),
    ]
    /// Colours of series by code (errors, close codes), the most frequent first.
    static let codePalette = ["#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]
    /// Codes charted separately; the rest are summed as `other`.
    static let chartedCodes = 6

    /// - Throws: ``ReportFormatError`` for an interval blob of a report read back that does not decode, by its place.
    package static func render(_ result: RunResult, toolVersion: String) throws(ReportFormatError) -> String {
        let timeline = try HTMLTimeline(result.intervals)
        var body = header(result, toolVersion: toolVersion)
        body += headline(result)
        body += overview(result, timeline)
        body += verdicts(result)
        body += flowSection(result, timeline)
        body += latencySection(result, timeline)
        body += transferSection(result, timeline)
        body += errorsSection(result.total)
        body += countersSection(result)
        return page(title: "wsload: \(result.profile.name)", body: body)
    }

    // MARK: The first screen

    static func header(_ result: RunResult, toolVersion: String) -> String {
        let verdict: (text: String, tone: String)
        if result.isIncomplete {
            verdict = ("incomplete", "warn")
        } else if result.interruptedBy != nil {
            verdict = ("interrupted", "warn")
        } else if result.abortedBy != nil || !result.thresholdsPassed || !result.invariantsHeld {
            verdict = ("failed", "fail")
        } else {
            verdict = ("passed", "pass")
        }
        var meta = [status(result), "started " + RunReport.timestamp(result.startedAt), formatDuration(result.elapsed),
                    "seed \(result.seed)"]
        if let shard = result.shard { meta.append("shard \(shard)") }
        if !result.mergedFrom.isEmpty { meta.append("merged from \(result.mergedFrom.count) reports") }
        meta.append("wsload \(toolVersion)")
        return "<header><h1>wsload run <span class=\"name\">\(escape(result.profile.name))</span></h1>"
            + "<span class=\"badge \(verdict.tone)\">\(verdict.text)</span>"
            + "<div class=\"meta\">\(meta.map(escape).joined(separator: " · "))</div></header>"
    }

    /// The first grid: the headline latency's percentiles over time, throughput, connections, errors and
    /// disconnects by code over time, and the headline latency's spectrum.
    static func overview(_ result: RunResult, _ timeline: HTMLTimeline) -> String {
        let latency = headlineLatency(result.total)
        var html = "<section id=\"overview\" class=\"grid\">"
        html += overTime(result, timeline, latency.key, percentiles: percentileLines)
        if hasMessages(result) {
            html += timeChart(result, timeline, id: "messages-per-second", title: "messages per second", series: [
                .init(name: "received", color: "#2563eb", points: timeline.rate(Metric.messagesReceived.name)),
                .init(name: "sent", color: "#0d9488", points: timeline.rate(Metric.messagesSent.name), isDashed: true),
            ], yFormat: formatRate)
        } else {
            html += transferBytesChart(result, timeline)
        }
        var connections: [SVGChart.Series] = [
            .init(name: "open", color: "#2ca02c", points: timeline.buckets.map { ($0.x, Double($0.liveConnections)) }),
        ]
        if timeline.factor > 1 {
            // A merged point shows the connections at its end; the peak within it is the merged intervals' highest.
            let peaks = timeline.buckets.map { ($0.x, Double($0.peakConnections)) as (x: Double, y: Double?) }
            connections.append(.init(name: "peak", color: "#98c379", points: peaks, isDashed: true))
        }
        let hasTransfers = result.scenarios.contains { $0.scenario.transfer != nil }
        html += timeChart(result, timeline, id: "connections",
                          title: hasTransfers ? "open connections and transfers" : "open connections", series: connections,
                          yFormat: { grouped(saturated($0.rounded())) })
        html += byCodeChart(result, timeline, id: "errors-per-second", title: "errors per second by code",
                            emptyName: "errors", codes: result.total.errors, count: { $0.errors })
        html += byCodeChart(result, timeline, id: "disconnects-per-second", title: "disconnects per second by close code",
                            emptyName: "disconnects",
                            codes: Dictionary(uniqueKeysWithValues: result.total.disconnects.map { (String($0.key), $0.value) }),
                            count: { Dictionary(uniqueKeysWithValues: $0.disconnects.map { (String($0.key), $0.value) }) })
        html += spectrumChart(latency.key, result.total.histograms[latency.key])
        return html + "</section>"
    }

    /// The latency the first screen shows, by report key, with the name its tiles give it: message round trips,
    /// else the flow step run most often, else pings, else a transfer's first byte or its whole duration — the
    /// first with samples (message round trips when none has any).
    static func headlineLatency(_ metrics: MetricSet) -> (key: String, label: String) {
        func has(_ metric: Metric) -> Bool { (metrics[histogram: metric]?.totalCount ?? 0) > 0 }
        if has(.messageRoundTrip) { return (Metric.messageRoundTrip.name, "RTT") }
        if let step = metrics.flowSteps().filter({ $0.count > 0 }).max(by: { $0.count < $1.count }) {
            return (MetricFamily.flowStep.name(step.name), "step " + shortName(step.name))
        }
        let others: [(Metric, String)] = [(.pingRoundTrip, "ping RTT"), (.timeToFirstByte, "TTFB"), (.transferDuration, "transfer")]
        for (metric, label) in others where has(metric) { return (metric.name, label) }
        return (Metric.messageRoundTrip.name, "RTT")
    }

    /// Whether the run sent or received WebSocket messages (or had a WebSocket scenario at all).
    static func hasMessages(_ result: RunResult) -> Bool {
        result.total.counter(.messagesReceived) > 0 || result.total.counter(.messagesSent) > 0
            || result.scenarios.contains { $0.scenario.transfer == nil }
    }

    // MARK: Charts

    /// A chart over the run's seconds, with the timeline's hover labels and the chaos events marked.
    static func timeChart(
        _ result: RunResult, _ timeline: HTMLTimeline, id: String, title: String, note: String? = nil,
        series: [SVGChart.Series], yFormat: @escaping @Sendable (Double) -> String
    ) -> String {
        var notes = note.map { [$0] } ?? []
        if timeline.factor > 1 { notes.append("\(timeline.factor) intervals per point") }
        var chart = SVGChart(id: id, title: title, note: notes.isEmpty ? nil : notes.joined(separator: "; "), series: series,
                             xAxis: .seconds, yFormat: yFormat, xLabel: { timeline.label($0) })
        chart.markers = result.chaos.map { .init(x: $0.firedAt.seconds, label: "\($0.action) at \(formatDuration($0.firedAt))") }
        return chart.render()
    }

    /// Percentiles of histogram `key` per point of the timeline.
    static func overTime(
        _ result: RunResult, _ timeline: HTMLTimeline, _ key: String,
        percentiles: [(percentile: Double, color: String)] = Array(percentileLines.prefix(3))
    ) -> String {
        let series = percentiles.map { line in
            SVGChart.Series(name: percentileName(line.percentile), color: line.color, points: timeline.percentile(key, line.percentile))
        }
        return timeChart(result, timeline, id: "over-time-\(key)", title: "\(key) over time", series: series,
                         yFormat: formatMicroseconds)
    }

    /// The percentile spectrum of histogram `key` (a card saying "no samples" when there is none).
    static func spectrumChart(_ key: String, _ histogram: Histogram?) -> String {
        let points = histogram.map { $0.totalCount > 0 ? spectrum($0) : [] } ?? []
        return SVGChart(id: "spectrum-\(key)", title: "\(key) percentile spectrum",
                        series: [.init(name: key, color: palette[0], points: points.map { ($0.x, $0.y) })],
                        xAxis: .percentileSpectrum, yFormat: formatMicroseconds).render()
    }

    /// Events by code per second: the most frequent codes as their own lines, the rest summed as `other`; one flat
    /// line at zero (and "none") when there were none.
    static func byCodeChart(
        _ result: RunResult, _ timeline: HTMLTimeline, id: String, title: String, emptyName: String,
        codes: [String: UInt64], count: (MetricSet) -> [String: UInt64]
    ) -> String {
        let ranked = codes.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map(\.key)
        let charted = Array(ranked.prefix(ranked.count > chartedCodes + 1 ? chartedCodes : chartedCodes + 1))
        let rest = Set(ranked.dropFirst(charted.count))
        var series = charted.enumerated().map { index, code in
            SVGChart.Series(name: code, color: codePalette[index % codePalette.count],
                            points: timeline.rate { count($0)[code] ?? 0 })
        }
        if !rest.isEmpty {
            series.append(.init(name: "other", color: "#7f7f7f", points: timeline.rate { metrics in
                count(metrics).filter { rest.contains($0.key) }.values.reduce(0, saturatingSum)
            }))
        }
        if series.isEmpty {
            series = [.init(name: emptyName, color: "#98a2b3", points: timeline.rate { _ in 0 })]
        }
        return timeChart(result, timeline, id: id, title: title, note: codes.isEmpty ? "none" : nil, series: series,
                         yFormat: formatRate)
    }

    /// p50/p90/p99 of `name` per interval (the comparison draws one side's p99).
    static func overTimeSeries(
        _ timeline: HTMLTimeline, _ name: String, prefix: String, only: [Double], color: String, dashed: Bool
    ) -> [SVGChart.Series] {
        only.map { percentile in
            SVGChart.Series(name: prefix + percentileName(percentile), color: color,
                            points: timeline.percentile(name, percentile), isDashed: dashed)
        }
    }

    /// `p50`, `p99.9`.
    static func percentileName(_ percentile: Double) -> String {
        "p" + (percentile.rounded() == percentile ? String(Int(percentile)) : "\(percentile)")
    }

    /// The percentile spectrum: value against log10(1 / (1 − p)), up to the resolution the sample count allows.
    static func spectrum(_ histogram: Histogram) -> [(x: Double, y: Double)] {
        let xMax = min(6, log10(Double(max(histogram.totalCount, 10))))
        return stride(from: 0.0, through: xMax, by: xMax / 120).map { x in
            let percentile = 100 * (1 - pow(10, -x))
            return (x, Double(histogram.value(atPercentile: percentile)))
        }
    }

    // MARK: Formats

    /// A rate for an axis or a tooltip: whole numbers from 100 up, one decimal from 10, two below.
    @Sendable package static func formatRate(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        if value == 0 { return "0" }
        if abs(value) >= 100 { return grouped(saturated(value.rounded())) }
        return String(format: abs(value) >= 10 ? "%.1f" : "%.2f", value)
    }

    /// Bytes per second: `12.5 MiB/s`.
    @Sendable static func formatByteRate(_ value: Double) -> String {
        formatBytes(saturatedInt64(value.rounded())) + "/s"
    }

    static func pooled(_ results: [RunResult]) -> MetricSet {
        var metrics = MetricSet()
        // Runs of another histogram layout cannot add exactly; the charts show what adds (merge refuses them).
        for result in results { try? metrics.add(result.total) }
        return metrics
    }
}

/// A count for display as an `Int`: counts past `Int.max` (summed from files) show as `Int.max`, not trap.
package func saturated(_ value: UInt64) -> Int { Int(clamping: value) }

/// A figure for display as an `Int`, rounded toward zero: NaN shows as 0 and ±inf or out-of-range values as
/// `Int.min`/`Int.max` (report numbers are checked when read; this keeps display from ever trapping).
package func saturated(_ value: Double) -> Int { Int(saturatedInt64(value)) }

/// `Int64(value)` that never traps: NaN → 0, out of range → `Int64.min`/`Int64.max`.
package func saturatedInt64(_ value: Double) -> Int64 {
    if value.isNaN { return 0 }
    if value >= 0x1p63 { return .max }
    if value < -0x1p63 { return .min }
    return Int64(value)
}

/// 1234567 → "1,234,567".
package func grouped(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var result = ""
    for (index, character) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { result += "," }
        result.append(character)
    }
    return (value < 0 ? "-" : "") + result
}

import Foundation
import Histogram
import Profile

/// The HTML report: one self-contained file (inline CSS and SVG; no scripts, nothing fetched) with
/// latency percentiles over time, percentile spectra on HdrHistogram's log axis, throughput and
/// connections over time, errors and close codes, and thresholds — or, for a comparison, base and
/// head overlaid.
package enum RunHTML {
    static let palette = ["#1f77b4", "#ff7f0e", "#d62728", "#2ca02c", "#9467bd"]

    package static func render(_ result: RunResult, toolVersion: String) -> String {
        var body = "<h1>wsload run <span class=\"name\">\(escape(result.profile.name))</span></h1>"
        body += "<p class=\"meta\">\(escape(status(result))) · started \(escape(RunReport.timestamp(result.startedAt))) · "
            + "\(escape(formatDuration(result.elapsed))) · seed \(result.seed) · wsload \(escape(toolVersion))</p>"
        body += thresholdsSection(result)
        body += "<section id=\"summary\"><h2>Summary</h2>" + summaryTable(result.total) + "</section>"
        body += "<section id=\"latency\"><h2>Latency</h2>"
        for metric in MetricCatalog.latencies {
            let name = metric.name
            guard let histogram = result.total[histogram: metric], histogram.totalCount > 0 else { continue }
            body += "<div class=\"pair\">"
            body += SVGChart(id: "over-time-\(name)", title: "\(name) over time", series: overTime(result, name, prefix: ""),
                             xAxis: .seconds, yFormat: formatMicroseconds).render()
            body += SVGChart(id: "spectrum-\(name)", title: "\(name) percentile spectrum",
                             series: [.init(name: "\(name)", color: palette[0], points: spectrum(histogram))],
                             xAxis: .percentileSpectrum, yFormat: formatMicroseconds).render()
            body += "</div>"
        }
        body += "</section>"
        body += flowSection(result)
        body += "<section id=\"throughput\"><h2>Throughput and connections</h2><div class=\"pair\">"
        body += SVGChart(id: "messages-per-second", title: "messages received per second",
                         series: [.init(name: "msgs/s", color: palette[0], points: rate(result, .messagesReceived))],
                         xAxis: .seconds, yFormat: { grouped(saturated($0.rounded())) }).render()
        body += SVGChart(id: "connections", title: "open connections",
                         series: [.init(name: "connections", color: palette[3], points: result.intervals.map { ($0.end.seconds, Double($0.liveConnections)) })],
                         xAxis: .seconds, yFormat: { grouped(saturated($0.rounded())) }).render()
        body += "</div></section>"
        body += errorsSection(result.total)
        body += invariantsSection(result.invariants)
        return page(title: "wsload: \(result.profile.name)", body: body)
    }

    package static func renderComparison(
        base: [RunResult], head: [RunResult], baseLabel: String, headLabel: String, rows: [ComparisonRow],
        isRegression: (ComparisonRow) -> Bool, alpha: Double, toolVersion: String
    ) -> String {
        var body = "<h1>wsload compare</h1>"
        body += "<p class=\"meta\">base: \(escape(baseLabel)) (\(base.count) run\(base.count == 1 ? "" : "s")) · "
            + "head: \(escape(headLabel)) (\(head.count) run\(head.count == 1 ? "" : "s")) · α = \(alpha) · wsload \(escape(toolVersion))</p>"
        body += "<section id=\"comparison\"><h2>Changes</h2><table><tr><th>metric</th><th>base</th><th>head</th><th>change</th><th>p</th><th></th></tr>"
        for row in rows {
            let changed = row.isSignificant(alpha: alpha)
            let change = changed ? (row.changePercent.map { ($0 >= 0 ? "+" : "") + String(format: "%.1f%%", $0) } ?? "from 0") : "~"
            let shownChange = row.presence == .both ? change : row.presence.rawValue
            let verdict = isRegression(row) ? "<td class=\"fail\">regression</td>" : (changed ? "<td>\(row.isWorse(alpha: alpha) ? "worse" : "better")</td>" : "<td></td>")
            body += "<tr><td>\(escape(row.metric + " " + row.statistic))</td><td>\(format(row.base, row.unit))</td>"
                + "<td>\(format(row.head, row.unit))</td><td>\(shownChange)</td><td>\(String(format: "%.3f", row.pValue))</td>\(verdict)</tr>"
        }
        body += "</table></section><section id=\"latency\"><h2>Latency, base and head</h2>"
        let pooledBase = pooled(base), pooledHead = pooled(head)
        for metric in MetricCatalog.latencies {
            let name = metric.name
            guard let baseHistogram = pooledBase[histogram: metric], let headHistogram = pooledHead[histogram: metric],
                baseHistogram.totalCount > 0, headHistogram.totalCount > 0
            else { continue }
            body += "<div class=\"pair\">"
            body += SVGChart(id: "spectrum-\(name)", title: "\(name) percentile spectrum", series: [
                .init(name: "base", color: palette[0], points: spectrum(baseHistogram), isDashed: true),
                .init(name: "head", color: palette[2], points: spectrum(headHistogram)),
            ], xAxis: .percentileSpectrum, yFormat: formatMicroseconds).render()
            var series: [SVGChart.Series] = []
            if let first = base.first { series.append(contentsOf: overTime(first, name, prefix: "base ", only: [99], color: palette[0], dashed: true)) }
            if let first = head.first { series.append(contentsOf: overTime(first, name, prefix: "head ", only: [99], color: palette[2], dashed: false)) }
            body += SVGChart(id: "over-time-\(name)", title: "\(name) p99 over time (first run of each side)", series: series,
                             xAxis: .seconds, yFormat: formatMicroseconds).render()
            body += "</div>"
        }
        body += "</section><section id=\"throughput\"><h2>Throughput, base and head</h2>"
        var throughput: [SVGChart.Series] = []
        if let first = base.first { throughput.append(.init(name: "base", color: palette[0], points: rate(first, .messagesReceived), isDashed: true)) }
        if let first = head.first { throughput.append(.init(name: "head", color: palette[2], points: rate(first, .messagesReceived))) }
        body += SVGChart(id: "messages-per-second", title: "messages received per second (first run of each side)",
                         series: throughput, xAxis: .seconds, yFormat: { grouped(saturated($0.rounded())) }).render()
        body += "</section>"
        return page(title: "wsload compare", body: body)
    }

    // MARK: Pieces

    static func status(_ result: RunResult) -> String {
        if let threshold = result.abortedBy { return "aborted: \(threshold) failed" }
        if let signal = result.interruptedBy { return "interrupted by \(signal)" }
        return result.thresholdsPassed ? "completed, thresholds passed" : "completed, thresholds failed"
    }

    static func thresholdsSection(_ result: RunResult) -> String {
        guard !result.thresholds.isEmpty else { return "" }
        var html = "<section id=\"thresholds\"><h2>Thresholds</h2><table><tr><th></th><th>threshold</th><th>actual</th></tr>"
        for outcome in result.thresholds {
            let actual: String
            if let value = outcome.actual {
                switch (outcome.threshold.metric.kind, outcome.threshold.statistic) {
                case (.latency, .count), (.throughput, .count): actual = grouped(saturated(value))
                case (.throughput, _): actual = formatBytes(saturatedInt64(value * 1024)) + "/s"
                case (.latency, _): actual = formatMicroseconds(value)
                case (_, .rate): actual = String(format: "%.3f%%", value * 100)
                default: actual = String(format: "%.1f", value)
                }
            } else {
                actual = outcome.note ?? "no samples"
            }
            html += "<tr class=\"\(outcome.passed ? "pass" : "fail")\"><td>\(outcome.passed ? "✓" : "✗")</td>"
                + "<td class=\"text\">\(escape(outcome.threshold.expression))</td><td>\(escape(actual))</td></tr>"
        }
        return html + "</table></section>"
    }

    static func summaryTable(_ metrics: MetricSet) -> String {
        var html = "<table><tr><th>metric</th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>"
        for metric in MetricCatalog.latencies {
            guard let histogram = metrics[histogram: metric], histogram.totalCount > 0 else { continue }
            html += "<tr><td>\(escape(metric.name))</td><td>\(grouped(saturated(histogram.totalCount)))</td>"
            for percentile in [50.0, 90, 99, 99.9] {
                html += "<td>\(formatMicroseconds(Double(histogram.value(atPercentile: percentile))))</td>"
            }
            html += "<td>\(formatMicroseconds(Double(histogram.maximum)))</td></tr>"
        }
        html += "</table><table><tr><th>counter</th><th>count</th></tr>"
        for name in metrics.counters.keys.sorted() {
            html += "<tr><td>\(escape(name))</td><td>\(grouped(saturated(metrics.counters[name]!)))</td></tr>"
        }
        return html + "</table>"
    }

    static func invariantsSection(_ invariants: InvariantReport) -> String {
        var html = "<section id=\"invariants\"><h2>Invariants</h2><table><tr><th>invariant</th><th>checked</th><th>violations</th><th>first example</th></tr>"
        for name in invariants.checked.keys.sorted() {
            let violations = invariants.violations[name] ?? 0
            let example = invariants.examples[name]?.first.map { "actor \($0.actor): \($0.detail)" } ?? ""
            html += "<tr class=\"\(violations == 0 ? "pass" : "fail")\"><td>\(escape(name))</td><td>\(grouped(saturated(invariants.checked[name]!)))</td>"
                + "<td>\(grouped(saturated(violations)))</td><td class=\"text\">\(escape(example))</td></tr>"
        }
        return html + "</table></section>"
    }

    static func errorsSection(_ metrics: MetricSet) -> String {
        var html = "<section id=\"errors\"><h2>Errors and close codes</h2><div class=\"pair\"><table><tr><th>error</th><th>count</th></tr>"
        if metrics.errors.isEmpty { html += "<tr><td colspan=\"2\">none</td></tr>" }
        for code in metrics.errors.keys.sorted() {
            html += "<tr><td>\(escape(code))</td><td>\(grouped(saturated(metrics.errors[code]!)))</td></tr>"
        }
        html += "</table><table><tr><th>close code</th><th>disconnects</th></tr>"
        if metrics.disconnects.isEmpty { html += "<tr><td colspan=\"2\">none</td></tr>" }
        for code in metrics.disconnects.keys.sorted() {
            html += "<tr><td>\(code)</td><td>\(grouped(saturated(metrics.disconnects[code]!)))</td></tr>"
        }
        return html + "</table></div></section>"
    }

    /// p50/p90/p99 of each interval, at the interval's end.
    static func overTime(
        _ result: RunResult, _ name: String, prefix: String, only: [Double] = [50, 90, 99], color: String? = nil, dashed: Bool = false
    ) -> [SVGChart.Series] {
        only.enumerated().map { index, percentile in
            let points = result.intervals.compactMap { interval -> (x: Double, y: Double)? in
                guard let histogram = interval.metrics.histograms[name], histogram.totalCount > 0 else { return nil }
                return (interval.end.seconds, Double(histogram.value(atPercentile: percentile)))
            }
            let label = prefix + "p" + (percentile.rounded() == percentile ? String(Int(percentile)) : "\(percentile)")
            return SVGChart.Series(name: label, color: color ?? palette[index % palette.count], points: points, isDashed: dashed)
        }
    }

    /// The percentile spectrum: value against log10(1 / (1 − p)), up to the resolution the sample count allows.
    static func spectrum(_ histogram: Histogram) -> [(x: Double, y: Double)] {
        let xMax = min(6, log10(Double(max(histogram.totalCount, 10))))
        return stride(from: 0.0, through: xMax, by: xMax / 120).map { x in
            let percentile = 100 * (1 - pow(10, -x))
            return (x, Double(histogram.value(atPercentile: percentile)))
        }
    }

    /// A counter per second of each interval.
    static func rate(_ result: RunResult, _ counter: Metric) -> [(x: Double, y: Double)] {
        result.intervals.compactMap { interval in
            let seconds = (interval.end - interval.start).seconds
            guard seconds > 0 else { return nil }
            return (interval.end.seconds, Double(interval.metrics.counter(counter)) / seconds)
        }
    }

    static func pooled(_ results: [RunResult]) -> MetricSet {
        var metrics = MetricSet()
        // Runs of another histogram layout cannot add exactly; the charts show what adds (merge refuses them).
        for result in results { try? metrics.add(result.total) }
        return metrics
    }

    static func format(_ value: Double, _ unit: String) -> String {
        switch unit {
        case Metric.Unit.microseconds.rawValue: formatMicroseconds(value)
        case Metric.Unit.kibibytesPerSecond.rawValue: formatBytes(saturatedInt64(value * 1024)) + "/s"
        case "/s": grouped(saturated(value.rounded()))
        default: String(format: "%.3f%%", value * 100)
        }
    }

    static func page(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title))</title>
        <style>
        body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1600px; }
        h1 .name { color: #1f77b4; } .meta { color: #555; }
        table { border-collapse: collapse; margin: 8px 16px 16px 0; display: inline-table; vertical-align: top; }
        th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; } th:first-child, td:first-child, td.text { text-align: left; }
        tr.pass td:first-child { color: #2ca02c; } tr.fail td, td.fail { color: #d62728; font-weight: 600; }
        .pair { display: flex; flex-wrap: wrap; gap: 16px; }
        svg.chart { width: 760px; max-width: 100%; height: auto; background: #fff; border: 1px solid #eee; }
        svg .grid { stroke: #eee; } svg .frame { fill: none; stroke: #bbb; }
        svg text { font: 11px system-ui, sans-serif; fill: #444; } svg .title { font-size: 13px; font-weight: 600; fill: #222; }
        </style></head>
        <body>\(body)</body></html>

        """
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

import Foundation
import Histogram
import Profile

/// The comparison's HTML: the run report's look (header, headline tiles, a grid of cards) with the changes table,
/// then base and head overlaid — percentile spectra of the pooled runs, and p99 and throughput over time of the
/// first run of each side, each drawn from its own timeline (merged exactly to a few hundred points).
extension RunHTML {
    package static func renderComparison(
        base: [RunResult], head: [RunResult], baseLabel: String, headLabel: String, rows: [ComparisonRow],
        isRegression: (ComparisonRow) -> Bool, alpha: Double, toolVersion: String
    ) throws(ReportFormatError) -> String {
        let regressions = rows.filter(isRegression).count
        let significant = rows.filter { $0.isSignificant(alpha: alpha) }
        let worse = significant.filter { $0.isWorse(alpha: alpha) }.count
        var body = "<header><h1>wsload compare</h1><span class=\"badge \(regressions == 0 ? "pass" : "fail")\">"
            + "\(regressions == 0 ? "no regression" : "regression")</span>"
        body += "<div class=\"meta\">base: \(escape(baseLabel)) (\(runs(base.count))) · head: \(escape(headLabel)) (\(runs(head.count)))"
            + " · α = \(alpha) · wsload \(escape(toolVersion))</div></header>"
        let tiles = [
            Tile(figure: "compared", label: "statistics compared", value: grouped(rows.count), detail: "base and head"),
            Tile(figure: "significant", label: "significant changes", value: grouped(significant.count),
                 detail: "\(worse) worse · \(significant.count - worse) better"),
            Tile(figure: "regressions", label: "regressions", value: grouped(regressions), detail: "beyond a budget",
                 tone: regressions == 0 ? "pass" : "fail"),
            Tile(figure: "base-runs", label: "base", value: runs(base.count), detail: baseLabel),
            Tile(figure: "head-runs", label: "head", value: runs(head.count), detail: headLabel),
        ]
        body += "<section id=\"headline\" class=\"tiles\">" + tiles.map(\.html).joined() + "</section>"
        body += "<section id=\"comparison\" class=\"card scroll\"><h3>Changes</h3><table><tr><th>metric</th><th>base</th>"
            + "<th>head</th><th>change</th><th>p-value</th><th></th></tr>"
        for row in rows {
            let changed = row.isSignificant(alpha: alpha)
            let change = changed ? FigureText.change(row) : "~"
            let shownChange = row.presence == .both ? change : row.presence.rawValue
            let verdict = isRegression(row) ? "<td class=\"fail\">regression</td>"
                : (changed ? "<td>\(row.isWorse(alpha: alpha) ? "worse" : "better")</td>" : "<td></td>")
            body += "<tr><td class=\"text\">\(escape(row.metric + " " + row.statistic))</td>"
                + "<td>\(FigureText.statistic(row.base, unit: row.unit))</td><td>\(FigureText.statistic(row.head, unit: row.unit))</td>"
                + "<td>\(shownChange)</td><td>\(FigureText.pValue(row.pValue))</td>\(verdict)</tr>"
        }
        body += "</table></section>"
        body += try comparisonCharts(base: base, head: head)
        return page(title: "wsload compare", body: body)
    }

    private static func runs(_ count: Int) -> String { "\(count) run\(count == 1 ? "" : "s")" }

    private static func comparisonCharts(base: [RunResult], head: [RunResult]) throws(ReportFormatError) -> String {
        let baseTimeline = try HTMLTimeline(base.first?.intervals ?? [])
        let headTimeline = try HTMLTimeline(head.first?.intervals ?? [])
        let label: @Sendable (Double) -> String = { x in
            (headTimeline.bucket(endingAt: x) != nil ? headTimeline : baseTimeline).label(x)
        }
        let baseColor = palette[0], headColor = palette[2]
        var html = "<h2>Base and head</h2><section id=\"latency\" class=\"grid\">"
        let pooledBase = pooled(base), pooledHead = pooled(head)
        for metric in MetricCatalog.latencies {
            let name = metric.name
            guard let baseHistogram = pooledBase[histogram: metric], let headHistogram = pooledHead[histogram: metric],
                baseHistogram.totalCount > 0, headHistogram.totalCount > 0
            else { continue }
            html += SVGChart(id: "spectrum-\(name)", title: "\(name) percentile spectrum", series: [
                .init(name: "base", color: baseColor, points: spectrum(baseHistogram).map { ($0.x, $0.y) }, isDashed: true),
                .init(name: "head", color: headColor, points: spectrum(headHistogram).map { ($0.x, $0.y) }),
            ], xAxis: .percentileSpectrum, yFormat: formatMicroseconds).render()
            var series: [SVGChart.Series] = []
            if !base.isEmpty {
                series += overTimeSeries(baseTimeline, name, prefix: "base ", only: [99], color: baseColor, dashed: true)
            }
            if !head.isEmpty {
                series += overTimeSeries(headTimeline, name, prefix: "head ", only: [99], color: headColor, dashed: false)
            }
            html += SVGChart(id: "over-time-\(name)", title: "\(name) p99 over time", note: "first run of each side",
                             series: series, xAxis: .seconds, yFormat: formatMicroseconds, xLabel: label).render()
        }
        var throughput: [SVGChart.Series] = []
        if !base.isEmpty {
            throughput.append(.init(name: "base", color: baseColor, points: baseTimeline.rate(Metric.messagesReceived.name), isDashed: true))
        }
        if !head.isEmpty {
            throughput.append(.init(name: "head", color: headColor, points: headTimeline.rate(Metric.messagesReceived.name)))
        }
        html += SVGChart(id: "messages-per-second", title: "messages received per second", note: "first run of each side",
                         series: throughput, xAxis: .seconds, yFormat: formatRate, xLabel: label).render()
        return html + "</section>"
    }
}

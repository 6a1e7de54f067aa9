import Foundation
import Histogram
import Profile

/// The HTML report's flow section: per scenario a table of its steps (count, errors, percentiles, first results),
/// the messages pushed outside any expect by type and the flow counters, and a chart of each step's p99 per
/// interval. Step names and types are profile- or server-supplied: every one goes through `escape`.
extension RunHTML {
    /// Steps charted over time (the legend holds one line); the tables list every step.
    static let flowChartedSteps = 8
    /// Colours of the step chart's series (one more set than the latency charts need).
    static let flowPalette = palette + ["#8c564b", "#e377c2", "#17becf"]

    static func flowSection(_ result: RunResult) -> String {
        let scenarios = result.scenarios.map { ($0.scenario.name, $0.metrics, $0.scenario.websocket.flow?.stepNames ?? []) }
            .filter { !$0.1.flowSteps().isEmpty || !$0.1.flowPushed.isEmpty || !$0.1.flowCounters.isEmpty }
        guard !scenarios.isEmpty || !result.total.flowSteps().isEmpty else { return "" }
        var html = "<section id=\"flow\"><h2>Flow steps</h2>"
        for (name, metrics, order) in scenarios {
            html += "<h3>scenario <span class=\"name\">\(escape(name))</span></h3>" + flowTables(metrics, order: order)
        }
        let order = result.scenarios.flatMap { $0.scenario.websocket.flow?.stepNames ?? [] }
        let steps = result.total.flowSteps(order: order).filter { $0.count > 0 }.prefix(flowChartedSteps)
        if !steps.isEmpty {
            let series = steps.enumerated().map { index, step in
                let metric = MetricFamily.flowStep.name(step.name)
                let points = result.intervals.compactMap { interval -> (x: Double, y: Double)? in
                    guard let histogram = interval.metrics.histograms[metric], histogram.totalCount > 0 else { return nil }
                    return (interval.end.seconds, Double(histogram.value(atPercentile: 99)))
                }
                let label = step.name.count > 20 ? String(step.name.prefix(20)) + "…" : step.name
                return SVGChart.Series(name: label, color: flowPalette[index % flowPalette.count], points: points)
            }
            html += SVGChart(id: "flow-steps-p99", title: "flow steps p99 over time", series: series,
                             xAxis: .seconds, yFormat: formatMicroseconds).render()
        }
        return html + "</section>"
    }

    /// One scenario's step table, pushed types and flow counters.
    static func flowTables(_ metrics: MetricSet, order: [String]) -> String {
        var html = "<table class=\"flow-steps\"><tr><th>step</th><th>count</th><th>errors</th><th>error rate</th>"
            + "<th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>"
        func cells(_ histogram: Histogram?) -> String {
            guard let histogram, histogram.totalCount > 0 else { return String(repeating: "<td>-</td>", count: 4) }
            return [50.0, 90, 99].map { "<td>\(formatMicroseconds(Double(histogram.value(atPercentile: $0))))</td>" }.joined()
                + "<td>\(formatMicroseconds(Double(histogram.maximum)))</td>"
        }
        for step in metrics.flowSteps(order: order) {
            html += "<tr><td class=\"text\">\(escape(step.name))</td><td>\(grouped(saturated(step.count)))</td>"
                + "<td>\(grouped(saturated(step.errors)))</td><td>\(String(format: "%.3f%%", step.errorRate * 100))</td>"
                + cells(step.latency) + "</tr>"
            if let first = step.firstResult, first.totalCount > 0 {
                html += "<tr><td class=\"text\">\(escape(step.name)) (first result)</td>"
                    + "<td>\(grouped(saturated(first.totalCount)))</td><td></td><td></td>" + cells(first) + "</tr>"
            }
        }
        html += "</table>"
        let pushed = metrics.flowPushed
        if !pushed.isEmpty {
            html += "<table class=\"flow-pushed\"><tr><th>pushed type</th><th>messages</th></tr>"
            for entry in pushed {
                html += "<tr><td class=\"text\">\(escape(entry.type))</td><td>\(grouped(saturated(entry.count)))</td></tr>"
            }
            html += "</table>"
        }
        let counters = metrics.flowCounters
        if !counters.isEmpty {
            html += "<table class=\"flow-counters\"><tr><th>flow counter</th><th>count</th></tr>"
            for entry in counters {
                html += "<tr><td>\(escape(entry.name))</td><td>\(grouped(saturated(entry.count)))</td></tr>"
            }
            html += "</table>"
        }
        return html
    }
}

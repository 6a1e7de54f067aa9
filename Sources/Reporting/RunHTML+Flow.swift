import Foundation
import Histogram
import Profile

/// The HTML report's flow section: per scenario a table of its steps (count, errors, percentiles, first results),
/// the messages pushed outside any expect by type and the flow counters; then a chart of every step's p99 together
/// and one chart per step with its p50 and p99, per point of the timeline. Step names and types are profile- or
/// server-supplied: every one goes through `escape` (and reaches the hover script only as JSON in an escaped
/// attribute, shown with `textContent`).
extension RunHTML {
    /// Steps charted over time (the legend holds one line); the tables list every step.
    static let flowChartedSteps = 8
    /// Colours of the step chart's series (one more set than the latency charts need).
    static let flowPalette = palette + ["#8c564b", "#e377c2", "#17becf"]

    static func flowSection(_ result: RunResult, _ timeline: HTMLTimeline) -> String {
        let scenarios = result.scenarios.map { ($0.scenario.name, $0.metrics, $0.scenario.websocket.flow?.stepNames ?? []) }
            .filter { !$0.1.flowSteps().isEmpty || !$0.1.flowPushed.isEmpty || !$0.1.flowCounters.isEmpty }
        guard !scenarios.isEmpty || !result.total.flowSteps().isEmpty else { return "" }
        var html = "<section id=\"flow\"><h2>Flow steps</h2><div class=\"grid\">"
        for (name, metrics, order) in scenarios {
            html += "<div class=\"card wide scroll\"><h3>scenario <span class=\"name\">\(escape(name))</span></h3>"
                + flowTables(metrics, order: order) + "</div>"
        }
        let order = result.scenarios.flatMap { $0.scenario.websocket.flow?.stepNames ?? [] }
        let steps = result.total.flowSteps(order: order).filter { $0.count > 0 }.prefix(flowChartedSteps)
        if !steps.isEmpty {
            let series = steps.enumerated().map { index, step in
                SVGChart.Series(name: shortName(step.name), color: flowPalette[index % flowPalette.count],
                                points: timeline.percentile(MetricFamily.flowStep.name(step.name), 99))
            }
            html += timeChart(result, timeline, id: "flow-steps-p99", title: "flow steps p99 over time", series: series,
                              yFormat: formatMicroseconds)
            for (index, step) in steps.enumerated() {
                let metric = MetricFamily.flowStep.name(step.name)
                html += timeChart(result, timeline, id: "flow-step-\(index)", title: "step \(shortName(step.name))", series: [
                    .init(name: "p50", color: percentileLines[0].color, points: timeline.percentile(metric, 50)),
                    .init(name: "p99", color: percentileLines[2].color, points: timeline.percentile(metric, 99)),
                ], yFormat: formatMicroseconds)
            }
        }
        return html + "</div></section>"
    }

    /// A step name for a legend or a title: at most 20 characters.
    static func shortName(_ name: String) -> String { name.count > 20 ? String(name.prefix(20)) + "…" : name }

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

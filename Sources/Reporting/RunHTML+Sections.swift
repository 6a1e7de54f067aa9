import Foundation
import Histogram
import Profile

/// The report below its first screen: every latency over time with its spectrum, transfers, the error and close
/// code tables, and the counters, scenarios and chaos events.
extension RunHTML {
    static func latencySection(_ result: RunResult, _ timeline: HTMLTimeline) -> String {
        let headline = headlineLatency(result.total)
        var html = "<h2>Latency</h2><section id=\"latency\" class=\"grid\">"
        html += "<div class=\"card wide scroll\" id=\"summary\">" + latencyTable(result.total) + "</div>"
        for metric in MetricCatalog.latencies where metric.name != headline.key {
            guard let histogram = result.total[histogram: metric], histogram.totalCount > 0 else { continue }
            html += overTime(result, timeline, metric.name)
            html += spectrumChart(metric.name, histogram)
        }
        return html + "</section>"
    }

    static func latencyTable(_ metrics: MetricSet) -> String {
        var html = "<table><tr><th>metric</th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>"
        for metric in MetricCatalog.latencies {
            guard let histogram = metrics[histogram: metric], histogram.totalCount > 0 else { continue }
            html += "<tr><td>\(escape(metric.name))</td><td>\(grouped(saturated(histogram.totalCount)))</td>"
            for percentile in [50.0, 90, 99, 99.9] {
                html += "<td>\(formatMicroseconds(Double(histogram.value(atPercentile: percentile))))</td>"
            }
            html += "<td>\(formatMicroseconds(Double(histogram.maximum)))</td></tr>"
        }
        return html + "</table>"
    }

    /// Transfers: bytes per second over the run and each finished transfer's throughput (p50 and p10, the slowest
    /// tenth) per point; only when the run had transfers.
    static func transferSection(_ result: RunResult, _ timeline: HTMLTimeline) -> String {
        let total = result.total
        guard total.counter(.transfersStarted) > 0 || total[histogram: .throughput] != nil else { return "" }
        var html = "<h2>Transfers</h2><section id=\"transfers\" class=\"grid\">"
        if hasMessages(result) { html += transferBytesChart(result, timeline) }
        let throughput = Metric.throughput.name
        html += timeChart(result, timeline, id: "transfer-throughput-per-transfer", title: "throughput of each finished transfer",
                          series: [
                            .init(name: "p50", color: "#2563eb", points: kibibytes(timeline.percentile(throughput, 50))),
                            .init(name: "p10", color: "#d62728", points: kibibytes(timeline.percentile(throughput, 10))),
                          ], yFormat: formatByteRate)
        html += timeChart(result, timeline, id: "transfers-per-second", title: "transfers per second", series: [
            .init(name: "completed", color: "#2ca02c", points: timeline.rate(Metric.transfersCompleted.name)),
            .init(name: "failed", color: "#d62728", points: timeline.rate(Metric.transfersFailed.name)),
        ], yFormat: formatRate)
        return html + "</section>"
    }

    /// Transfer body bytes (received and sent) per second.
    static func transferBytesChart(_ result: RunResult, _ timeline: HTMLTimeline) -> String {
        timeChart(result, timeline, id: "transfer-bytes-per-second", title: "transfer bytes per second", series: [
            .init(name: "received", color: "#2563eb", points: timeline.rate(Metric.transferBytesReceived.name)),
            .init(name: "sent", color: "#0d9488", points: timeline.rate(Metric.transferBytesSent.name), isDashed: true),
        ], yFormat: formatByteRate)
    }

    /// KiB/s values (the throughput histogram's unit) as bytes/s.
    private static func kibibytes(_ points: [(x: Double, y: Double?)]) -> [(x: Double, y: Double?)] {
        points.map { ($0.x, $0.y.map { $0 * 1024 }) }
    }

    static func errorsSection(_ metrics: MetricSet) -> String {
        var html = "<h2>Errors and close codes</h2><section id=\"errors\" class=\"grid\">"
            + "<div class=\"card\"><table><tr><th>error</th><th>count</th></tr>"
        if metrics.errors.isEmpty { html += "<tr><td colspan=\"2\">none</td></tr>" }
        for code in metrics.errors.keys.sorted() {
            html += "<tr><td>\(escape(code))</td><td>\(grouped(saturated(metrics.errors[code]!)))</td></tr>"
        }
        html += "</table></div><div class=\"card\"><table><tr><th>close code</th><th>disconnects</th></tr>"
        if metrics.disconnects.isEmpty { html += "<tr><td colspan=\"2\">none</td></tr>" }
        for code in metrics.disconnects.keys.sorted() {
            html += "<tr><td>\(code)</td><td>\(grouped(saturated(metrics.disconnects[code]!)))</td></tr>"
        }
        return html + "</table></div></section>"
    }

    /// The scenarios, every counter of the run, and the chaos timeline.
    static func countersSection(_ result: RunResult) -> String {
        let seconds = min(result.elapsed, result.profile.duration).seconds
        var html = "<h2>Scenarios and counters</h2><section id=\"counters\" class=\"grid\">"
        html += "<div class=\"card scroll\"><h3>Scenarios</h3><table><tr><th>scenario</th><th>kind</th><th>connections</th>"
            + "<th>received/s</th><th>errors</th></tr>"
        for scenario in result.scenarios {
            let kind = scenario.scenario.transfer == nil ? scenario.scenario.websocket.pattern.rawValue : scenario.scenario.kind.rawValue
            html += "<tr><td class=\"text\">\(escape(scenario.scenario.name))</td><td>\(escape(kind))</td>"
                + "<td>\(grouped(scenario.scenario.websocket.connections))</td>"
                + "<td>\(formatRate(perSecond(scenario.metrics.counter(.messagesReceived), seconds)))</td>"
                + "<td>\(grouped(saturated(scenario.metrics.errorCount)))</td></tr>"
        }
        html += "</table></div><div class=\"card\"><h3>Counters</h3><table><tr><th>counter</th><th>count</th><th>per second</th></tr>"
        for name in result.total.counters.keys.sorted() {
            let count = result.total.counters[name]!
            html += "<tr><td class=\"text\">\(escape(name))</td><td>\(grouped(saturated(count)))</td>"
                + "<td>\(formatRate(perSecond(count, seconds)))</td></tr>"
        }
        html += "</table></div>"
        if !result.chaos.isEmpty {
            html += "<div class=\"card\" id=\"chaos\"><h3>Chaos</h3><table><tr><th>action</th><th>planned</th><th>fired</th>"
                + "<th>connections</th></tr>"
            for record in result.chaos {
                html += "<tr><td class=\"text\">\(escape(record.action))</td><td>\(escape(formatDuration(record.at)))</td>"
                    + "<td>\(escape(formatDuration(record.firedAt)))</td><td>\(grouped(record.affected))</td></tr>"
            }
            html += "</table></div>"
        }
        if let storm = result.reconnectStorm {
            html += "<div class=\"card\" id=\"reconnect-storm\"><h3>Reconnect storm</h3><p>At most "
                + "\(grouped(saturated(storm.peakReconnectsPer100ms))) reconnects in 100 ms, against "
                + "\(grouped(saturated(storm.peakDropsPer100ms))) drops in 100 ms (the bound without jitter).</p></div>"
        }
        return html + "</section>"
    }
}

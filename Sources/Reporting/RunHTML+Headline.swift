import Foundation
import Histogram
import Profile

/// The report's headline figures (a row of tiles: connections, throughput, the headline latency's p50/p99/p99.9,
/// errors, and the invariants and thresholds verdicts) and the two verdict tables behind them.
extension RunHTML {
    /// One headline tile: `figure` names it for tests and scripts (`rtt-p99`); `tone` colours a verdict.
    struct Tile {
        var figure: String
        var label: String
        var value: String
        var detail: String
        var tone: String? = nil
        /// What the tile shows in full (its tooltip), when the label abbreviates it.
        var title: String? = nil
        /// A unit after the value, in smaller type.
        var unit: String? = nil

        var html: String {
            "<div class=\"tile\(tone.map { " " + $0 } ?? "")\" data-figure=\"\(figure)\"\(title.map { " title=\"\(escape($0))\"" } ?? "")>"
                + "<div class=\"label\">\(escape(label))</div>"
                + "<div class=\"value\">\(escape(value))\(unit.map { "<small> \(escape($0))</small>" } ?? "")</div><div class=\"detail\">\(escape(detail))</div></div>"
        }
    }

    static func headline(_ result: RunResult) -> String {
        let total = result.total
        let seconds = min(result.elapsed, result.profile.duration).seconds
        var tiles: [Tile] = []
        let live = result.intervals.map(\.liveConnections)
        // Transfer scenarios' concurrency counts too: their tasks are live clients of the run.
        let target = result.scenarios.reduce(0) { $0 &+ $1.scenario.websocket.connections }
        tiles.append(Tile(
            figure: "connections", label: "connections peak", value: live.max().map { grouped($0) } ?? "–",
            detail: "now \(live.last.map { grouped($0) } ?? "–") · target \(grouped(target))"))
        if hasMessages(result) {
            let received = total.counter(.messagesReceived), sent = total.counter(.messagesSent)
            tiles.append(Tile(
                figure: "messages-per-second", label: "messages/s", value: formatRate(perSecond(received, seconds)),
                detail: "received; sent \(formatRate(perSecond(sent, seconds)))"))
        } else {
            let bytes = saturatingSum(total.counter(.transferBytesReceived), total.counter(.transferBytesSent))
            // `137.7 MiB/s`: the unit smaller, so the figure fits its tile.
            let rate = formatByteRate(perSecond(bytes, seconds)).split(separator: " ", maxSplits: 1).map(String.init)
            tiles.append(Tile(
                figure: "transfer-throughput", label: "transfer bytes/s", value: rate[0],
                detail: "\(grouped(saturated(total.counter(.transfersCompleted)))) transfers done", unit: rate.count > 1 ? rate[1] : nil))
        }
        let latency = headlineLatency(total)
        let histogram = total.histograms[latency.key].flatMap { $0.totalCount > 0 ? $0 : nil }
        let details: [(Histogram) -> String] = [
            { "\(grouped(saturated($0.totalCount))) samples" }, { "p90 \(formatMicroseconds(Double($0.value(atPercentile: 90))))" },
            { "max \(formatMicroseconds(Double($0.maximum)))" },
        ]
        for (percentile, detail) in zip([50.0, 99, 99.9], details) {
            let name = percentileName(percentile)
            tiles.append(Tile(
                figure: "rtt-" + name, label: "\(latency.label) \(name)",
                value: histogram.map { formatMicroseconds(Double($0.value(atPercentile: percentile))) } ?? "–",
                detail: histogram.map(detail) ?? "no samples", title: latency.key))
        }
        let errors = total.errorCount, operations = total.operations
        let errorRate = operations == 0 ? 0 : Double(errors) / Double(operations)
        tiles.append(Tile(
            figure: "errors", label: "errors", value: grouped(saturated(errors)),
            detail: "rate " + String(format: "%.3f%%", errorRate * 100),
            tone: errors == 0 ? nil : "fail"))
        let checks = result.invariants.checked.values.reduce(0, saturatingSum)
        let violations = result.invariants.violationCount
        tiles.append(Tile(
            figure: "invariants", label: "invariants", value: violations == 0 ? "held" : "violated",
            detail: violations == 0 ? "\(grouped(saturated(checks))) checks"
                : "\(grouped(saturated(violations))) violations in \(grouped(saturated(checks))) checks",
            tone: violations == 0 ? "pass" : "fail"))
        let passed = result.thresholds.filter(\.passed).count
        tiles.append(Tile(
            figure: "thresholds", label: "thresholds",
            value: result.thresholds.isEmpty ? "none" : result.thresholdsPassed ? "passed" : "failed",
            detail: result.thresholds.isEmpty ? "none set" : "\(passed) of \(result.thresholds.count) pass",
            tone: result.thresholds.isEmpty ? nil : result.thresholdsPassed ? "pass" : "fail"))
        return "<section id=\"headline\" class=\"tiles\">" + tiles.map(\.html).joined() + "</section>"
    }

    static func perSecond(_ count: UInt64, _ seconds: Double) -> Double { seconds > 0 ? Double(count) / seconds : 0 }

    static func status(_ result: RunResult) -> String {
        if let journal = result.recoveredFrom { return "INCOMPLETE: recovered from the run journal \(journal)" }
        if let threshold = result.abortedBy { return "aborted: \(threshold) failed" }
        if let signal = result.interruptedBy { return "interrupted by \(signal)" }
        return result.thresholdsPassed ? "completed, thresholds passed" : "completed, thresholds failed"
    }

    /// The thresholds and invariants tables, side by side.
    static func verdicts(_ result: RunResult) -> String {
        "<h2>Verdicts</h2><div class=\"grid two\">" + thresholdsSection(result) + invariantsSection(result.invariants) + "</div>"
    }

    static func thresholdsSection(_ result: RunResult) -> String {
        var html = "<section id=\"thresholds\" class=\"card scroll\"><h3>Thresholds</h3>"
        guard !result.thresholds.isEmpty else { return html + "<p class=\"note\">The profile sets none.</p></section>" }
        html += "<table><tr><th></th><th class=\"text\">threshold</th><th>actual</th></tr>"
        for outcome in result.thresholds {
            let actual = FigureText.actual(outcome)
            html += "<tr class=\"\(outcome.passed ? "pass" : "fail")\"><td>\(outcome.passed ? "✓" : "✗")</td>"
                + "<td class=\"text\">\(escape(outcome.threshold.expression))</td><td>\(escape(actual))</td></tr>"
        }
        return html + "</table></section>"
    }

    static func invariantsSection(_ invariants: InvariantReport) -> String {
        var html = "<section id=\"invariants\" class=\"card scroll\"><h3>Invariants</h3>"
        let names = Set(invariants.checked.keys).union(invariants.violations.keys).sorted()
        guard !names.isEmpty else { return html + "<p class=\"note\">Nothing was checked.</p></section>" }
        html += "<table><tr><th>invariant</th><th>checked</th><th>violations</th><th class=\"text\">first example</th></tr>"
        for name in names {
            let violations = invariants.violations[name] ?? 0
            let example = invariants.examples[name]?.first.map { "actor \($0.actor): \($0.detail)" } ?? ""
            html += "<tr class=\"\(violations == 0 ? "pass" : "fail")\"><td>\(escape(name))</td>"
                + "<td>\(grouped(saturated(invariants.checked[name] ?? 0)))</td>"
                + "<td>\(grouped(saturated(violations)))</td><td class=\"text\">\(escape(example))</td></tr>"
        }
        return html + "</table></section>"
    }
}

import HTTP1
import Histogram
import Profile
import Reporting

/// The summary's flow part: a table of a scenario's steps, the messages pushed outside any expect, and the
/// flow counters. Step names and types come from the profile or from the server (Socket.IO event names), so
/// every one is shown through `TerminalText.printable` and cut to a width that keeps 30 steps readable.
extension RunSummary {
    /// Longest step name or type shown before it is cut with an ellipsis.
    static let flowNameWidth = 24
    /// Pushed types listed before the rest are counted as "N more".
    static let pushedTypesShown = 12

    static func flowLines(_ metrics: MetricSet, order: [String]) -> [String] {
        func name(_ text: String) -> String { TerminalText.printable(text, limit: flowNameWidth) }
        var lines: [String] = []
        let steps = metrics.flowSteps(order: order)
        if !steps.isEmpty {
            var rows: [[String]] = [["step", "count", "errors", "p50", "p90", "p99", "max"]]
            func figures(_ histogram: Histogram?) -> [String] {
                guard let histogram, histogram.totalCount > 0 else { return ["-", "-", "-", "-"] }
                return [50.0, 90, 99].map { formatMicroseconds(Double(histogram.value(atPercentile: $0))) }
                    + [formatMicroseconds(Double(histogram.maximum))]
            }
            for step in steps {
                rows.append([name(step.name), grouped(saturated(step.count)), grouped(saturated(step.errors))]
                    + figures(step.latency))
                if let first = step.firstResult, first.totalCount > 0 {
                    rows.append(["  first result", grouped(saturated(first.totalCount)), ""] + figures(first))
                }
            }
            let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
            lines.append("  flow steps")
            for row in rows {
                let cells = row.enumerated().map { column, cell in
                    column == 0 ? cell + String(repeating: " ", count: widths[0] - cell.count) : cell.leftPadded(to: widths[column], with: " ")
                }
                lines.append(("    " + cells.joined(separator: "  ")).trimmingTrailingSpaces())
            }
        }
        let pushed = metrics.flowPushed
        if !pushed.isEmpty {
            var text = "  pushed        " + pushed.prefix(pushedTypesShown).map { "\(name($0.type)) \(grouped(saturated($0.count)))" }
                .joined(separator: ", ")
            if pushed.count > pushedTypesShown { text += ", \(pushed.count - pushedTypesShown) more types" }
            lines.append(text)
        }
        let counters = metrics.flowCounters
        if !counters.isEmpty {
            lines.append("  flow          " + counters.map { entry in
                let label = String(entry.name.dropFirst(MetricSet.flowPrefix.count).map { $0 == "_" ? " " : $0 })
                return "\(TerminalText.printable(label, limit: 40)) \(grouped(saturated(entry.count)))"
            }.joined(separator: ", "))
        }
        return lines
    }
}

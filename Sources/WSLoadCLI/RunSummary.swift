import HTTP1
import LoadEngine
import Profile
import Reporting

/// The human summary printed after a run (the report holds everything; this is what a person reads).
enum RunSummary {
    static func text(_ result: RunResult, colors: Bool) -> String {
        func paint(_ text: String, _ code: String) -> String { colors ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
        // Every string below that a report file supplies is shown through this: the summary goes to the terminal
        // with wsload's own colours, so it cannot be escaped as a whole.
        func shown(_ text: String) -> String { TerminalText.printable(text, limit: 200) }
        var lines: [String] = []
        var status = "completed"
        if let signal = result.interruptedBy { status = "interrupted by \(shown(signal))" }
        if let threshold = result.abortedBy { status = "aborted: \(shown(threshold)) failed" }
        if let journal = result.recoveredFrom {
            status = "INCOMPLETE (recovered from the run journal \(shown(journal)): the \(result.intervals.count) intervals "
                + "closed before the run died)"
        }
        lines.append("wsload run \(shown(result.profile.name)): \(status) after \(formatDuration(result.elapsed)) "
            + "(seed \(result.seed), \(result.loops) loops)")
        for scenario in result.scenarios {
            if let transfer = scenario.scenario.transfer {
                lines.append("")
                lines.append("scenario \(shown(scenario.scenario.name)) (\(scenario.scenario.kind.rawValue), \(scenario.scenario.websocket.connections) at once"
                    + (transfer.segments > 1 ? ", \(transfer.segments) segments" : "") + ")")
                lines += transferLines(scenario.metrics, seconds: min(result.elapsed, result.profile.duration).seconds)
                continue
            }
            let websocket = scenario.scenario.websocket
            var model = ""
            if websocket.pattern == .echo || websocket.pattern == .typed { model = ", \(websocket.schedule.modelName) model" }
            lines.append("")
            lines.append("scenario \(shown(scenario.scenario.name)) (\(websocket.pattern.rawValue)\(model), \(websocket.connections) connections)")
            lines += metricLines(scenario.metrics, seconds: min(result.elapsed, result.profile.duration).seconds)
            lines += flowLines(scenario.metrics, order: websocket.flow?.stepNames ?? [])
        }
        lines.append("")
        if result.total.errors.isEmpty {
            lines.append("errors: none")
        } else {
            lines.append("errors: " + result.total.errors.sorted { $0.key < $1.key }.map { "\(shown($0.key)) \(grouped(saturated($0.value)))" }
                .joined(separator: ", "))
        }
        if let storm = result.reconnectStorm {
            lines.append("reconnect storm: at most \(grouped(saturated(storm.peakReconnectsPer100ms))) reconnects in 100 ms, against "
                + "\(grouped(saturated(storm.peakDropsPer100ms))) drops in 100 ms (the bound without jitter)")
        }
        if !result.chaos.isEmpty {
            lines.append("chaos: " + result.chaos.map { "\(shown($0.action)) at \(formatDuration($0.firedAt)) (\(grouped($0.affected)) connections)" }
                .joined(separator: "; "))
        }
        if result.unfinishedConnections > 0 {
            lines.append("\(result.unfinishedConnections) connections did not close within gracefulStop and were cancelled")
        }
        let checks = result.invariants.checked.values.reduce(0, saturatingSum)
        if result.invariantsHeld {
            lines.append("invariants: held (\(grouped(saturated(checks))) checks)")
        } else {
            lines.append(paint("invariants: \(grouped(saturated(result.invariants.violationCount))) violations", "31")
                + " in \(grouped(saturated(checks))) checks")
            for name in result.invariants.violations.keys.sorted() where result.invariants.violations[name]! > 0 {
                lines.append("  ✗ \(shown(name)): \(grouped(saturated(result.invariants.violations[name]!)))")
                for example in result.invariants.examples[name]?.prefix(2) ?? [] {
                    lines.append("      actor \(example.actor) (\(shown(example.scenario))): \(shown(example.detail))")
                    for event in example.history.suffix(4) { lines.append("        " + shown(event)) }
                }
            }
        }
        if !result.thresholds.isEmpty {
            lines.append("thresholds:")
            for outcome in result.thresholds {
                let mark = outcome.passed ? paint("✓", "32") : paint("✗", "31")
                lines.append("  \(mark) \(shown(outcome.threshold.expression))  (actual \(FigureText.actual(outcome)))")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func metricLines(_ metrics: MetricSet, seconds: Double) -> [String] {
        var lines: [String] = []
        let opened = metrics.counter(.connectionsOpened)
        let codes = metrics.disconnects.sorted { $0.key < $1.key }.map { "\($0.key): \(grouped(saturated($0.value)))" }
        lines.append("  connections   opened \(grouped(saturated(opened))), reconnects \(grouped(saturated(metrics.counter(.reconnects)))), "
            + "disconnects \(grouped(saturated(metrics.disconnectCount)))" + (codes.isEmpty ? "" : " (" + codes.joined(separator: ", ") + ")"))
        let sent = metrics.counter(.messagesSent)
        let received = metrics.counter(.messagesReceived)
        let rate = seconds > 0 ? saturated((Double(received) / seconds).rounded()) : 0
        var messages = "  messages      sent \(grouped(saturated(sent))), received \(grouped(saturated(received))) (\(grouped(rate))/s)"
        if let lost = metrics[counter: .messagesLost] { messages += ", lost \(grouped(saturated(lost)))" }
        if let dropped = metrics[counter: .messagesDropped] { messages += ", dropped \(grouped(saturated(dropped)))" }
        if let missed = metrics[counter: .messagesMissed] { messages += ", missed \(grouped(saturated(missed)))" }
        if let scheduled = metrics[counter: .messagesScheduled], scheduled > 0 {
            messages += ", \(String(format1: Double(received) / Double(scheduled) * 100))% of schedule delivered"
        }
        lines.append(messages)
        for metric in MetricCatalog.latencies {
            guard let histogram = metrics[histogram: metric], histogram.totalCount > 0 else { continue }
            let figures = [("p50", 50.0), ("p90", 90), ("p99", 99), ("p99.9", 99.9)].map {
                "\($0.0) \(formatMicroseconds(Double(histogram.value(atPercentile: $0.1))))"
            }
            lines.append("  " + metric.name.padding(toWidth: 22) + figures.joined(separator: "  ")
                + "  max \(formatMicroseconds(Double(histogram.maximum)))  (n=\(grouped(saturated(histogram.totalCount))))")
        }
        return lines
    }

    static func transferLines(_ metrics: MetricSet, seconds: Double) -> [String] {
        let completed = metrics.counter(.transfersCompleted)
        let bytes = Int64(clamping: saturatingSum(metrics.counter(.transferBytesReceived), metrics.counter(.transferBytesSent)))
        let perSecond = seconds > 0 ? Double(completed) / seconds : 0
        var transfers = "  transfers     started \(grouped(saturated(metrics.counter(.transfersStarted)))), "
            + "completed \(grouped(saturated(completed))) (\(String(format1: perSecond))/s), failed \(grouped(saturated(metrics.counter(.transfersFailed))))"
        let repeats: [(Metric, String)] = [(.transferRetries, "retries"), (.transferResumes, "resumes"), (.transferRestarts, "restarts")]
        for (metric, label) in repeats {
            if let count = metrics[counter: metric], count > 0 { transfers += ", \(label) \(grouped(saturated(count)))" }
        }
        var lines = [transfers]
        let statuses = metrics.counters.keys.compactMap { name in MetricFamily.httpStatus.tag(of: name).map { (name, $0) } }
            .sorted { $0.0 < $1.0 }.map { "\(TerminalText.printable(String($0.1), limit: 80)): \(grouped(saturated(metrics.counters[$0.0]!)))" }
        lines.append("  bytes         \(formatBytes(bytes)) (\(formatBytes(saturatedInt64(seconds > 0 ? Double(bytes) / seconds : 0)))/s)"
            + (statuses.isEmpty ? "" : ", statuses " + statuses.joined(separator: ", ")))
        for metric in [Metric.timeToFirstByte, .transferDuration] {
            guard let histogram = metrics[histogram: metric], histogram.totalCount > 0 else { continue }
            let figures = [("p50", 50.0), ("p90", 90), ("p99", 99)].map {
                "\($0.0) \(formatMicroseconds(Double(histogram.value(atPercentile: $0.1))))"
            }
            lines.append("  " + metric.name.padding(toWidth: 22) + figures.joined(separator: "  ")
                + "  max \(formatMicroseconds(Double(histogram.maximum)))  (n=\(grouped(saturated(histogram.totalCount))))")
        }
        if let histogram = metrics[histogram: .throughput], histogram.totalCount > 0 {
            let figures = [("p50", 50.0), ("p10", 10), ("p1", 1)].map {
                "\($0.0) \(formatBytes(Int64(clamping: histogram.value(atPercentile: $0.1)).multipliedSaturated(by: 1024)))/s"
            }
            lines.append("  " + Metric.throughput.name.padding(toWidth: 22) + figures.joined(separator: "  ")
                + "  (per transfer; p10 is the slowest tenth)")
        }
        return lines
    }
}

extension Int64 {
    /// `self * factor`, or `Int64.max`/`.min` where that overflows (display of figures read from files).
    func multipliedSaturated(by factor: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: factor)
        return overflow ? ((self < 0) != (factor < 0) ? .min : .max) : product
    }
}

import Foundation
import LoadEngine
import Profile
import Reporting
import Runtime

/// Live progress on standard error: on a terminal one block redrawn in place; otherwise a plain line
/// every 5 seconds; nothing when quiet. Colour only on a terminal and never with `NO_COLOR` set.
final class ProgressDisplay: Sendable {
    private let output: CommandOutput
    private let isTerminal: Bool
    private let isQuiet: Bool
    private struct State {
        var linesDrawn = 0
        var lastPlainLine: Duration?
    }
    private let state = Lock(State())

    init(output: CommandOutput, isTerminal: Bool, isQuiet: Bool) {
        self.output = output
        self.isTerminal = isTerminal
        self.isQuiet = isQuiet
    }

    func update(_ progress: RunProgress) {
        guard !isQuiet else { return }
        let lines = Self.lines(progress)
        state.withLock { state in
            if isTerminal {
                var text = state.linesDrawn > 0 ? "\u{1B}[\(state.linesDrawn)A" : ""
                for line in lines { text += "\r\u{1B}[2K" + line + "\n" }
                state.linesDrawn = lines.count
                output.writeError(text)
            } else if progress.isStopping == false,
                state.lastPlainLine.map({ progress.elapsed - $0 >= .seconds(5) }) ?? true
            {
                state.lastPlainLine = progress.elapsed
                output.writeError(lines.joined(separator: " | ") + "\n")
            }
        }
    }

    /// Leaves the last block on screen and moves below it.
    func finish() {
        state.withLock { $0.linesDrawn = 0 }
    }

    /// A flow run has no message round trip: its figure is the named step with the highest p99 in `metrics` (the
    /// last interval while running), e.g. `said p99 12ms` — the step a slow server hurts first, the one thresholds
    /// are usually written on. Nil when no step succeeded in `metrics`. Ties go to the first name in order.
    static func slowestStep(_ metrics: MetricSet) -> String? {
        var slowest: (name: String, p99: UInt64)?
        for step in metrics.flowSteps() {
            guard let latency = step.latency, latency.totalCount > 0 else { continue }
            let p99 = latency.value(atPercentile: 99)
            if slowest.map({ p99 > $0.p99 }) ?? true { slowest = (step.name, p99) }
        }
        return slowest.map { "\($0.name) p99 \(formatMicroseconds(Double($0.p99)))" }
    }

    static func lines(_ progress: RunProgress) -> [String] {
        let remaining = max(.zero, progress.duration - progress.elapsed)
        let rate = progress.recentSeconds > 0 ? Double(progress.recent.counter(.messagesReceived)) / progress.recentSeconds : 0
        var rtt = "rtt -"
        if let histogram = progress.total[histogram: .messageRoundTrip], histogram.totalCount > 0 {
            rtt = "rtt p50 \(formatMicroseconds(Double(histogram.value(atPercentile: 50)))) "
                + "p99 \(formatMicroseconds(Double(histogram.value(atPercentile: 99))))"
        } else if let step = slowestStep(progress.isStopping ? progress.total : progress.recent)
                    ?? slowestStep(progress.total) {
            rtt = step
        }
        var errors = "errors \(grouped(Int(progress.total.errorCount)))   reconnects \(grouped(Int(progress.total.counter(.reconnects))))"
        if let started = progress.total[counter: .transfersStarted] {
            let bytes = progress.recent.counter(.transferBytesReceived) + progress.recent.counter(.transferBytesSent)
            let rate = progress.recentSeconds > 0 ? Double(bytes) / progress.recentSeconds : 0
            errors += "   transfers \(grouped(Int(progress.total.counter(.transfersCompleted)))) done / \(grouped(Int(started))) started, "
                + "\(formatBytes(Int64(rate)))/s"
        }
        if progress.isStopping {
            return [
                "stopping: \(grouped(progress.liveConnections)) connections finishing and closing, "
                    + "\(formatDuration(max(.zero, progress.stopTimeLeft))) of gracefulStop left",
                "\(rtt) (whole run)", errors,
            ]
        }
        return [
            "\(formatDuration(progress.elapsed)) elapsed, \(formatDuration(remaining)) left",
            "connections \(grouped(progress.liveConnections)) up / \(grouped(progress.targetConnections)) target   "
                + "\(grouped(Int(rate.rounded()))) msgs/s   \(rtt)",
            errors,
        ]
    }
}

import JSON
import Profile
import Reporting

/// The dashboard's `hello` (first to every client) and `summary` (last, and `/summary.json` after the run) events, as
/// one line of JSON each (docs/REPORT.md, "Live dashboard frames"). Pure. Like frames, they carry names, codes and
/// numbers only: the profile's name and scenario and step names, never its headers, tokens or feeder values.
package enum DashboardSummary {
    /// What a page needs before the first frame: whose run it is, how long it is planned to take, its scenarios, and
    /// the latencies worth showing first (`ws.message_rtt` where a scenario records it, then the flows' steps in
    /// the profile's order).
    package static func hello(profile: Profile, runID: String, shard: Shard?, backlog: Int) -> String {
        var latencies: [String] = []
        func note(_ name: String) { if !latencies.contains(name) { latencies.append(name) } }
        for scenario in profile.scenarios where scenario.kind == .websocket {
            let pattern = scenario.websocket.pattern
            if pattern == .echo || pattern == .typed { note(Metric.messageRoundTrip.name) }
        }
        for scenario in profile.scenarios {
            for step in scenario.websocket.flow?.stepNames ?? [] { note(MetricFamily.flowStep.name(step)) }
        }
        let hello: JSONObject = [
            "profile": .string(profile.name), "runId": .string(runID), "shard": JSONValue(shard?.description),
            "duration": .number(DashboardFrames.milliseconds(profile.duration.seconds)),
            "gracefulStop": .number(DashboardFrames.milliseconds(profile.gracefulStop.seconds)),
            "scenarios": .array(profile.scenarios.map { .string($0.name) }),
            "latencies": .array(latencies.prefix(DashboardFrames.maximumLatencies).map { .string($0) }),
            "backlog": JSONValue(backlog),
        ]
        return JSONValue.object(hello).formatted(pretty: false)
    }

    /// The run's outcome: the verdict and exit code, every threshold with its actual value and limit, every invariant
    /// with its checks and violations, and the run's totals (exactly the report's).
    /// - Parameter exitCode: the exit code `wsload run` ends with (it decides the verdict when the figures held but
    ///   the command failed, e.g. the report could not be written).
    package static func json(_ result: RunResult, exitCode: Int32) -> String {
        var summary: JSONObject = [
            "verdict": .string(verdict(result, exitCode: exitCode)), "exitCode": JSONValue(exitCode),
            "interruptedBy": JSONValue(result.interruptedBy), "abortedBy": JSONValue(result.abortedBy),
            "elapsed": .number(DashboardFrames.milliseconds(result.elapsed.seconds)),
            "duration": .number(DashboardFrames.milliseconds(result.profile.duration.seconds)),
        ]
        summary["thresholds"] = .array(result.thresholds.map(threshold))
        summary["invariantsHeld"] = .bool(result.invariantsHeld)
        summary["invariants"] = DashboardFrames.invariants(result.invariants)
        let total = result.total
        summary["totals"] = [
            "opened": JSONValue(total.counter(.connectionsOpened)), "sent": JSONValue(total.counter(.messagesSent)),
            "received": JSONValue(total.counter(.messagesReceived)), "reconnects": JSONValue(total.counter(.reconnects)),
            "errors": DashboardFrames.codes(total.errors),
            "disconnects": DashboardFrames.codes(Dictionary(uniqueKeysWithValues: total.disconnects.map { (String($0.key), $0.value) })),
            "latency": DashboardFrames.latencies(total),
        ]
        return JSONValue.object(summary).formatted(pretty: false)
    }

    /// `passed`, `thresholds_failed`, `invariants_violated`, `interrupted`, or `failed` (no connection ever opened, or
    /// the command failed after the run): the order `wsload run` decides its exit code in.
    static func verdict(_ result: RunResult, exitCode: Int32) -> String {
        if result.interruptedBy != nil { return "interrupted" }
        let attempts = result.total.counter(.connectAttempts)
        if attempts > 0 && result.total.counter(.connectionsOpened) == 0 { return "failed" }
        if !result.invariantsHeld { return "invariants_violated" }
        if !result.thresholdsPassed { return "thresholds_failed" }
        return exitCode == 0 ? "passed" : "failed"
    }

    /// One threshold: its text, the actual value and the limit in `unit` (`us`, `KiB/s`, `count`, `per_second` or
    /// `ratio`), whether it passed, why there is no actual value when there is none, and both as the run summary
    /// and JUnit write them (``FigureText``).
    static func threshold(_ outcome: RunResult.ThresholdResult) -> JSONValue {
        let threshold = outcome.threshold
        let unit: String
        switch (threshold.metric.kind, threshold.statistic) {
        case (_, .count): unit = "count"
        case (_, .perSecond): unit = "per_second"
        case (_, .rate): unit = "ratio"
        case (.latency, _): unit = Metric.Unit.microseconds.rawValue
        case (.throughput, _): unit = Metric.Unit.kibibytesPerSecond.rawValue
        default: unit = "count"
        }
        return [
            "expression": .string(threshold.expression), "comparison": .string(threshold.comparison.rawValue),
            "limit": .number(threshold.limit), "actual": outcome.actual.map { .number($0.isFinite ? $0 : 0) } ?? .null,
            "unit": .string(unit), "passed": .bool(outcome.passed), "note": JSONValue(outcome.note),
            "actualText": .string(FigureText.actual(outcome)), "limitText": .string(FigureText.limit(of: threshold)),
        ]
    }
}

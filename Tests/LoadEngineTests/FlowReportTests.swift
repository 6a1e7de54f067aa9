import Crypto
import Foundation
import Histogram
import JSON
import LoadEngine
import Profile
import Reporting
import Testing
import WSLoadCLI

/// A histogram of `count` samples of `value` µs each.
private func samples(_ value: UInt64, count: Int) -> Histogram {
    var histogram = Histogram()
    for _ in 0..<count { histogram.record(value) }
    return histogram
}

/// A flow scenario's metrics: step `join` (10 successes at 2 ms, 2 failures), subscription `count` (5 at 500 µs, first
/// results 3 at 100 µs), pushed `said` 7 and `other` 1, and two flow counters.
private func flowMetrics() -> MetricSet {
    var metrics = MetricSet()
    metrics.histograms["flow.step.join"] = samples(2000, count: 10)
    metrics.counters["flow.step_errors.join"] = 2
    metrics.histograms["flow.step.count"] = samples(500, count: 5)
    metrics.histograms["flow.first_result.count"] = samples(100, count: 3)
    metrics.counters["flow.pushed.said"] = 7
    metrics.counters["flow.pushed.other"] = 1
    metrics.counters["flow.completed"] = 3
    metrics.counters["flow.iterations"] = 12
    return metrics
}

private func threshold(_ text: String) throws -> Threshold {
    switch Threshold.parse(text) {
    case .success(let threshold): return threshold
    case .failure(let error): throw ThresholdFailure(text: text, error: error)
    }
}

private struct ThresholdFailure: Error { var text: String; var error: ThresholdSyntaxError }

private func parseError(_ text: String) -> ThresholdSyntaxError? {
    if case .failure(let error) = Threshold.parse(text) { return error }
    return nil
}

private func actual(_ text: String, _ metrics: MetricSet, scenarios: [(String, MetricSet)] = []) throws -> Double? {
    ThresholdEvaluator.actual(try threshold(text), total: metrics, scenarios: scenarios, seconds: 10)
}

@Suite("Flow steps in thresholds, the summary, the HTML report and compare", .serialized, .timeLimit(.minutes(3)))
struct FlowReportTests {
    @Test("every threshold form on flow families parses to its member, tag and scenario")
    func thresholdForms() throws {
        let step = try threshold("flow.step{step=join} p99 < 50ms")
        #expect(step.metric.name == "flow.step.join" && step.metric.kind == .latency && step.family == .flowStep)
        #expect(step.tag == "join" && step.step == "join" && step.scenario == nil && step.limit == 50_000)
        let first = try threshold("flow.first_result{step=count} p50 < 20ms")
        #expect(first.metric.name == "flow.first_result.count" && first.family == .flowFirstResult && first.limit == 20_000)
        let pushed = try threshold("flow.pushed{type=said} count > 0")
        #expect(pushed.metric.name == "flow.pushed.said" && pushed.metric.kind == .counter && pushed.step == nil)
        #expect(pushed.tag == "said" && pushed.statistic == .count && pushed.comparison == .greater)
        let rate = try threshold("errors{step=join} rate < 1%")
        #expect(rate.metric == .errors && rate.family == .flowStepErrors && rate.step == "join" && rate.limit == 0.01)
        let count = try threshold("errors{step=join} count < 5")
        #expect(count.statistic == .count && count.step == "join")
        for text in ["flow.step{scenario=chat,step=join} p99 < 50ms", "flow.step{step=join,scenario=chat} p99 < 50ms"] {
            let both = try threshold(text)
            #expect(both.scenario == "chat" && both.step == "join" && both.metric.name == "flow.step.join", "\(text)")
        }
        let scenarioOnly = try threshold("ws.connect{scenario=chat} p95 < 200ms")
        #expect(scenarioOnly.scenario == "chat" && scenarioOnly.family == nil && scenarioOnly.tag == nil)
        #expect(try threshold("errors{scenario=chat,step=join} rate < 1%").scenario == "chat")
    }

    @Test("bad flow filters are errors with a message and a hint")
    func thresholdErrors() throws {
        let cases: [(String, String, String)] = [
            ("ws.message_rtt{step=join} p99 < 50ms", "ws.message_rtt has no step tag", "tag filters apply to flow.step{step=NAME}"),
            ("flow.step p99 < 50ms", "flow.step needs a step filter", "write flow.step{step=NAME}"),
            ("flow.pushed{step=said} count > 0", "flow.pushed is tagged by type, not step", "write flow.pushed{type=NAME}"),
            ("flow.step_errors{step=join} count < 5", "flow.step_errors cannot be a threshold: thresholds name it as errors{step=NAME}", "metrics: "),
            ("flow.step.join p99 < 50ms", "flow.step.join is a member of flow.step.<step>", "write flow.step{step=join}"),
            ("flow.step_errors.join count < 5", "flow.step_errors.join is a member of flow.step_errors.<step>", "write errors{step=join}"),
            ("flow.step{step=a b} p99 < 50ms", "is not a threshold", "write METRIC"),
            ("flow.step{step=<x>} p99 < 50ms", "\"<x>\" is not a step name", "step names are 1 to 64"),
            ("flow.step{step=join,step=x} p99 < 50ms", "has two tag filters", "comma-separated"),
            ("flow.step{scenario=a,scenario=b,step=j} p99 < 50ms", "names scenario twice", "comma-separated"),
            ("flow.step{step=} p99 < 50ms", "\"step=\" in \"{step=}\" is not KEY=VALUE", "write {scenario=NAME}"),
            ("flow.step{} p99 < 50ms", "\"{}\" is not a metric filter", "write {scenario=NAME}"),
            ("flow.step{step=join} rate < 1%", "flow.step has no statistic \"rate\"", "use p50"),
            ("flow.pushed{type=said} p99 < 5ms", "flow.pushed has no statistic \"p99\"", "use count"),
            ("http.status{code=200} count > 0", "http.status cannot be a threshold", "metrics: "),
            ("ws.connect{step=join,scenario=s} p99 < 1s", "ws.connect has no step tag", "errors{step=NAME}"),
        ]
        for (text, message, hint) in cases {
            let error = try #require(parseError(text), "\(text) parsed")
            #expect(error.message.contains(message), "\(text): \(error.message)")
            #expect(error.hint.contains(hint), "\(text): \(error.hint)")
        }
        // A step name at the limit parses; one byte past it does not.
        #expect(parseError("flow.step{step=\(String(repeating: "a", count: 64))} p99 < 1s") == nil)
        #expect(parseError("flow.step{step=\(String(repeating: "a", count: 65))} p99 < 1s") != nil)
    }

    @Test("a threshold naming a step no flow scenario has is a profile problem at its path")
    func unknownStepIsAProfileProblem() throws {
        let text = """
            {"version": 1, "name": "p", "target": "embedded", "duration": "10s",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 1}],
             "thresholds": ["ws.connect p99 < 1s", {"expression": "flow.step{step=join} p99 < 50ms"}]}
            """
        do {
            _ = try ProfileDecoder.decode(Array(text.utf8))
            Issue.record("the profile decoded")
        } catch {
            #expect(error.problems.map(\.description) == [
                "thresholds[1]: no step of any flow scenario is named \"join\" (only flow scenarios have steps)"
            ])
        }
        // Against flow scenarios: the step must be one of the named steps, of the filtered scenario when there is one.
        var profile = try ProfileDecoder.decode(Array(SyntheticReport.profileText.utf8))
        var chat = FlowScenario()
        chat.stepNames = ["join", "say"]
        profile.scenarios[0].websocket.flow = chat
        var other = profile.scenarios[0]
        other.name = "other"
        other.websocket.flow = FlowScenario()
        let scenarios = [profile.scenarios[0], other]
        #expect(try threshold("flow.step{step=join} p99 < 50ms").unknownStep(in: scenarios) == nil)
        #expect(try threshold("errors{scenario=s,step=say} rate < 1%").unknownStep(in: scenarios) == nil)
        #expect(try threshold("ws.connect p99 < 1s").unknownStep(in: scenarios) == nil)
        #expect(try threshold("flow.pushed{type=said} count > 0").unknownStep(in: scenarios) == nil)
        let misspelt = try #require(try threshold("flow.step{step=jion} p99 < 50ms").unknownStep(in: scenarios))
        #expect(misspelt.message == "no step of any flow scenario is named \"jion\"" && misspelt.hint == "did you mean \"join\"?")
        let elsewhere = try #require(try threshold("errors{scenario=other,step=join} count < 5").unknownStep(in: scenarios))
        #expect(elsewhere.message == "no step of scenario \"other\" is named \"join\"")
    }

    @Test("flow thresholds evaluate on metric sets: the step error rate per execution, never dividing by zero")
    func evaluation() throws {
        let metrics = flowMetrics()
        #expect(try actual("flow.step{step=join} p99 < 50ms", metrics).map { abs($0 - 2000) <= 2 } == true)
        #expect(try actual("flow.step{step=join} count > 0", metrics) == 10)
        #expect(try actual("flow.first_result{step=count} p50 < 20ms", metrics).map { abs($0 - 100) <= 1 } == true)
        #expect(try actual("flow.pushed{type=said} count > 0", metrics) == 7)
        #expect(try actual("flow.pushed{type=said} per_second > 0", metrics) == 0.7)
        // 2 failures, 10 successes: 2 / 12, not 2 / 10 (successes alone) nor 2 / operations.
        #expect(try actual("errors{step=join} rate < 1%", metrics) == 2.0 / 12.0)
        #expect(try actual("errors{step=join} count < 5", metrics) == 2)
        #expect(try actual("errors{step=join} per_second < 1", metrics) == 0.2)
        // A step that never failed: rate 0; a step with no data at all: 0 executions, rate 0, no division by zero.
        #expect(try actual("errors{step=count} rate < 1%", metrics) == 0)
        #expect(try actual("errors{step=absent} rate < 1%", metrics) == 0)
        #expect(try actual("errors{step=absent} count < 1", metrics) == 0)
        // Only failures: rate 1. Saturated counts (a crafted report) give a rate in [0, 1], never a trap.
        var failing = MetricSet()
        failing.counters["flow.step_errors.join"] = 4
        #expect(try actual("errors{step=join} rate < 1%", failing) == 1)
        failing.counters["flow.step_errors.join"] = .max
        #expect(try actual("errors{step=join} rate < 1%", failing) == 1)
        failing.histograms["flow.step.join"] = samples(10, count: 3)
        let saturatedRate = try #require(try actual("errors{step=join} rate < 1%", failing))
        #expect(saturatedRate >= 0 && saturatedRate <= 1)
        // No samples of the step: no value, and the threshold passes vacuously like any latency without samples.
        let missing = ThresholdEvaluator.evaluate(
            [try threshold("flow.step{step=absent} p99 < 50ms"), try threshold("ws.message_rtt p99 < 50ms")],
            total: metrics, scenarios: [], seconds: 10)
        #expect(missing.map(\.actual) == [nil, nil] && missing.map(\.passed) == [true, true])
        // {scenario=X} picks that scenario's set.
        var quiet = MetricSet()
        quiet.histograms["flow.step.join"] = samples(90_000, count: 4)
        let scenarios = [("chat", metrics), ("slow", quiet)]
        #expect(try actual("flow.step{scenario=slow,step=join} count > 0", metrics, scenarios: scenarios) == 4)
        #expect(try actual("errors{step=join,scenario=slow} rate < 1%", metrics, scenarios: scenarios) == 0)
        let outcomes = ThresholdEvaluator.evaluate(
            [try threshold("flow.step{step=join} p99 < 50ms"), try threshold("errors{step=join} rate < 1%"),
             try threshold("flow.step{step=join,scenario=slow} p99 < 50ms"), try threshold("flow.pushed{type=said} count > 0")],
            total: metrics, scenarios: scenarios, seconds: 10)
        #expect(outcomes.map(\.passed) == [true, false, false, true])
        // Abort-on-fail at an interval: the first failing flow threshold past its delay.
        var abort = try threshold("errors{step=join} rate < 1%")
        abort.abortOnFail = true
        abort.abortDelay = .seconds(5)
        #expect(ThresholdEvaluator.firstAbort([abort], total: metrics, scenarios: [], elapsed: .seconds(4)) == nil)
        #expect(ThresholdEvaluator.firstAbort([abort], total: metrics, scenarios: [], elapsed: .seconds(5)) == abort.expression)
        #expect(ThresholdEvaluator.firstAbort([abort], total: MetricSet(), scenarios: [], elapsed: .seconds(5)) == nil)
    }

    @Test("a step latency threshold fails when every execution of the step failed; it passes vacuously only when it never ran")
    func allExecutionsFailed() throws {
        var failing = MetricSet()
        failing.counters["flow.step_errors.join"] = 3
        failing.counters["flow.step_errors.count"] = 2
        let thresholds = [try threshold("flow.step{step=join} p99 < 50ms"), try threshold("flow.step{step=join} mean < 50ms"),
                          try threshold("flow.first_result{step=count} p50 < 20ms"), try threshold("flow.step{step=absent} p99 < 50ms")]
        let outcomes = ThresholdEvaluator.evaluate(thresholds, total: failing, scenarios: [], seconds: 10)
        #expect(outcomes.map(\.passed) == [false, false, false, true])
        #expect(outcomes.map(\.actual) == [nil, nil, nil, nil])
        #expect(outcomes.map(\.note) == ["no successful execution (3 failed)", "no successful execution (3 failed)",
                                         "no successful execution (2 failed)", nil])
        // {scenario=X}: that scenario's failures only.
        let scenarios = [("chat", failing), ("quiet", MetricSet())]
        let filtered = ThresholdEvaluator.evaluate(
            [try threshold("flow.step{scenario=quiet,step=join} p99 < 50ms"), try threshold("flow.step{scenario=chat,step=join} p99 < 50ms")],
            total: failing, scenarios: scenarios, seconds: 10)
        #expect(filtered.map(\.passed) == [true, false])
        // One success is measured as usual (the failures are errors{step=join}'s business).
        failing.histograms["flow.step.join"] = samples(2000, count: 1)
        #expect(ThresholdEvaluator.evaluate([thresholds[0]], total: failing, scenarios: [], seconds: 10).map(\.passed) == [true])
        // Abort-on-fail sees it too.
        var abort = try threshold("flow.step{step=count} p99 < 50ms")
        abort.abortOnFail = true
        #expect(ThresholdEvaluator.firstAbort([abort], total: failing, scenarios: [], elapsed: .seconds(1)) == abort.expression)
        #expect(ThresholdEvaluator.firstAbort([abort], total: MetricSet(), scenarios: [], elapsed: .seconds(1)) == nil)
    }
}

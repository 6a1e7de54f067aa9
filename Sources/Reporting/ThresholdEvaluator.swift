import Profile

/// Evaluates thresholds against measured metrics.
package enum ThresholdEvaluator {
    /// The statistic a threshold asks about; nil when a latency metric has no samples.
    package static func actual(_ threshold: Threshold, total: MetricSet, scenarios: [(String, MetricSet)], seconds: Double) -> Double? {
        let metrics = threshold.scenario.flatMap { name in scenarios.first { $0.0 == name }?.1 } ?? total
        switch threshold.metric.kind {
        case .latency, .throughput:
            guard let histogram = metrics[histogram: threshold.metric], histogram.totalCount > 0 else {
                return threshold.statistic == .count ? 0 : nil
            }
            switch threshold.statistic {
            case .percentile(let percentile): return Double(histogram.value(atPercentile: percentile))
            case .mean: return histogram.mean
            case .minimum: return Double(histogram.minimum)
            case .maximum: return Double(histogram.maximum)
            case .standardDeviation: return histogram.standardDeviation
            case .count: return Double(histogram.totalCount)
            case .perSecond, .rate: return nil
            }
        case .errors where threshold.family == .flowStepErrors:
            return stepErrors(threshold, metrics, seconds: seconds)
        case .counter, .closeCodes, .errors:
            let count = metrics.count(of: threshold.metric)
            switch threshold.statistic {
            case .perSecond: return seconds > 0 ? Double(count) / seconds : 0
            case .rate:
                let operations = RunReport.operations(metrics)
                return operations == 0 ? 0 : Double(count) / Double(operations)
            default: return Double(count)
            }
        }
    }

    /// `errors{step=NAME}`: the step's failures (`flow.step_errors.NAME`); their rate is per execution of the
    /// step, failures / (successes in `flow.step.NAME` + failures), 0 when it never ran.
    private static func stepErrors(_ threshold: Threshold, _ metrics: MetricSet, seconds: Double) -> Double {
        let step = threshold.tag ?? ""
        let failures = metrics.counter(MetricFamily.flowStepErrors.name(step))
        switch threshold.statistic {
        case .perSecond: return seconds > 0 ? Double(failures) / seconds : 0
        case .rate:
            let successes = metrics.histograms[MetricFamily.flowStep.name(step)]?.totalCount ?? 0
            let executions = saturatingSum(successes, failures)
            return executions == 0 ? 0 : Double(failures) / Double(executions)
        default: return Double(failures)
        }
    }

    /// A step's latency threshold (`flow.step{step=X}`, `flow.first_result{step=X}`) with no sample to judge: the
    /// step's failures (`flow.step_errors.X`) when it failed every time it ran, nil when it never ran (or is no
    /// step's). Every execution failing must not pass the threshold vacuously.
    package static func failuresWithoutSuccess(_ threshold: Threshold, total: MetricSet, scenarios: [(String, MetricSet)]) -> UInt64? {
        guard threshold.family == .flowStep || threshold.family == .flowFirstResult, let step = threshold.step else { return nil }
        let metrics = threshold.scenario.flatMap { name in scenarios.first { $0.0 == name }?.1 } ?? total
        let failures = metrics.counter(MetricFamily.flowStepErrors.name(step))
        return failures > 0 ? failures : nil
    }

    package static func evaluate(_ thresholds: [Threshold], total: MetricSet, scenarios: [(String, MetricSet)], seconds: Double)
        -> [RunResult.ThresholdResult]
    {
        thresholds.map { threshold in
            let value = actual(threshold, total: total, scenarios: scenarios, seconds: seconds)
            if value == nil, let failures = failuresWithoutSuccess(threshold, total: total, scenarios: scenarios) {
                return RunResult.ThresholdResult(threshold: threshold, actual: nil, passed: false,
                                                 note: "no successful execution (\(failures) failed)")
            }
            let passed = value.map { threshold.comparison.holds($0, threshold.limit) } ?? true
            return RunResult.ThresholdResult(threshold: threshold, actual: value, passed: passed)
        }
    }

    /// The first abort-on-fail threshold that fails now (past its delay), if any.
    package static func firstAbort(_ thresholds: [Threshold], total: MetricSet, scenarios: [(String, MetricSet)], elapsed: Duration) -> String? {
        for threshold in thresholds where threshold.abortOnFail && elapsed >= threshold.abortDelay {
            if let value = actual(threshold, total: total, scenarios: scenarios, seconds: elapsed.seconds) {
                if !threshold.comparison.holds(value, threshold.limit) { return threshold.expression }
            } else if failuresWithoutSuccess(threshold, total: total, scenarios: scenarios) != nil {
                return threshold.expression
            }
        }
        return nil
    }
}

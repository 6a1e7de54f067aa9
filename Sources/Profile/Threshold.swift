/// A pass/fail criterion on a metric, written `METRIC[{FILTER,...}] STATISTIC OP VALUE`, e.g.
/// `ws.message_rtt p99 < 50ms`, `errors rate < 0.1%`, `ws.connect{scenario=chat} p95 < 200ms`, and for a
/// tagged family `flow.step{step=join} p99 < 50ms`, `flow.pushed{type=said} count > 0`, `errors{step=join} rate < 1%`
/// (filters `scenario=` and the family's tag, in any order).
package struct Threshold: Sendable, Equatable {
    /// What a threshold asks of its metric: a percentile, a summary figure, a count, a rate.
    package enum Statistic: Sendable, Equatable, CustomStringConvertible {
        case percentile(Double)
        case mean, minimum, maximum, standardDeviation, count
        /// Per second of run time.
        case perSecond
        /// Errors per operation (connection attempts plus messages sent), a fraction; for `errors{step=NAME}`, the
        /// step's failures per execution (failures / (successes + failures)).
        case rate

        package var description: String {
            switch self {
            case .percentile(let value): "p" + formatNumber(value)
            case .mean: "mean"
            case .minimum: "min"
            case .maximum: "max"
            case .standardDeviation: "stdev"
            case .count: "count"
            case .perSecond: "per_second"
            case .rate: "rate"
            }
        }
    }

    /// How the actual value must relate to the limit.
    package enum Comparison: String, Sendable, CaseIterable {
        case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="

        package func holds(_ actual: Double, _ limit: Double) -> Bool {
            switch self {
            case .less: actual < limit
            case .lessOrEqual: actual <= limit
            case .greater: actual > limit
            case .greaterOrEqual: actual >= limit
            }
        }
    }

    /// A threshold as the docs and hints show one.
    package static let example = "\(Metric.messageRoundTrip.name) p99 < 50ms"

    /// The expression as written.
    package var expression: String
    /// The metric checked: a catalogue metric, or for a family filter (`flow.step{step=join}`) the member
    /// (`flow.step.join`, with the family's kind and unit). `errors{step=NAME}` keeps ``Metric/errors`` and sets
    /// ``family`` to ``MetricFamily/flowStepErrors``.
    package var metric: Metric
    /// Restricts the metric to one scenario; nil: all scenarios together.
    package var scenario: String?
    /// The family whose member the threshold names, with ``tag`` its tag value; nil for a catalogue metric.
    package var family: MetricFamily?
    /// The family tag's value: a step name or a `flow.pushed` type.
    package var tag: String?
    package var statistic: Statistic
    package var comparison: Comparison
    /// The limit in the metric's unit: microseconds for latencies, a fraction for rates, a plain number
    /// otherwise.
    package var limit: Double
    /// Stop the run as soon as the threshold fails (checked at every interval once `abortDelay` passed).
    package var abortOnFail = false
    package var abortDelay: Duration = .zero

    /// Parses an expression; the error is a message and a hint for the profile's problem list.
    package static func parse(_ text: String) -> Result<Threshold, ThresholdSyntaxError> {
        let words = text.split(whereSeparator: \.isWhitespace).map(String.init)
        guard words.count == 4 else {
            return .failure(ThresholdSyntaxError(
                message: "\"\(text)\" is not a threshold",
                hint: "write METRIC STATISTIC OP VALUE, e.g. \"\(example)\" or \"\(Metric.errors.name) rate < 0.1%\""))
        }
        let filter: Filter
        switch Filter.parse(words[0]) {
        case .failure(let error): return .failure(error)
        case .success(let parsed): filter = parsed
        }
        let name = filter.name
        let scenario = filter.scenario
        let metric: Metric
        var family: MetricFamily?
        switch resolve(name, tag: filter.tag) {
        case .failure(let error): return .failure(error)
        case .success(let resolved): (metric, family) = resolved
        }
        let kind = metric.kind
        guard let statistic = parseStatistic(words[1]) else {
            return .failure(ThresholdSyntaxError(
                message: "\"\(words[1])\" is not a statistic",
                hint: "use " + kind.statistics.joined(separator: ", ")))
        }
        guard kind.allows(statistic) else {
            return .failure(ThresholdSyntaxError(
                message: "\(name) has no statistic \"\(words[1])\"", hint: "use " + kind.statistics.joined(separator: ", ")))
        }
        guard let comparison = Comparison(rawValue: words[2]) else {
            return .failure(ThresholdSyntaxError(message: "\"\(words[2])\" is not a comparison", hint: "use <, <=, > or >="))
        }
        let valueText = words[3]
        let limit: Double
        switch (kind, statistic) {
        case (.latency, .count), (.throughput, .count), (_, .perSecond), (_, .count):
            guard let number = Double(valueText), number.isFinite, number >= 0 else {
                return .failure(ThresholdSyntaxError(message: "\"\(valueText)\" is not a number", hint: "e.g. 1000"))
            }
            limit = number
        case (_, .rate):
            if valueText.hasSuffix("%"), let percent = Double(valueText.dropLast()), percent >= 0, percent <= 100 {
                limit = percent / 100
            } else if let fraction = Double(valueText), fraction >= 0, fraction <= 1 {
                limit = fraction
            } else {
                return .failure(ThresholdSyntaxError(
                    message: "\"\(valueText)\" is not a rate", hint: "write a percentage (0.1%) or a fraction (0.001)"))
            }
        case (.throughput, _):
            let text = valueText.hasSuffix("/s") ? String(valueText.dropLast(2)) : valueText
            guard let bytes = parseByteSize(text), bytes > 0 else {
                return .failure(ThresholdSyntaxError(message: "\"\(valueText)\" is not a rate of bytes", hint: "use 10MiB/s, 512KiB/s"))
            }
            limit = Double(bytes) / 1024
        default:
            guard let duration = parseDuration(valueText) else {
                return .failure(ThresholdSyntaxError(
                    message: "\"\(valueText)\" is not a duration", hint: "use 500us, 50ms, 2s, 5m, 2h"))
            }
            limit = Double(duration.microseconds)
        }
        var threshold = Threshold(
            expression: text, metric: metric, scenario: scenario, statistic: statistic, comparison: comparison,
            limit: limit)
        threshold.family = family
        threshold.tag = filter.tag?.value
        return .success(threshold)
    }

    private static func parseStatistic(_ word: String) -> Statistic? {
        switch word {
        case "mean", "avg": return .mean
        case "min": return .minimum
        case "max": return .maximum
        case "stdev": return .standardDeviation
        case "count": return .count
        case "per_second", "rate/s": return .perSecond
        case "rate": return .rate
        case "med", "median": return .percentile(50)
        default:
            guard word.hasPrefix("p"), let value = Double(word.dropFirst()), value >= 0, value <= 100 else { return nil }
            return .percentile(value)
        }
    }
}

/// Why a threshold expression does not parse.
package struct ThresholdSyntaxError: Error, Sendable, Equatable {
    package var message: String
    package var hint: String
}

extension Metric.Kind {
    /// The statistics a threshold may ask of a metric of this kind, as a hint lists them.
    var statistics: [String] {
        switch self {
        case .latency, .throughput: ["p50", "p90", "p95", "p99", "p99.9 (any pNN)", "mean", "min", "max", "stdev", "count"]
        case .counter, .closeCodes: ["count", "per_second"]
        case .errors: ["count", "per_second", "rate"]
        }
    }

    func allows(_ statistic: Threshold.Statistic) -> Bool {
        switch (self, statistic) {
        case (.latency, .perSecond), (.latency, .rate), (.throughput, .perSecond), (.throughput, .rate): false
        case (.counter, .rate), (.closeCodes, .rate): false
        case (.counter, _), (.closeCodes, _), (.errors, _): [.count, .perSecond, .rate].contains(statistic)
        default: true
        }
    }
}

func formatNumber(_ value: Double) -> String {
    value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
}

/// "did you mean …" for a misspelt name: the closest candidate within a small edit distance.
func suggestion(for word: String, among candidates: [String]) -> String? {
    let best = candidates.map { ($0, editDistance(word.lowercased(), $0.lowercased())) }.min { $0.1 < $1.1 }
    guard let (candidate, distance) = best, distance <= max(2, word.count / 3) else { return nil }
    return "did you mean \"\(candidate)\"?"
}

private func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    guard !a.isEmpty else { return b.count }
    var previous = Array(0...b.count)
    for i in 1...a.count {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in stride(from: 1, through: b.count, by: 1) {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return previous[b.count]
}

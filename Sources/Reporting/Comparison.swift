import Crypto
import Histogram
import Profile

/// One side of a comparison: one run, or several repeated runs of one configuration.
package struct ComparisonSide: Sendable {
    /// One run of a side: its totals, its length and its interval series.
    package struct Run: Sendable {
        package var metrics: MetricSet
        /// The measured duration, for rates.
        package var seconds: Double
        /// The run's interval series, each interval's figures with its histograms sparse: the within-run variation
        /// a single-run comparison tests against (600 intervals of 7 latency histograms would be 790 MB dense).
        package var intervals: [IntervalSample]

        package init(metrics: MetricSet, seconds: Double, intervals: [IntervalSample]) {
            self.metrics = metrics
            self.seconds = seconds
            self.intervals = intervals
        }

        package init(metrics: MetricSet, seconds: Double, intervals: [(metrics: MetricSet, seconds: Double)] = []) {
            self.init(metrics: metrics, seconds: seconds, intervals: intervals.map { IntervalSample($0.metrics, seconds: $0.seconds) })
        }
    }

    package var label: String
    package var runs: [Run]

    package init(label: String, runs: [Run]) {
        self.label = label
        self.runs = runs
    }

    /// Every run's samples together (histograms add exactly).
    var pooled: Sample {
        var sample = Sample()
        for run in runs { sample.add(Sample(run.metrics, seconds: run.seconds)) }
        return sample
    }
}

/// The counted figures a comparison reads from a set of metrics (beside its histograms).
package struct SampleFigures: Sendable {
    var received: Double = 0
    var errors: Double = 0
    var operations: Double = 0
    var seconds: Double = 0
    /// `flow.step_errors.<step>` by step.
    var stepErrors: [String: Double] = [:]

    init() {}

    init(_ metrics: MetricSet, seconds: Double) {
        received = Double(metrics.counter(.messagesReceived))
        errors = Double(metrics.errorCount)
        // Unlike the report's error rate, compare leaves transfers out of the operations (kept as it was).
        operations = Double(metrics.counter(.connectAttempts)) + Double(metrics.counter(.messagesSent))
        self.seconds = seconds
        for step in metrics.tags(of: .flowStepErrors) {
            stepErrors[step] = Double(metrics.counter(MetricFamily.flowStepErrors.name(step)))
        }
    }

    mutating func add(_ other: SampleFigures) {
        received += other.received
        errors += other.errors
        operations += other.operations
        seconds += other.seconds
        for (step, count) in other.stepErrors { stepErrors[step, default: 0] += count }
    }
}

/// One interval of a run as a comparison keeps it: its figures, and its histograms sparse (a few KB each).
package struct IntervalSample: Sendable {
    var histograms: [String: SparseHistogram] = [:]
    var figures: SampleFigures

    /// `metrics` may be dropped once this is made: nothing of it is kept dense.
    package init(_ metrics: MetricSet, seconds: Double) {
        for (name, histogram) in metrics.histograms { histograms[name] = SparseHistogram(histogram) }
        figures = SampleFigures(metrics, seconds: seconds)
    }

    var seconds: Double { figures.seconds }

    /// The same interval with only the histograms `names` holds.
    func only(_ names: Set<String>) -> IntervalSample {
        var copy = self
        copy.histograms = histograms.filter { names.contains($0.key) }
        return copy
    }
}

/// The figures a comparison reads from a set of metrics: what is summed when runs or intervals pool.
struct Sample {
    var histograms: [String: Histogram] = [:]
    var figures = SampleFigures()

    init() {}

    init(_ metrics: MetricSet, seconds: Double, only names: Set<String>? = nil) {
        for (name, histogram) in metrics.histograms where names?.contains(name) ?? true { histograms[name] = histogram }
        figures = SampleFigures(metrics, seconds: seconds)
    }

    var received: Double { figures.received }
    var errors: Double { figures.errors }
    var operations: Double { figures.operations }
    var seconds: Double { figures.seconds }
    /// `flow.step_errors.<step>` by step.
    var stepErrors: [String: Double] { figures.stepErrors }

    mutating func add(_ other: Sample) {
        for (name, histogram) in other.histograms {
            // A histogram of another layout (another build's bounds) cannot add exactly; the pooled sample
            // keeps what does add rather than failing the whole comparison (merge refuses such reports).
            if histograms[name] == nil { histograms[name] = histogram } else { try? histograms[name]!.add(histogram) }
        }
        figures.add(other.figures)
    }

    /// Adds an interval: its sparse histograms into this sample's dense ones (exactly as the dense add would).
    mutating func add(_ other: IntervalSample) {
        for (name, histogram) in other.histograms {
            // As above: a histogram of another layout is left out of the pool (try? on purpose).
            try? histograms[name, default: histogram.emptyDense()].add(histogram)
        }
        figures.add(other.figures)
    }

    /// A flow step's failures and executions (successes in `flow.step.<step>` plus failures).
    func stepExecutions(_ step: String) -> (failures: Double, executions: Double) {
        let failures = stepErrors[step] ?? 0
        return (failures, failures + Double(histograms[MetricFamily.flowStep.name(step)]?.totalCount ?? 0))
    }

    var throughput: Double { seconds > 0 ? received / seconds : 0 }
    var errorRate: Double { operations > 0 ? errors / operations : 0 }
}

/// A statistic compared between base and head.
package struct ComparisonRow: Sendable {
    /// Which way of change is an improvement.
    package enum Direction: Sendable { case lowerIsBetter, higherIsBetter }
    /// Whether both sides have the metric: a flow step one side's profile lacks is added or removed, not compared.
    package enum Presence: String, Sendable { case both, added, removed }

    package var metric: String
    package var statistic: String
    /// The unit values are in: `us`, `/s` or a fraction (`ratio`).
    package var unit: String
    package var base: Double
    package var head: Double
    package var pValue: Double
    package var test: String
    package var direction: Direction
    /// `added`/`removed` rows carry the figure of the side that has it (the other is 0) and are never significant.
    package var presence: Presence = .both

    package init(
        metric: String, statistic: String, unit: String, base: Double, head: Double, pValue: Double, test: String,
        direction: Direction, presence: Presence = .both
    ) {
        self.presence = presence
        self.metric = metric
        self.statistic = statistic
        self.unit = unit
        self.base = base
        self.head = head
        self.pValue = pValue
        self.test = test
        self.direction = direction
    }

    /// head vs base in percent; nil when base is 0.
    package var changePercent: Double? { base == 0 ? (head == 0 ? 0 : nil) : (head - base) / base * 100 }
    package func isSignificant(alpha: Double) -> Bool { presence == .both && pValue < alpha }
    /// A significant change in the bad direction.
    package func isWorse(alpha: Double) -> Bool {
        guard isSignificant(alpha: alpha) else { return false }
        return direction == .lowerIsBetter ? head > base : head < base
    }
}

/// Compares two sides metric by metric with a significance test:
/// - both sides with 2 or more runs: Mann–Whitney U over the runs' values (as benchstat does);
/// - otherwise, when both runs have 2 or more intervals: a block bootstrap over the intervals (resample
///   each side's intervals with replacement, pool them, recompute the statistic) — so the verdict weighs
///   the change against how much the figure moved within each run, not just sampling noise;
/// - otherwise: a bootstrap over the HDR counts for latencies, Poisson and binomial tests for rates.
package enum Comparator {
    package static let percentiles: [(name: String, value: Double)] = [("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9)]

    struct Statistic {
        var metric: String
        var name: String
        var unit: String
        var direction: ComparisonRow.Direction
        var isHistogram = false
        /// For a proportion (a step's error rate): its events and trials, for the binomial test.
        var proportion: ((Sample) -> (Double, Double))?
        var compute: (Sample) -> Double?
    }

    /// The percentiles compared for a flow step (30 steps × 5 statistics would bury the other rows).
    static let flowPercentiles: [(name: String, value: Double)] = [("p50", 50), ("p99", 99)]

    /// A flow family member's row name, `flow.step{step=join}`, as thresholds and budgets write it; other names as they are.
    package static func displayName(_ name: String) -> String {
        guard let family = flowFamilies.first(where: { $0.tag(of: name) != nil }), let tag = family.tag(of: name) else {
            return name
        }
        return "\(family.stem){\(family.tag)=\(tag)}"
    }

    static let flowFamilies: [MetricFamily] = [.flowStep, .flowFirstResult]

    package static func compare(base: ComparisonSide, head: ComparisonSide, replicates: Int = 400) -> [ComparisonRow] {
        let basePooled = base.pooled, headPooled = head.pooled
        var statistics: [Statistic] = []
        let names = Set(basePooled.histograms.keys).intersection(headPooled.histograms.keys)
        for name in names.sorted() {
            let unit = MetricSet.unit(of: name)
            let direction: ComparisonRow.Direction = unit == Metric.Unit.microseconds.rawValue ? .lowerIsBetter : .higherIsBetter
            let isFlow = flowFamilies.contains { $0.tag(of: name) != nil }
            for (label, percentile) in isFlow ? flowPercentiles : percentiles {
                statistics.append(Statistic(metric: name, name: label, unit: unit, direction: direction, isHistogram: true) {
                    $0.histograms[name].map { Double($0.value(atPercentile: percentile)) }
                })
            }
            if isFlow { continue }
            statistics.append(Statistic(metric: name, name: "mean", unit: unit, direction: direction, isHistogram: true) {
                $0.histograms[name].map(\.mean)
            })
        }
        let baseSteps = Set(basePooled.stepErrors.keys).union(basePooled.histograms.keys.compactMap { MetricFamily.flowStep.tag(of: $0).map(String.init) })
        let headSteps = Set(headPooled.stepErrors.keys).union(headPooled.histograms.keys.compactMap { MetricFamily.flowStep.tag(of: $0).map(String.init) })
        for step in baseSteps.intersection(headSteps).sorted() {
            statistics.append(Statistic(
                metric: "\(Metric.errors.name){\(MetricFamily.flowStepErrors.tag)=\(step)}", name: "rate", unit: "ratio",
                direction: .lowerIsBetter, proportion: { $0.stepExecutions(step) }
            ) { sample in
                let (failures, executions) = sample.stepExecutions(step)
                return executions > 0 ? failures / executions : nil
            })
        }
        if basePooled.received > 0 || headPooled.received > 0 {
            statistics.append(Statistic(metric: Metric.messagesReceived.name, name: "per_second", unit: "/s", direction: .higherIsBetter) {
                $0.throughput
            })
        }
        statistics.append(Statistic(metric: Metric.errors.name, name: "rate", unit: "ratio", direction: .lowerIsBetter) { $0.errorRate })

        let pValues: [Double]
        let test: String
        if base.runs.count >= 2 && head.runs.count >= 2 {
            test = "mann-whitney"
            let baseSamples = base.runs.map { Sample($0.metrics, seconds: $0.seconds, only: names) }
            let headSamples = head.runs.map { Sample($0.metrics, seconds: $0.seconds, only: names) }
            // (A step's error rate reads its flow.step histogram: that is in `names` whenever both sides timed it.)
            pValues = statistics.map { statistic in
                Significance.mannWhitney(baseSamples.compactMap(statistic.compute), headSamples.compactMap(statistic.compute))
            }
        } else if let baseIntervals = intervals(of: base, names), let headIntervals = intervals(of: head, names) {
            test = "interval-bootstrap"
            var values = blockBootstrap(baseIntervals, headIntervals, statistics, replicates: replicates)
            // A metric seen in fewer than two intervals of a side (connects during a short ramp) has no
            // within-run variation to weigh against: test its samples instead.
            for (index, statistic) in statistics.enumerated() where statistic.isHistogram {
                let covered = [baseIntervals, headIntervals].map { side in
                    side.filter { ($0.histograms[statistic.metric]?.totalCount ?? 0) > 0 }.count
                }
                if covered.min()! < 2 {
                    values[index] = histogramBootstrap(statistic, basePooled, headPooled, replicates: replicates)
                }
            }
            pValues = values
        } else {
            test = "histogram-bootstrap"
            pValues = statistics.map { statistic in
                if statistic.isHistogram { return histogramBootstrap(statistic, basePooled, headPooled, replicates: replicates) }
                if let proportion = statistic.proportion {
                    let (baseEvents, baseTrials) = proportion(basePooled), (headEvents, headTrials) = proportion(headPooled)
                    return Significance.proportions(baseEvents, baseTrials, headEvents, headTrials)
                }
                switch statistic.unit {
                case "/s":
                    return Significance.poissonRates(basePooled.received, basePooled.seconds, headPooled.received, headPooled.seconds)
                default:
                    return Significance.proportions(basePooled.errors, basePooled.operations, headPooled.errors, headPooled.operations)
                }
            }
        }
        let rows = zip(statistics, pValues).map { statistic, pValue in
            ComparisonRow(
                metric: displayName(statistic.metric), statistic: statistic.name, unit: statistic.unit,
                base: statistic.compute(basePooled) ?? 0, head: statistic.compute(headPooled) ?? 0, pValue: pValue,
                test: test, direction: statistic.direction)
        }
        return rows + presenceRows(basePooled, headPooled, test: test)
    }

    /// A flow step (or first result) only one side has: one row with its p99 on that side, shown as added or removed.
    private static func presenceRows(_ base: Sample, _ head: Sample, test: String) -> [ComparisonRow] {
        var rows: [ComparisonRow] = []
        for family in flowFamilies {
            let baseNames = Set(base.histograms.keys.filter { family.tag(of: $0) != nil })
            let headNames = Set(head.histograms.keys.filter { family.tag(of: $0) != nil })
            for name in baseNames.symmetricDifference(headNames).sorted() {
                let isAdded = headNames.contains(name)
                let value = (isAdded ? head : base).histograms[name].map { Double($0.value(atPercentile: 99)) } ?? 0
                rows.append(ComparisonRow(
                    metric: displayName(name), statistic: "p99", unit: Metric.Unit.microseconds.rawValue,
                    base: isAdded ? 0 : value, head: isAdded ? value : 0, pValue: 1, test: test, direction: .lowerIsBetter,
                    presence: isAdded ? .added : .removed))
            }
        }
        return rows
    }

    private static func histogramBootstrap(_ statistic: Statistic, _ base: Sample, _ head: Sample, replicates: Int) -> Double {
        guard let baseHistogram = base.histograms[statistic.metric], let headHistogram = head.histograms[statistic.metric]
        else { return 1 }
        var wrapper = Sample()
        return Significance.bootstrap(baseHistogram, headHistogram, replicates: replicates) { histogram in
            wrapper.histograms[statistic.metric] = histogram
            return statistic.compute(wrapper) ?? 0
        }
    }

    /// A single run's intervals as samples, if there are at least two with data.
    private static func intervals(of side: ComparisonSide, _ names: Set<String>) -> [IntervalSample]? {
        guard side.runs.count == 1 else { return nil }
        let samples = side.runs[0].intervals.filter { $0.seconds > 0 }.map { $0.only(names) }
        return samples.count >= 2 ? samples : nil
    }

    /// Resamples each side's intervals with replacement, pools them, and counts how often the pooled
    /// statistic's difference crosses zero: a two-sided p-value per statistic.
    static func blockBootstrap(_ base: [IntervalSample], _ head: [IntervalSample], _ statistics: [Statistic], replicates: Int) -> [Double] {
        var random = SeededRandomNumberGenerator(seed: 0x5753_4C4F_4144)
        var below = [Int](repeating: 0, count: statistics.count)
        var above = [Int](repeating: 0, count: statistics.count)
        var valid = [Int](repeating: 0, count: statistics.count)
        func resample(_ intervals: [IntervalSample]) -> Sample {
            var pooled = Sample()
            for _ in intervals.indices { pooled.add(intervals[Int(random.next() % UInt64(intervals.count))]) }
            return pooled
        }
        for _ in 0..<replicates {
            let baseSample = resample(base), headSample = resample(head)
            for (index, statistic) in statistics.enumerated() {
                // A resample drawn only from intervals without the metric (a ramp's first interval) says nothing
                // about it: it is left out rather than counted as "no difference".
                guard let baseValue = statistic.compute(baseSample), let headValue = statistic.compute(headSample) else {
                    continue
                }
                valid[index] += 1
                if headValue - baseValue <= 0 { below[index] += 1 }
                if headValue - baseValue >= 0 { above[index] += 1 }
            }
        }
        return statistics.indices.map { index in
            valid[index] == 0 ? 1 : min(1, 2 * Double(min(below[index], above[index]) + 1) / Double(valid[index] + 1))
        }
    }
}

/// A regression budget: `METRIC STATISTIC +N%` (or `-N%` for throughput): head may be worse than base by
/// at most N% before `compare` fails — and only when the change is significant.
package struct RegressionBudget: Sendable, Equatable, CustomStringConvertible {
    package var metric: String
    package var statistic: String
    /// Allowed relative change in percent, signed in the bad direction (+ for latency, − for throughput).
    package var percent: Double

    package static let defaults: [RegressionBudget] = [
        RegressionBudget(metric: Metric.messageRoundTrip.name, statistic: "p50", percent: 10),
        RegressionBudget(metric: Metric.messageRoundTrip.name, statistic: "p99", percent: 10),
        RegressionBudget(metric: Metric.connect.name, statistic: "p99", percent: 25),
        RegressionBudget(metric: Metric.messagesReceived.name, statistic: "per_second", percent: -10),
    ]

    package init(metric: String, statistic: String, percent: Double) {
        self.metric = metric
        self.statistic = statistic
        self.percent = percent
    }

    /// Parses `ws.message_rtt p99 +10%`; nil if it does not read so.
    package init?(parsing text: String) {
        let words = text.split(whereSeparator: \.isWhitespace).map(String.init)
        guard words.count == 3, words[2].hasSuffix("%"), let first = words[2].first, first == "+" || first == "-",
            let value = Double(words[2].dropFirst().dropLast()), value >= 0
        else { return nil }
        self.init(metric: words[0], statistic: words[1], percent: first == "+" ? value : -value)
    }

    package var description: String {
        "\(metric) \(statistic) \(percent >= 0 ? "+" : "-")\(formatPercent(abs(percent)))%"
    }

    /// Whether `row` (of this metric and statistic) breaks the budget.
    package func isExceeded(by row: ComparisonRow, alpha: Double) -> Bool {
        guard row.metric == metric, row.statistic == statistic, row.isWorse(alpha: alpha) else { return false }
        guard let change = row.changePercent else { return true }  // from zero to something worse
        return percent >= 0 ? change > percent : change < percent
    }
}

func formatPercent(_ value: Double) -> String {
    value.rounded() == value && abs(value) < 0x1p63 ? String(Int64(value)) : "\(value)"
}

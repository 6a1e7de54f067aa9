import Histogram
import JSON
import Profile

/// The measurements of one scenario (or of the whole run) over some span of time: latency histograms in
/// microseconds, event counters, disconnects by close code, errors by error code. Adding two sets is
/// exact (histograms add slot by slot), which is what interval roll-ups, shard merges and comparisons
/// rest on.
package struct MetricSet: Sendable, Equatable {
    package var histograms: [String: Histogram] = [:]
    package var counters: [String: UInt64] = [:]
    /// Disconnects by the close code the client saw (1006 when there was no closing handshake).
    package var disconnects: [UInt16: UInt64] = [:]
    /// Errors by their stable code (`connect`, `tls_verify`, `handshake`, `pong_timeout`, …).
    package var errors: [String: UInt64] = [:]

    package init() {}

    package var errorCount: UInt64 { errors.values.reduce(0, saturatingSum) }
    package var disconnectCount: UInt64 { disconnects.values.reduce(0, saturatingSum) }

    /// The counter of report key `name` (a family member or a name read from another version's report); 0
    /// when absent.
    package func counter(_ name: String) -> UInt64 { counters[name] ?? 0 }

    /// The counter of `metric`; 0 when it stayed zero (the report leaves it out).
    package func counter(_ metric: Metric) -> UInt64 { counters[metric.name] ?? 0 }

    /// The counter of `metric` if one was recorded.
    package subscript(counter metric: Metric) -> UInt64? {
        get { counters[metric.name] }
        set { counters[metric.name] = newValue }
    }

    /// The histogram of `metric` if one was recorded.
    package subscript(histogram metric: Metric) -> Histogram? {
        get { histograms[metric.name] }
        set { histograms[metric.name] = newValue }
    }

    /// How many events `metric` counted: a counter's count, the disconnects or errors of every code, or a
    /// histogram's samples.
    package func count(of metric: Metric) -> UInt64 {
        switch metric.kind {
        case .counter: counter(metric)
        case .closeCodes: disconnectCount
        case .errors: errorCount
        case .latency, .throughput: histograms[metric.name]?.totalCount ?? 0
        }
    }

    /// Connection attempts, messages sent and transfers started: what the error rate divides by.
    package var operations: UInt64 { MetricCatalog.operations.reduce(0) { saturatingSum($0, counter($1)) } }

    /// Adds `other` into this set. - Throws: if two histograms of one name have different layouts.
    package mutating func add(_ other: MetricSet) throws(Histogram.LayoutMismatch) {
        for (name, histogram) in other.histograms {
            if histograms[name] == nil {
                histograms[name] = histogram
            } else {
                try histograms[name]!.add(histogram)
            }
        }
        // Counts read from reports can be anything up to 2^53 each: sums saturate rather than wrap.
        for (name, value) in other.counters { counters[name] = saturatingSum(counters[name] ?? 0, value) }
        for (code, value) in other.disconnects { disconnects[code] = saturatingSum(disconnects[code] ?? 0, value) }
        for (code, value) in other.errors { errors[code] = saturatingSum(errors[code] ?? 0, value) }
    }

    /// The unit a histogram is recorded in, as the report writes it: the catalogue's, and microseconds for a
    /// name this build does not know.
    package static func unit(of name: String) -> String {
        (MetricCatalog.metric(named: name)?.unit ?? .microseconds).rawValue
    }

    /// The percentiles a report lists for every latency metric.
    package static let reportedPercentiles: [(key: String, percentile: Double)] = [
        ("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99), ("p99.9", 99.9), ("p99.99", 99.99),
    ]

    /// The set as report JSON. `seconds` turns counts into rates; `operations` is the denominator of
    /// the error rate.
    package func json(seconds: Double, operations: UInt64) -> JSONValue {
        var object = JSONObject()
        for name in histograms.keys.sorted() {
            let histogram = histograms[name]!
            object[name] = HistogramFigures(histogram).entry(name: name, serialized: histogram.serialized())
        }
        for name in counters.keys.sorted() {
            let count = counters[name]!
            object[name] = ["count": JSONValue(count), "perSecond": .number(rate(count, seconds))]
        }
        var disconnectCodes = JSONObject()
        for code in disconnects.keys.sorted() { disconnectCodes[String(code)] = JSONValue(disconnects[code]!) }
        object[Metric.disconnects.name] = ["count": JSONValue(disconnectCount), "byCode": .object(disconnectCodes)]
        var errorCodes = JSONObject()
        for code in errors.keys.sorted() { errorCodes[code] = JSONValue(errors[code]!) }
        object[Metric.errors.name] = [
            "count": JSONValue(errorCount), "perSecond": .number(rate(errorCount, seconds)),
            "rate": .number(operations == 0 ? 0 : Double(errorCount) / Double(operations)), "byCode": .object(errorCodes),
        ]
        return .object(object)
    }

    /// Reads back what ``json(seconds:operations:)`` wrote, with a budget of its own (one set alone: tests and
    /// tools; readers of files pass the command's budget).
    package init(json value: JSONValue, path: String) throws(ReportFormatError) {
        var budget = HistogramDecodeBudget()
        try self.init(json: value, path: path, budget: &budget)
    }

    /// Reads back what ``json(seconds:operations:)`` wrote: histograms from their blobs (exact), counters
    /// from their counts. Each histogram's counts are taken from `budget` (shared by a whole command) before
    /// they are allocated. - Throws: ``ReportFormatError`` naming the JSON path.
    package init(json value: JSONValue, path: String, budget: inout HistogramDecodeBudget) throws(ReportFormatError) {
        guard let object = value.objectValue else { throw ReportFormatError(path: path, reason: "expected an object") }
        for (name, entry) in object.members {
            let entryPath = path + "." + name
            if let blob = entry["histogram"] {
                guard let text = blob.stringValue else {
                    throw ReportFormatError(path: entryPath + ".histogram", reason: "expected a string")
                }
                do {
                    let histogram = try Histogram(serialized: text, maximumSlots: budget.remainingSlots)
                    budget.remainingSlots -= histogram.slotCount
                    histograms[name] = histogram
                } catch {
                    throw ReportFormatError(path: entryPath + ".histogram", reason: error.description)
                }
                continue
            }
            let kind = MetricCatalog.metric(named: name)?.kind
            if kind == .closeCodes || kind == .errors {
                guard let codes = entry["byCode"]?.objectValue else {
                    throw ReportFormatError(path: entryPath + ".byCode", reason: "expected an object")
                }
                for (code, count) in codes.members {
                    guard let count = count.integerValue, count >= 0 else {
                        throw ReportFormatError(path: entryPath + ".byCode." + code, reason: "expected a count")
                    }
                    if kind == .errors {
                        errors[code] = UInt64(count)
                    } else {
                        guard let closeCode = UInt16(code) else {
                            throw ReportFormatError(path: entryPath + ".byCode." + code, reason: "not a close code")
                        }
                        disconnects[closeCode] = UInt64(count)
                    }
                }
                continue
            }
            guard let count = entry["count"]?.integerValue, count >= 0 else {
                throw ReportFormatError(path: entryPath + ".count", reason: "expected a count")
            }
            counters[name] = UInt64(count)
        }
    }
}

/// The histogram counts one command may make its readers allocate, shared by every report and journal it reads
/// (`merge` and `compare` pass one budget to all their inputs, `report --recover` to the whole journal): 2^28 slots
/// (2 GiB), about 11,000 histograms of wsload's layout (a 2-hour run at 5-second intervals needs a sixth of it, its
/// journal about a third). A crafted file whose tiny blobs declare huge layouts is refused at the blob that
/// exhausts it, not allowed to allocate gigabytes, however many files or journal records carry such blobs.
package struct HistogramDecodeBudget: Sendable {
    package static let commandSlots = 1 << 28
    /// Slots still allowed.
    package var remainingSlots: Int
    package init(slots: Int = HistogramDecodeBudget.commandSlots) { remainingSlots = slots }
}

/// A report that does not have the shape this build writes.
package struct ReportFormatError: Error, Sendable, CustomStringConvertible {
    package var path: String
    package var reason: String
    /// The file could not be read at all (missing, a directory, a FIFO: exit 66), rather than read and found bad.
    package var isUnreadable: Bool
    package init(path: String, reason: String, isUnreadable: Bool = false) {
        self.path = path
        self.reason = reason
        self.isUnreadable = isUnreadable
    }
    package var description: String { "\(path): \(reason)" }
}

/// `a + b`, or `UInt64.max` where that overflows: sums of counts read from files saturate, never trap or wrap.
package func saturatingSum(_ a: UInt64, _ b: UInt64) -> UInt64 {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? .max : sum
}

func rate(_ count: UInt64, _ seconds: Double) -> Double { seconds > 0 ? rounded(Double(count) / seconds) : 0 }

/// Three decimals are plenty for report figures and keep the JSON readable.
func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

/// One flow step's figures in a set: its latencies (successes), its first results (graphql subscribe) and its
/// failures. The summary, the HTML report and compare show steps through this.
package struct FlowStepFigures: Sendable {
    /// The step's name (profile-supplied: escape it for the medium it is shown in).
    package var name: String
    /// `flow.step.<name>`: nil when no execution succeeded.
    package var latency: Histogram?
    /// `flow.first_result.<name>`: nil unless a subscription of the step got a result.
    package var firstResult: Histogram?
    /// `flow.step_errors.<name>`.
    package var errors: UInt64

    /// Successes (the latency histogram's samples).
    package var count: UInt64 { latency?.totalCount ?? 0 }
    /// Failures per execution, 0 when the step never ran.
    package var errorRate: Double {
        let executions = saturatingSum(count, errors)
        return executions == 0 ? 0 : Double(errors) / Double(executions)
    }
}

extension MetricSet {
    /// The tags of `family`'s members this set holds (histograms for a latency family, counters otherwise), sorted.
    package func tags(of family: MetricFamily) -> [String] {
        let names = family.kind.isHistogram ? Array(histograms.keys) : Array(counters.keys)
        return names.compactMap { family.tag(of: $0).map(String.init) }.sorted()
    }

    /// Every step with a flow metric in this set: first in `order` (the profile's step names), then the rest by name.
    package func flowSteps(order: [String] = []) -> [FlowStepFigures] {
        var names = Set(tags(of: .flowStep))
        names.formUnion(tags(of: .flowFirstResult))
        names.formUnion(tags(of: .flowStepErrors))
        var ordered: [String] = []
        for name in order where names.remove(name) != nil { ordered.append(name) }
        ordered += names.sorted()
        return ordered.map { name in
            FlowStepFigures(
                name: name, latency: histograms[MetricFamily.flowStep.name(name)],
                firstResult: histograms[MetricFamily.flowFirstResult.name(name)],
                errors: counter(MetricFamily.flowStepErrors.name(name)))
        }
    }

    /// `flow.pushed.<type>` counts by type, sorted by type.
    package var flowPushed: [(type: String, count: UInt64)] {
        tags(of: .flowPushed).map { ($0, counter(MetricFamily.flowPushed.name($0))) }
    }

    /// The flow counters with a fixed name (`flow.completed`, `flow.iterations`, …: every counter under `flow.`
    /// that is no family's member), by name.
    package var flowCounters: [(name: String, count: UInt64)] {
        counters.keys.filter { $0.hasPrefix(Self.flowPrefix) && MetricCatalog.family(of: $0) == nil }.sorted()
            .map { ($0, counters[$0]!) }
    }

    /// The prefix every flow metric's key starts with.
    package static let flowPrefix = "flow."
}

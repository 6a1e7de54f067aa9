import Histogram
import JSON

extension RunResult {
    /// One report interval: its span of the run, the connections live at its end, and what it measured.
    ///
    /// Its histograms are held as they are while the interval is fresh (the run just closed it, a journal record was
    /// just read: the journal and the series' filling entry add into them) and at rest otherwise
    /// (``CompressedHistogram``: the series' settled entries, the intervals of a result, a report read back). Nothing
    /// decodes them but a use: ``metrics`` (one interval's worth of memory, for whoever walks intervals one at a time
    /// and drops each), ``histogram(named:)``, ``add(_:)``. Writing a report copies their blobs and figures
    /// (``metricsJSON(seconds:)``), so a run's end and a report read back never hold every interval decoded at once.
    /// A histogram with clamped samples stays as it is (the compressed form does not carry that count).
    package struct Interval: Sendable {
        package var start: Duration
        package var end: Duration
        package var liveConnections: Int
        /// Counters, disconnects, errors, and the histograms held as they are.
        private var held: MetricSet
        /// The histograms at rest, by name (a name is in `held` or here, never both).
        private var compressed: [String: CompressedHistogram] = [:]
        /// Where the interval was read from, for errors (`r.json: intervals[3]`); nil for the run's own.
        package var origin: String?

        /// A fresh interval, its histograms as they are (``compress()`` puts them at rest).
        package init(start: Duration, end: Duration, liveConnections: Int, metrics: MetricSet) {
            self.start = start
            self.end = end
            self.liveConnections = liveConnections
            held = metrics
        }

        /// An interval read from a report: its counters (`counts`' histograms are ignored) and its histograms at rest,
        /// named by `origin` in errors.
        package init(start: Duration, end: Duration, liveConnections: Int, counts: MetricSet,
                     compressed: [String: CompressedHistogram], origin: String) {
            self.init(start: start, end: end, liveConnections: liveConnections, metrics: counts)
            held.histograms = [:]
            self.compressed = compressed
            self.origin = origin
        }

        /// The counters, disconnects and errors, without histograms: nothing is decoded.
        package var counts: MetricSet {
            var counts = held
            counts.histograms = [:]
            return counts
        }

        /// The names of its histograms, sorted.
        package var histogramNames: [String] { (Array(held.histograms.keys) + compressed.keys).sorted() }

        /// Whether none of its histograms is held decoded but those with clamped samples.
        package var isAtRest: Bool { held.histograms.values.allSatisfy { $0.clampedCount > 0 } }

        /// The histogram slots its histograms hold once decoded (8 bytes each).
        package var histogramSlots: Int {
            held.histograms.values.reduce(compressed.values.reduce(0) { $0 + $1.slotCount }) { $0 + $1.slotCount }
        }

        /// Its metrics with every histogram decoded (188 KB a latency metric of wsload's layout): take one interval's
        /// at a time and drop it. - Throws: ``ReportFormatError`` naming the blob that does not decode
        /// (`r.json: intervals[3].metrics.ws.message_rtt.histogram`; only a blob read from a file can fail).
        package var metrics: MetricSet {
            get throws(ReportFormatError) {
                var metrics = held
                for (name, histogram) in compressed { metrics.histograms[name] = try histogram.decoded(at: path(of: name)) }
                return metrics
            }
        }

        /// Its histogram `name`, decoded; nil when it has none of that name. - Throws: as ``metrics``.
        package func histogram(named name: String) throws(ReportFormatError) -> Histogram? {
            if let histogram = held.histograms[name] { return histogram }
            return try compressed[name]?.decoded(at: path(of: name))
        }

        /// Puts its histograms at rest: every one without clamped samples compressed, its report figures computed.
        package mutating func compress() {
            for (name, histogram) in held.histograms where histogram.clampedCount == 0 {
                compressed[name] = CompressedHistogram(histogram)
                held.histograms[name] = nil
            }
        }

        /// `later` added into this interval: the span of both, the connections live at `later`'s end, the metrics
        /// added exactly (histograms decoded and added; at rest again afterwards if this interval was). - Throws:
        /// ``ReportFormatError`` for a blob that does not decode or histograms of one name with different layouts.
        package mutating func add(_ later: Interval) throws(ReportFormatError) {
            let other = try later.metrics
            let wasAtRest = !compressed.isEmpty
            var decoded: [String: Histogram] = [:]
            for (name, histogram) in compressed { decoded[name] = try histogram.decoded(at: path(of: name)) }
            held.histograms.merge(decoded) { _, new in new }
            compressed = [:]
            do {
                // In place: a fresh interval that is the only reference to its histograms (the series' filling entry)
                // adds into them without copying one.
                try held.add(other)
            } catch {
                throw ReportFormatError(path: (later.origin ?? "interval") + ".metrics", reason: error.description)
            }
            if wasAtRest { compress() }
            start = min(start, later.start)
            end = max(end, later.end)
            liveConnections = later.liveConnections
        }

        /// The interval with the figures of every blob it read from a file computed (each decoded once, one at a
        /// time; the blobs stay as they are): what a result written again (a merge) needs, checked where it was read.
        /// - Throws: as ``metrics``.
        package func withFigures() throws(ReportFormatError) -> Interval {
            var copy = self
            for (name, histogram) in compressed where histogram.figures == nil {
                copy.compressed[name] = CompressedHistogram(try histogram.decoded(at: path(of: name)))
            }
            return copy
        }

        /// The interval's `metrics` object as the report and the run journal write it (``MetricSet/json(seconds:operations:)``'s
        /// form; `seconds` is its span): a histogram at rest is copied — its blob and figures — not decoded.
        package func metricsJSON(seconds: Double) -> JSONValue {
            let counts = counts
            var object = JSONObject()
            for name in histogramNames {
                if let histogram = held.histograms[name] {
                    object[name] = HistogramFigures(histogram).entry(name: name, serialized: histogram.serialized())
                } else if let stored = compressed[name] {
                    object[name] = Self.entry(of: stored, name: name)
                }
            }
            if case .object(let rest) = counts.json(seconds: seconds, operations: counts.operations) {
                for member in rest.members { object[member.key] = member.value }
            }
            return .object(object)
        }

        /// A blob's report entry: its figures, computed by decoding it when it was read from a file (``withFigures()``
        /// does that first where a failure must be told; here one that does not decode is written as it was read,
        /// without figures, so the report is still written and the blob fails where it is used again).
        private static func entry(of stored: CompressedHistogram, name: String) -> JSONValue {
            if let figures = stored.figures ?? (try? stored.decoded(at: name)).map(HistogramFigures.init) {
                return figures.entry(name: name, serialized: stored.serialized)
            }
            return ["unit": .string(MetricSet.unit(of: name)), "histogram": .string(stored.serialized)]
        }

        private func path(of name: String) -> String { (origin ?? "interval") + ".metrics." + name + ".histogram" }
    }
}

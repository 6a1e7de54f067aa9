import Histogram
import Profile

/// A bounded series of report intervals: at most ``maximumCount`` entries however long the run. Base intervals (one
/// `report.interval` each) are appended as they close; when the series is full, adjacent pairs of entries are merged
/// (histograms added slot by slot, counters added, the live connections the later entry's, the span the union of
/// both), so every entry covers ``factor`` base intervals and ``factor`` doubles each time. Entry `k` covers base
/// intervals `k × factor ..< (k + 1) × factor`; only the last one may cover fewer (it is still filling up).
///
/// Pure and exact: the entries add up to exactly what was appended (a merge loses no sample, only time resolution),
/// and memory is O(``maximumCount``) whatever the duration. Entries at rest keep their histograms in HdrHistogram's
/// compressed form (a few hundred bytes instead of the layout's 188 KB; lossless), and a merge decodes one pair at a
/// time, so the series of a long run costs a few hundred KB, not hundreds of MB; ``entries`` decodes them all (once, at
/// the end). Totals are never computed from the series: the run keeps its own. The full-resolution record is the run
/// journal, streamed to disk as each interval closes.
package struct IntervalSeries: Sendable {
    /// The most entries the series holds (`report.maxIntervals`).
    package let maximumCount: Int
    /// Base intervals per entry: 1 until the series first fills, then 2, 4, 8…
    package private(set) var factor = 1
    /// Base intervals appended so far.
    package private(set) var count = 0
    /// The entries before the last, at rest.
    private var settled: [StoredInterval] = []
    /// The last entry, still filling up (as it is: base intervals add into it).
    private var last: RunResult.Interval?
    /// The histogram slots the entries hold once decoded (8 bytes each): what ``entries`` allocates, and what a reader
    /// of an untrusted journal bounds.
    package private(set) var histogramSlots = 0

    /// - Parameter maximumCount: at least 2 (a pair is the least that can be merged); smaller values are taken as 2.
    package init(maximumCount: Int) {
        self.maximumCount = max(maximumCount, Profile.ReportOptions.maxIntervalsRange.lowerBound)
    }

    /// Whether entries were merged (the series no longer holds every base interval on its own).
    package var isDownsampled: Bool { factor > 1 }

    /// How many entries the series holds.
    package var entryCount: Int { settled.count + (last == nil ? 0 : 1) }

    /// The entries, oldest first, decoded.
    package var entries: [RunResult.Interval] { settled.map(\.interval) + (last.map { [$0] } ?? []) }

    /// Appends the next base interval: into the last entry while that one covers fewer than ``factor``, else as a new
    /// entry, merging adjacent pairs first when the series is full. - Throws: if two histograms of one name have
    /// different layouts (never for a run's own recorders; possible for intervals read from a file).
    package mutating func append(_ interval: RunResult.Interval) throws(Histogram.LayoutMismatch) {
        if count / factor >= entryCount && entryCount == maximumCount { try coarsen() }
        if count / factor < entryCount, var filling = last {
            last = nil  // `filling` the only reference: the merge adds into its histograms in place, copying none
            defer { last = filling }
            let before = Self.slots(filling.metrics)
            try Self.merge(interval, into: &filling)
            histogramSlots += Self.slots(filling.metrics) - before
        } else {
            if let previous = last { settled.append(StoredInterval(previous)) }
            last = interval
            histogramSlots += Self.slots(interval.metrics)
        }
        count += 1
    }

    /// Merges adjacent pairs of entries, decoding one pair at a time: `factor` doubles, the entries halve (rounded up;
    /// an odd last entry stays alone and now covers fewer than ``factor`` base intervals).
    private mutating func coarsen() throws(Histogram.LayoutMismatch) {
        var all = settled
        if let last { all.append(StoredInterval(last)) }
        var merged: [StoredInterval] = []
        merged.reserveCapacity(all.count / 2 + 1)
        for index in stride(from: 0, to: all.count, by: 2) {
            guard index + 1 < all.count else {
                merged.append(all[index])
                break
            }
            var pair = all[index].interval
            try Self.merge(all[index + 1].interval, into: &pair)
            merged.append(StoredInterval(pair))
        }
        last = merged.popLast()?.interval
        settled = merged
        factor *= 2
        histogramSlots = settled.reduce(last.map { Self.slots($0.metrics) } ?? 0) { $0 + $1.slots }
    }

    /// The histogram slots `metrics` holds.
    package static func slots(_ metrics: MetricSet) -> Int { metrics.histograms.values.reduce(0) { $0 + $1.slotCount } }

    /// `later` added into `earlier`: the span of both, the connections live at the later one's end, and the metrics
    /// added exactly.
    package static func merge(_ later: RunResult.Interval, into earlier: inout RunResult.Interval) throws(Histogram.LayoutMismatch) {
        try earlier.metrics.add(later.metrics)
        earlier.start = min(earlier.start, later.start)
        earlier.end = max(earlier.end, later.end)
        earlier.liveConnections = later.liveConnections
    }

    /// `intervals` with every run of `ratio` consecutive entries merged into one (the last run may be shorter): what a
    /// series at factor `f` becomes at factor `f × ratio`. `ratio` 1 or less returns them as they are.
    package static func coarsened(_ intervals: [RunResult.Interval], by ratio: Int) throws(Histogram.LayoutMismatch)
        -> [RunResult.Interval]
    {
        guard ratio > 1 else { return intervals }
        var result: [RunResult.Interval] = []
        result.reserveCapacity(intervals.count / ratio + 1)
        for (index, interval) in intervals.enumerated() {
            if index % ratio == 0 {
                result.append(interval)
            } else {
                try merge(interval, into: &result[result.count - 1])
            }
        }
        return result
    }

    /// What a report says of this series (``RunResult/IntervalLog``), naming `file` as the full-resolution log.
    package func log(baseSeconds: Double, file: String? = nil) -> RunResult.IntervalLog {
        RunResult.IntervalLog(file: file, count: count, baseSeconds: baseSeconds, factor: factor)
    }
}

/// An entry at rest: its histograms in HdrHistogram's compressed form (lossless for every count), the rest as it is.
/// A histogram holding clamped samples (values past its range) stays as it is: the compressed form does not carry
/// that count, and the series is exact.
private struct StoredInterval: Sendable {
    var start: Duration
    var end: Duration
    var liveConnections: Int
    /// Counters, disconnects, errors, and the histograms kept as they are.
    var metrics: MetricSet
    var compressed: [(name: String, bytes: [UInt8])] = []
    /// The histogram slots once decoded.
    let slots: Int

    init(_ interval: RunResult.Interval) {
        start = interval.start
        end = interval.end
        liveConnections = interval.liveConnections
        metrics = interval.metrics
        slots = IntervalSeries.slots(interval.metrics)
        for (name, histogram) in interval.metrics.histograms where histogram.clampedCount == 0 {
            compressed.append((name, histogram.compressedBytes()))
            metrics.histograms[name] = nil
        }
    }

    var interval: RunResult.Interval {
        var metrics = metrics
        for (name, bytes) in compressed {
            // Bytes this build compressed from a histogram it held (at most 2^20 slots: the decoder's limit) decode.
            if let histogram = try? Histogram(compressedBytes: bytes) { metrics.histograms[name] = histogram }
        }
        return RunResult.Interval(start: start, end: end, liveConnections: liveConnections, metrics: metrics)
    }
}

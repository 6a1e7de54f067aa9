import Histogram
import Profile

/// A bounded series of report intervals: at most ``maximumCount`` entries however long the run. Base intervals (one
/// `report.interval` each) are appended as they close; when the series is full, adjacent pairs of entries are merged
/// (histograms added slot by slot, counters added, the live connections the later entry's, the span the union of
/// both), so every entry covers ``factor`` base intervals and ``factor`` doubles each time. Entry `k` covers base
/// intervals `k × factor ..< (k + 1) × factor`; only the last one may cover fewer (it is still filling up).
///
/// Pure and exact: the entries add up to exactly what was appended (a merge loses no sample, only time resolution),
/// and memory is O(``maximumCount``) whatever the duration. Entries before the last are at rest (``RunResult/Interval``
/// with its histograms compressed: a few hundred bytes instead of the layout's 188 KB; lossless), and a merge decodes
/// one pair at a time, so the series of a long run costs a few hundred KB, not hundreds of MB; ``entries`` hands them
/// over at rest, decoding none (the report copies their blobs). Totals are never computed from the series: the run
/// keeps its own. The full-resolution record is the run journal, streamed to disk as each interval closes.
package struct IntervalSeries: Sendable {
    /// The most entries the series holds (`report.maxIntervals`).
    package let maximumCount: Int
    /// Base intervals per entry: 1 until the series first fills, then 2, 4, 8…
    package private(set) var factor = 1
    /// Base intervals appended so far.
    package private(set) var count = 0
    /// The entries before the last, at rest.
    private var settled: [RunResult.Interval] = []
    /// The last entry, still filling up (fresh: base intervals add into its histograms in place).
    private var last: RunResult.Interval?
    /// The histogram slots the entries hold once decoded (8 bytes each): what decoding every entry would allocate, and
    /// what a reader of an untrusted journal bounds.
    package private(set) var histogramSlots = 0

    /// - Parameter maximumCount: at least 2 (a pair is the least that can be merged); smaller values are taken as 2.
    package init(maximumCount: Int) {
        self.maximumCount = max(maximumCount, Profile.ReportOptions.maxIntervalsRange.lowerBound)
    }

    /// Whether entries were merged (the series no longer holds every base interval on its own).
    package var isDownsampled: Bool { factor > 1 }

    /// How many entries the series holds.
    package var entryCount: Int { settled.count + (last == nil ? 0 : 1) }

    /// The entries, oldest first, at rest (the last one compressed too): nothing is decoded.
    package var entries: [RunResult.Interval] {
        guard var last else { return settled }
        last.compress()
        return settled + [last]
    }

    /// Appends the next base interval: into the last entry while that one covers fewer than ``factor``, else as a new
    /// entry, merging adjacent pairs first when the series is full. - Throws: if two histograms of one name have
    /// different layouts (never for a run's own recorders; possible for intervals read from a file).
    package mutating func append(_ interval: RunResult.Interval) throws(ReportFormatError) {
        if count / factor >= entryCount && entryCount == maximumCount { try coarsen() }
        if count / factor < entryCount, var filling = last {
            last = nil  // `filling` the only reference: the merge adds into its histograms in place, copying none
            defer { last = filling }
            let before = filling.histogramSlots
            try Self.merge(interval, into: &filling)
            histogramSlots += filling.histogramSlots - before
        } else {
            if var previous = last {
                previous.compress()
                settled.append(previous)
            }
            last = interval
            histogramSlots += interval.histogramSlots
        }
        count += 1
    }

    /// Merges adjacent pairs of entries, decoding one pair at a time: `factor` doubles, the entries halve (rounded up;
    /// an odd last entry stays alone and now covers fewer than ``factor`` base intervals).
    private mutating func coarsen() throws(ReportFormatError) {
        let all = entries
        var merged: [RunResult.Interval] = []
        merged.reserveCapacity(all.count / 2 + 1)
        for index in stride(from: 0, to: all.count, by: 2) {
            guard index + 1 < all.count else {
                merged.append(all[index])
                break
            }
            var pair = all[index]
            try Self.merge(all[index + 1], into: &pair)
            merged.append(pair)
        }
        // The new last entry fills up again: held as it is (one entry decoded, whatever the series' length).
        if let newest = merged.popLast() {
            last = RunResult.Interval(start: newest.start, end: newest.end, liveConnections: newest.liveConnections,
                                      metrics: try newest.metrics)
        }
        settled = merged
        factor *= 2
        histogramSlots = settled.reduce(last?.histogramSlots ?? 0) { $0 + $1.histogramSlots }
    }

    /// The histogram slots `metrics` holds.
    package static func slots(_ metrics: MetricSet) -> Int { metrics.histograms.values.reduce(0) { $0 + $1.slotCount } }

    /// `later` added into `earlier`: the span of both, the connections live at the later one's end, and the metrics
    /// added exactly (``RunResult/Interval/add(_:)``: an entry at rest is decoded for it and compressed again).
    package static func merge(_ later: RunResult.Interval, into earlier: inout RunResult.Interval) throws(ReportFormatError) {
        try earlier.add(later)
    }

    /// `intervals` with every run of `ratio` consecutive entries merged into one (the last run may be shorter): what a
    /// series at factor `f` becomes at factor `f × ratio`. `ratio` 1 or less returns them as they are. Entries at rest
    /// stay so: one run is decoded at a time.
    package static func coarsened(_ intervals: [RunResult.Interval], by ratio: Int) throws(ReportFormatError)
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

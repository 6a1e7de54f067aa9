import Histogram
import Profile

/// A run's intervals as the HTML report charts them: at most ``maximumPoints`` buckets, each the exact sum of
/// consecutive intervals (histograms added slot by slot, counters added), so a percentile over time is the
/// percentile of the merged interval — never an average of percentiles — however long the run was.
package struct HTMLTimeline: Sendable {
    /// One charted point in time: the merged span, the connections live at its end and the most live at the end
    /// of any interval it merged, and what the span measured — its counters, and its histograms at rest (with their
    /// reported percentiles computed: a chart of p50/p90/p99/p99.9 decodes nothing).
    package struct Bucket: Sendable {
        package var start: Duration
        package var end: Duration
        package var liveConnections: Int
        package var peakConnections: Int
        /// Counters, disconnects and errors (no histograms).
        package var counts: MetricSet
        /// The merged histograms, compressed (a clamped count is in the figures only: the charts draw percentiles).
        package var histograms: [String: CompressedHistogram]

        /// The span's length in seconds (0 for a degenerate interval: rates then have no point).
        package var seconds: Double { max(0, (end - start).seconds) }
        /// Where the bucket is drawn: at its end (the moment its interval closed).
        package var x: Double { end.seconds }

        /// `count` of the span per second; nil when the span has no length.
        package func perSecond(_ count: UInt64) -> Double? { seconds > 0 ? Double(count) / seconds : nil }

        /// Percentile `percentile` of histogram `name`; nil without samples. A reported percentile is read from the
        /// figures; another decodes the blob (compressed here from a histogram that decoded: it decodes again).
        package func value(_ name: String, atPercentile percentile: Double) -> UInt64? {
            guard let histogram = histograms[name], let figures = histogram.figures, figures.count > 0 else { return nil }
            if let index = MetricSet.reportedPercentiles.firstIndex(where: { $0.percentile == percentile }) {
                return figures.percentiles[index]
            }
            // Compressed here from a histogram this build held: it decodes (nil only if it did not, never the case).
            return (try? histogram.decoded(at: name))?.value(atPercentile: percentile)
        }
    }

    /// The most points a chart of the report draws: a few hundred keep a chart readable and the file small (a
    /// 24-hour soak at 1-second intervals would otherwise draw 86,400).
    package static let maximumPoints = 300

    package var buckets: [Bucket]
    /// How many intervals each bucket merges (the last may merge fewer).
    package var factor: Int

    /// Merges `intervals` in runs of `factor` = ⌈count / maximumPoints⌉ consecutive intervals, decoding one interval
    /// at a time into the bucket being built and putting each bucket at rest. - Throws: ``ReportFormatError`` for an
    /// interval blob (of a report read back) that does not decode, by its place.
    package init(_ intervals: [RunResult.Interval], maximumPoints: Int = HTMLTimeline.maximumPoints)
        throws(ReportFormatError)
    {
        let limit = max(1, maximumPoints)
        factor = max(1, (intervals.count + limit - 1) / limit)
        buckets = []
        buckets.reserveCapacity(min(intervals.count, limit))
        var index = 0
        while index < intervals.count {
            let group = intervals[index..<min(intervals.count, index + factor)]
            var metrics = try group.first!.metrics
            for interval in group.dropFirst() {
                // Intervals of one report share one histogram layout; a crafted file whose layouts differ keeps
                // what adds (the charts are a view: the report's totals are never computed from them).
                let other = try interval.metrics
                try? metrics.add(other)
            }
            var counts = metrics
            counts.histograms = [:]
            buckets.append(Bucket(
                start: group.first!.start, end: group.last!.end, liveConnections: group.last!.liveConnections,
                peakConnections: group.map(\.liveConnections).max()!, counts: counts,
                histograms: metrics.histograms.mapValues(CompressedHistogram.init)))
            index += factor
        }
    }

    /// The bucket whose end is `x`, for hover labels.
    package func bucket(endingAt x: Double) -> Bucket? {
        // Buckets are in time order: a binary search finds the one drawn at x.
        var low = 0, high = buckets.count - 1
        while low <= high {
            let middle = (low + high) / 2
            if buckets[middle].x == x { return buckets[middle] }
            if buckets[middle].x < x { low = middle + 1 } else { high = middle - 1 }
        }
        return nil
    }

    /// The hover label of the bucket drawn at `x`: its span, `12s–13s`.
    package func label(_ x: Double) -> String {
        guard let bucket = bucket(endingAt: x) else { return SVGChart.secondsLabel(x) }
        return SVGChart.secondsLabel(bucket.start.seconds) + "–" + SVGChart.secondsLabel(bucket.end.seconds)
    }

    /// Percentile `percentile` of histogram `name` per bucket (nil where the bucket has no samples).
    package func percentile(_ name: String, _ percentile: Double) -> [(x: Double, y: Double?)] {
        buckets.map { bucket in (bucket.x, bucket.value(name, atPercentile: percentile).map { Double($0) }) }
    }

    /// `count(counts)` per second of each bucket (its counters, disconnects and errors).
    package func rate(_ count: (MetricSet) -> UInt64) -> [(x: Double, y: Double?)] {
        buckets.map { ($0.x, $0.perSecond(count($0.counts))) }
    }

    /// Counter `name` per second of each bucket.
    package func rate(_ name: String) -> [(x: Double, y: Double?)] { rate { $0.counter(name) } }
}

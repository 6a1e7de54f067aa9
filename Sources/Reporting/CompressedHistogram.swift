import Histogram
import JSON

/// A histogram at rest: its report blob (HdrHistogram's V2 compressed form in base64, lossless for every count), the
/// slots it needs once decoded, and — when this build compressed it — the report figures computed then. What an
/// interval keeps of its histograms (``RunResult/Interval``), whether the series built it or a report was read: a few
/// hundred bytes instead of the layout's 188 KB, decoded only by whoever uses it, one at a time.
///
/// The report writes an entry from ``figures`` and ``serialized`` without decoding; a blob read from a file has no
/// figures (they are the file's claims, not checked) and is decoded once when written again.
package struct CompressedHistogram: Sendable, Equatable {
    /// The blob as a report stores it (`Histogram.serialized()`): shared with the parsed document it was read from.
    package let serialized: String
    /// The counts the layout holds once decoded (what a decode allocates, 8 bytes each).
    package let slotCount: Int
    /// The report's figures, when this build compressed the histogram; nil for a blob read from a file.
    package let figures: HistogramFigures?

    /// `histogram` compressed, its figures computed (it must hold no clamped sample: the blob does not carry that
    /// count; an interval keeps such a histogram as it is).
    package init(_ histogram: Histogram) {
        serialized = histogram.serialized()
        slotCount = histogram.slotCount
        figures = HistogramFigures(histogram)
    }

    /// A blob read from a report: its layout checked from the payload header and `slotCount` taken from `budget`
    /// (the counts are not inflated). - Throws: ``ReportFormatError`` naming `path`.
    package init(reading text: String, at path: String, budget: inout HistogramDecodeBudget) throws(ReportFormatError) {
        do {
            slotCount = try Histogram.slotCount(serialized: text, maximumSlots: budget.remainingSlots)
        } catch {
            throw ReportFormatError(path: path, reason: error.description)
        }
        budget.remainingSlots -= slotCount
        serialized = text
        figures = nil
    }

    /// The histogram, decoded. - Throws: ``ReportFormatError`` naming `path` when the blob (read from a file) does not
    /// decode: a count that overflows, a torn or corrupt zlib stream.
    package func decoded(at path: String) throws(ReportFormatError) -> Histogram {
        do {
            return try Histogram(serialized: serialized, maximumSlots: slotCount)
        } catch {
            throw ReportFormatError(path: path, reason: error.description)
        }
    }
}

/// What a report says of a histogram besides its blob: count, minimum, mean, standard deviation, the reported
/// percentiles, maximum and the clamped count (``MetricSet/reportedPercentiles``, in that order in the JSON).
package struct HistogramFigures: Sendable, Equatable {
    package var count: UInt64
    package var minimum: UInt64
    package var mean: Double
    package var standardDeviation: Double
    /// One per ``MetricSet/reportedPercentiles``.
    package var percentiles: [UInt64]
    package var maximum: UInt64
    package var clamped: UInt64

    package init(_ histogram: Histogram) {
        count = histogram.totalCount
        minimum = histogram.minimum
        mean = rounded(histogram.mean)
        standardDeviation = rounded(histogram.standardDeviation)
        percentiles = MetricSet.reportedPercentiles.map { histogram.value(atPercentile: $0.percentile) }
        maximum = histogram.maximum
        clamped = histogram.clampedCount
    }

    /// The report entry of histogram `name`: these figures and `serialized` (the blob) last.
    package func entry(name: String, serialized: String) -> JSONValue {
        var entry: JSONObject = [
            "unit": .string(MetricSet.unit(of: name)), "count": JSONValue(count), "min": JSONValue(minimum),
            "mean": .number(mean), "stdev": .number(standardDeviation),
        ]
        for (index, reported) in MetricSet.reportedPercentiles.enumerated() {
            entry[reported.key] = JSONValue(percentiles[index])
        }
        entry["max"] = JSONValue(maximum)
        if clamped > 0 { entry["clamped"] = JSONValue(clamped) }
        entry["histogram"] = .string(serialized)
        return .object(entry)
    }
}

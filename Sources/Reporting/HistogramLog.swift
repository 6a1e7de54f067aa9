import Foundation
import Histogram

/// An HdrHistogram interval log (format 1.3, as HdrHistogram's `HistogramLogWriter` writes it): one line
/// per interval and metric, tagged with the metric's name, each carrying the interval's compressed
/// histogram. HdrHistogram's own tools (HistogramLogProcessor, HdrHistogramVisualizer, the Python
/// `hdrh.log` reader) read it. Values are microseconds; `Interval_Max` is in milliseconds.
package enum HistogramLog {
    /// One interval histogram of one tag (metric).
    package struct Entry: Sendable {
        package var tag: String
        /// Seconds from the log's start.
        package var start: Double
        package var length: Double
        package var histogram: Histogram

        package init(tag: String, start: Double, length: Double, histogram: Histogram) {
            self.tag = tag
            self.start = start
            self.length = length
            self.histogram = histogram
        }
    }

    package static func text(entries: [Entry], startTime: Date, comment: String? = nil) -> String {
        header(startTime: startTime, comment: comment) + entries.map(line).joined()
    }

    /// The log's header lines (each ending in a line end): what ``line(_:)``s follow, so a long log streams.
    package static func header(startTime: Date, comment: String? = nil) -> String {
        let epoch = startTime.timeIntervalSince1970
        let formatter = ISO8601DateFormatter()
        var lines = ["#[Histogram log format version 1.3]"]
        if let comment { lines.append("#" + comment.replacingOccurrences(of: "\n", with: " ")) }
        lines.append("#[StartTime: \(fixed(epoch)) (seconds since epoch), \(formatter.string(from: startTime))]")
        lines.append("#[BaseTime: \(fixed(epoch)) (seconds since epoch)]")
        lines.append("#[Values in microseconds; Interval_Max in milliseconds]")
        lines.append("\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")
        return lines.joined(separator: "\n") + "\n"
    }

    /// One interval histogram's line, with its line end.
    package static func line(_ entry: Entry) -> String {
        let tag = entry.tag.map { $0 == "," || $0 == " " ? "_" : $0 }
        return "Tag=\(String(tag)),\(fixed(entry.start)),\(fixed(entry.length)),"
            + "\(fixed(Double(entry.histogram.maximum) / 1000)),\(entry.histogram.serialized())\n"
    }

    /// Three decimals, as the HdrHistogram writers print timestamps.
    private static func fixed(_ value: Double) -> String {
        let thousandths = saturatedInt64((value * 1000).rounded())  // a crafted report's maximum can pass 2^63
        let fraction = String(abs(thousandths % 1000))
        return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}

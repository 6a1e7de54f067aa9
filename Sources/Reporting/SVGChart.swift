import Foundation
import JSON

/// A line chart as a card of the HTML report: a caption with the title and the legend (HTML, so long names wrap),
/// then inline SVG. Nothing is fetched and no font is embedded, so a report stays one file that renders the same
/// everywhere. The points' values ride along in `data-hover` (JSON in an escaped attribute) for the page's
/// hover script; without the script the chart is the same picture.
package struct SVGChart: Sendable {
    /// One line of a chart: its label, colour and points; a nil `y` is a gap (the line breaks there).
    package struct Series: Sendable {
        package var name: String
        package var color: String
        package var points: [(x: Double, y: Double?)]
        package var isDashed: Bool

        package init(name: String, color: String, points: [(x: Double, y: Double?)], isDashed: Bool = false) {
            self.name = name
            self.color = color
            self.points = points
            self.isDashed = isDashed
        }
    }

    /// What the x axis shows.
    package enum Axis: Sendable {
        /// Seconds from the start of the run.
        case seconds
        /// Percentiles on HdrHistogram's log axis: x = log10(1 / (1 − p)), ticks at 90%, 99%, 99.9%, …
        case percentileSpectrum
    }

    /// A moment marked on a seconds axis (a chaos event): a dashed vertical line with its label as a tooltip.
    package struct Marker: Sendable {
        package var x: Double
        package var label: String
        package init(x: Double, label: String) {
            self.x = x
            self.label = label
        }
    }

    package var id: String
    package var title: String
    /// A short remark beside the title (`none`, `every 4 intervals merged`).
    package var note: String?
    package var series: [Series]
    package var xAxis: Axis
    /// Formats a y value, for tick labels and hover values.
    package var yFormat: @Sendable (Double) -> String
    /// The hover label of an x value (seconds charts: the span of the bucket drawn there).
    package var xLabel: @Sendable (Double) -> String
    package var markers: [Marker] = []
    /// The drawing's own size; the page scales it to the card's width.
    package var width = 420.0
    package var height = 220.0

    package init(
        id: String, title: String, note: String? = nil, series: [Series], xAxis: Axis,
        yFormat: @escaping @Sendable (Double) -> String, xLabel: (@Sendable (Double) -> String)? = nil
    ) {
        self.id = id
        self.title = title
        self.note = note
        self.series = series
        self.xAxis = xAxis
        self.yFormat = yFormat
        if let xLabel {
            self.xLabel = xLabel
        } else if xAxis == .seconds {
            self.xLabel = { SVGChart.secondsLabel($0) }
        } else {
            self.xLabel = { SVGChart.percentileLabel($0) }
        }
    }

    /// The x coordinate of percentile `p` (0–100) on the spectrum axis.
    package static func spectrumX(_ percentile: Double) -> Double {
        let remaining = max(1e-7, 1 - percentile / 100)
        return -log10(remaining)
    }

    /// The percentile at spectrum coordinate `x`, as `p99.9` (as many digits as the position needs).
    package static func percentileLabel(_ x: Double) -> String {
        let percentile = 100 * (1 - pow10(-x))
        let digits = max(2, Int(x.rounded(.down)) + 2)
        return "p" + String(format: "%.\(digits)g", percentile)
    }

    /// Seconds as an axis reads them: `0`, `45s`, `1.5s`, `2m`, `2m30s`, `1h`, `1h05m`.
    package static func secondsLabel(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds > 0 else { return "0" }
        if seconds < 60 {
            let tenths = (seconds * 10).rounded() / 10
            return (tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)) + "s"
        }
        guard seconds < 3.6e15 else { return "∞" }
        let whole = Int64(seconds.rounded())
        if whole < 3600 { return "\(whole / 60)m" + (whole % 60 == 0 ? "" : pad(whole % 60) + "s") }
        let minutes = (whole + 30) / 60
        return "\(minutes / 60)h" + (minutes % 60 == 0 ? "" : pad(minutes % 60) + "m")
    }

    package func render() -> String {
        let values = series.flatMap { $0.points.compactMap(\.y) }.filter(\.isFinite)
        let xs = series.flatMap { $0.points.map(\.x) }.filter(\.isFinite)
        let xMax = max(xs.max() ?? 1, xAxis == .percentileSpectrum ? 2 : 1e-9)
        let yMax = niceCeiling(values.contains { $0 > 0 } ? values.max()! : 1)
        // A chart without values has no scale to label.
        let yTicks = (0...4).map { yMax * Double($0) / 4 }.map { ($0, values.isEmpty ? "" : yFormat($0)) }
        // Room on the left for the longest tick label (about 6 units a character at the page's tick size).
        let left = min(100, max(36, 12 + 6 * Double(yTicks.map(\.1.count).max() ?? 0))), right = 12.0, top = 10.0, bottom = 30.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        func px(_ x: Double) -> Double { left + min(max(x / xMax, 0), 1) * plotWidth }
        func py(_ y: Double) -> Double { top + plotHeight - min(max(y / yMax, 0), 1) * plotHeight }

        var html = "<figure class=\"card chart-card\"><figcaption><span class=\"title\">\(escape(title))</span>"
        if let note { html += " <span class=\"note\">\(escape(note))</span>" }
        html += "<span class=\"keys\">"
        for series in series {
            html += "<span class=\"key\"><i class=\"\(series.isDashed ? "dashed" : "solid")\" style=\"border-color:\(series.color)\"></i>"
                + "\(escape(series.name))</span>"
        }
        html += "</span></figcaption>"
        html += "<svg id=\"\(escape(id))\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(n(width)) \(n(height))\" "
        html += "role=\"img\" aria-label=\"\(escape(title))\" data-hover=\"\(escape(hoverData(px: px, py: py)))\">"
        for (value, label) in yTicks {
            let y = py(value)
            html += "<line x1=\"\(n(left))\" y1=\"\(n(y))\" x2=\"\(n(left + plotWidth))\" y2=\"\(n(y))\" class=\"gridline\"/>"
            html += "<text x=\"\(n(left - 6))\" y=\"\(n(y + 4))\" class=\"tick\" text-anchor=\"end\">\(escape(label))</text>"
        }
        for (x, label) in xTicks(xMax) {
            html += "<line x1=\"\(n(px(x)))\" y1=\"\(n(top))\" x2=\"\(n(px(x)))\" y2=\"\(n(top + plotHeight))\" class=\"gridline\"/>"
            html += "<text x=\"\(n(px(x)))\" y=\"\(n(top + plotHeight + 16))\" class=\"tick\" text-anchor=\"middle\">\(escape(label))</text>"
        }
        html += "<rect x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(plotWidth))\" height=\"\(n(plotHeight))\" class=\"frame\"/>"
        for marker in markers where marker.x.isFinite && marker.x >= 0 && marker.x <= xMax {
            html += "<line x1=\"\(n(px(marker.x)))\" y1=\"\(n(top))\" x2=\"\(n(px(marker.x)))\" y2=\"\(n(top + plotHeight))\" "
                + "class=\"marker\"><title>\(escape(marker.label))</title></line>"
        }
        if values.isEmpty {
            html += "<text x=\"\(n(left + plotWidth / 2))\" y=\"\(n(top + plotHeight / 2))\" class=\"empty\" "
                + "text-anchor=\"middle\">no samples</text>"
        }
        for series in series {
            html += path(series, px: px, py: py)
        }
        // The hover script moves these: a vertical cursor and one dot per series.
        html += "<g class=\"cursor\"><line x1=\"0\" y1=\"\(n(top))\" x2=\"0\" y2=\"\(n(top + plotHeight))\"/>"
        for series in series { html += "<circle r=\"3.5\" cx=\"0\" cy=\"0\" fill=\"\(series.color)\"/>" }
        return html + "</g></svg></figure>"
    }

    /// One series as a path (a new subpath after each gap) with a dot for a point that has no neighbour.
    private func path(_ series: Series, px: (Double) -> Double, py: (Double) -> Double) -> String {
        var commands: [String] = []
        var dots = ""
        let points = series.points
        for (index, point) in points.enumerated() {
            guard let y = point.y, y.isFinite, point.x.isFinite else { continue }
            let hasPrevious = index > 0 && points[index - 1].y?.isFinite == true
            let hasNext = index + 1 < points.count && points[index + 1].y?.isFinite == true
            commands.append((hasPrevious ? "L" : "M") + n(px(point.x)) + "," + n(py(y)))
            if !hasPrevious && !hasNext {
                dots += "<circle cx=\"\(n(px(point.x)))\" cy=\"\(n(py(y)))\" r=\"2.5\" fill=\"\(series.color)\"/>"
            }
        }
        var svg = ""
        if !commands.isEmpty {
            svg += "<path d=\"\(commands.joined(separator: " "))\" fill=\"none\" stroke=\"\(series.color)\" stroke-width=\"1.75\""
            svg += series.isDashed ? " stroke-dasharray=\"6 4\"" : ""
            svg += " stroke-linejoin=\"round\" class=\"series\" data-series=\"\(escape(series.name))\"/>"
        }
        return svg + dots
    }

    /// What the hover script reads: the x positions (drawing coordinates) of every point, their labels, and per
    /// series the y position and the formatted value at each of those x (null where it has no point).
    private func hoverData(px: (Double) -> Double, py: (Double) -> Double) -> String {
        let xs = Array(Set(series.flatMap { $0.points.filter { $0.y?.isFinite == true && $0.x.isFinite }.map(\.x) })).sorted()
        let slot = Dictionary(uniqueKeysWithValues: xs.enumerated().map { ($1, $0) })
        var entries: [JSONValue] = []
        for series in series {
            var ys = [JSONValue](repeating: .null, count: xs.count)
            var labels = [JSONValue](repeating: .null, count: xs.count)
            for point in series.points {
                guard let y = point.y, y.isFinite, let index = slot[point.x] else { continue }
                ys[index] = .number(tenth(py(y)))
                labels[index] = .string(yFormat(y))
            }
            entries.append(["n": .string(series.name), "c": .string(series.color), "y": .array(ys), "v": .array(labels)])
        }
        let document: JSONValue = [
            "x": .array(xs.map { .number(tenth(px($0))) }), "t": .array(xs.map { .string(xLabel($0)) }),
            "s": .array(entries),
        ]
        return document.formatted(pretty: false)
    }

    private func xTicks(_ xMax: Double) -> [(Double, String)] {
        switch xAxis {
        case .percentileSpectrum:
            let labels = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"]
            return (0...min(6, Int(xMax.rounded(.down)))).map { (Double($0), labels[$0]) }
        case .seconds:
            let steps: [Double] = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                                   21600, 43200, 86400]
            let step = steps.first { xMax / $0 <= 6 } ?? niceCeiling(xMax / 6)
            return stride(from: 0.0, through: xMax, by: step).map { ($0, SVGChart.secondsLabel($0)) }
        }
    }

    /// 1, 2 or 5 times a power of ten, at or above `value`.
    private func niceCeiling(_ value: Double) -> Double {
        let magnitude = pow10(floor(log10(value)))
        for factor in [1.0, 2, 5, 10] where factor * magnitude >= value { return factor * magnitude }
        return 10 * magnitude
    }
}

/// Minimal HTML escaping for text and attribute values.
package func escape(_ text: String) -> String {
    var result = ""
    for character in text {
        switch character {
        case "&": result += "&amp;"
        case "<": result += "&lt;"
        case ">": result += "&gt;"
        case "\"": result += "&quot;"
        case "'": result += "&#39;"
        default: result.append(character)
        }
    }
    return result
}

/// A coordinate with at most one decimal (small files, stable output).
private func n(_ value: Double) -> String {
    let tenths = (value * 10).rounded() / 10
    // Coordinates stay within the plot, but a guard keeps ±inf (a zero scale) from trapping Int64(_:).
    return tenths == tenths.rounded() && abs(tenths) < 0x1p62 ? String(Int64(tenths)) : "\(tenths)"
}

private func tenth(_ value: Double) -> Double { (value * 10).rounded() / 10 }

private func pad(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }

private func pow10(_ exponent: Double) -> Double { exp(exponent * log(10)) }

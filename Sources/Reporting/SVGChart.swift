import Glibc

/// A line chart as inline SVG: no scripts, no fonts or files fetched, so a report stays one
/// self-contained file that renders the same everywhere.
package struct SVGChart: Sendable {
    /// One line of a chart: its label, colour and points.
    package struct Series: Sendable {
        package var name: String
        package var color: String
        package var points: [(x: Double, y: Double)]
        package var isDashed: Bool

        package init(name: String, color: String, points: [(x: Double, y: Double)], isDashed: Bool = false) {
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

    package var id: String
    package var title: String
    package var series: [Series]
    package var xAxis: Axis
    /// Formats a y value for tick labels.
    package var yFormat: @Sendable (Double) -> String
    package var width = 760.0
    package var height = 280.0

    package init(id: String, title: String, series: [Series], xAxis: Axis, yFormat: @escaping @Sendable (Double) -> String) {
        self.id = id
        self.title = title
        self.series = series
        self.xAxis = xAxis
        self.yFormat = yFormat
    }

    /// The x coordinate of percentile `p` (0–100) on the spectrum axis.
    package static func spectrumX(_ percentile: Double) -> Double {
        let remaining = max(1e-7, 1 - percentile / 100)
        return -log10(remaining)
    }

    package func render() -> String {
        let left = 72.0, right = 16.0, top = 34.0, bottom = 42.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let allPoints = series.flatMap(\.points)
        let xMax = max(allPoints.map(\.x).max() ?? 1, xAxis == .percentileSpectrum ? 2 : 1e-9)
        let yMax = niceCeiling(max(allPoints.map(\.y).max() ?? 1, 1e-9))
        func px(_ x: Double) -> Double { left + x / xMax * plotWidth }
        func py(_ y: Double) -> Double { top + plotHeight - y / yMax * plotHeight }

        var svg = "<svg id=\"\(escape(id))\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(n(width)) \(n(height))\" "
        svg += "role=\"img\" aria-label=\"\(escape(title))\">"
        svg += "<text x=\"\(n(left))\" y=\"20\" class=\"title\">\(escape(title))</text>"
        // Grid and y ticks.
        for step in 0...4 {
            let value = yMax * Double(step) / 4
            let y = py(value)
            svg += "<line x1=\"\(n(left))\" y1=\"\(n(y))\" x2=\"\(n(left + plotWidth))\" y2=\"\(n(y))\" class=\"grid\"/>"
            svg += "<text x=\"\(n(left - 6))\" y=\"\(n(y + 4))\" class=\"tick\" text-anchor=\"end\">\(escape(yFormat(value)))</text>"
        }
        // x ticks.
        for (x, label) in xTicks(xMax) {
            svg += "<line x1=\"\(n(px(x)))\" y1=\"\(n(top))\" x2=\"\(n(px(x)))\" y2=\"\(n(top + plotHeight))\" class=\"grid\"/>"
            svg += "<text x=\"\(n(px(x)))\" y=\"\(n(top + plotHeight + 16))\" class=\"tick\" text-anchor=\"middle\">\(escape(label))</text>"
        }
        svg += "<text x=\"\(n(left + plotWidth / 2))\" y=\"\(n(height - 6))\" class=\"axis\" text-anchor=\"middle\">"
        svg += xAxis == .seconds ? "seconds" : "percentile"
        svg += "</text>"
        svg += "<rect x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(plotWidth))\" height=\"\(n(plotHeight))\" class=\"frame\"/>"
        // Lines and the legend.
        var legendX = left + plotWidth
        for series in series.reversed() {
            legendX -= Double(series.name.count) * 7 + 30
            svg += "<line x1=\"\(n(legendX))\" y1=\"16\" x2=\"\(n(legendX + 16))\" y2=\"16\" stroke=\"\(series.color)\" stroke-width=\"3\"/>"
            svg += "<text x=\"\(n(legendX + 20))\" y=\"20\" class=\"legend\">\(escape(series.name))</text>"
        }
        for series in series where !series.points.isEmpty {
            let path = series.points.enumerated().map { index, point in
                (index == 0 ? "M" : "L") + n(px(point.x)) + "," + n(py(point.y))
            }.joined(separator: " ")
            svg += "<path d=\"\(path)\" fill=\"none\" stroke=\"\(series.color)\" stroke-width=\"2\""
            svg += series.isDashed ? " stroke-dasharray=\"6 4\"" : ""
            svg += " class=\"series\" data-series=\"\(escape(series.name))\"/>"
            if series.points.count == 1 {
                svg += "<circle cx=\"\(n(px(series.points[0].x)))\" cy=\"\(n(py(series.points[0].y)))\" r=\"3\" fill=\"\(series.color)\"/>"
            }
        }
        return svg + "</svg>"
    }

    private func xTicks(_ xMax: Double) -> [(Double, String)] {
        switch xAxis {
        case .percentileSpectrum:
            let labels = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"]
            return (0...min(6, Int(xMax.rounded(.down)))).map { (Double($0), labels[$0]) }
        case .seconds:
            let step = niceCeiling(xMax / 6)
            return stride(from: 0.0, through: xMax, by: step).map { ($0, n($0)) }
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

private func pow10(_ exponent: Double) -> Double { exp(exponent * log(10)) }

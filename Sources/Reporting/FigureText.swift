import Profile

/// How a figure reads where people read it: a threshold's actual value, a compared statistic, a change and its
/// p-value. One place for the run summary, `compare`'s table and JUnit, so a figure reads the same in all three.
package enum FigureText {
    /// A threshold's actual value in its metric's unit (`12.3ms`, `1.5 MiB/s`, `0.1%`, `12.0/s`, `1,234`), or why
    /// there is none (`no samples`, or a step that never succeeded).
    package static func actual(_ outcome: RunResult.ThresholdResult) -> String {
        guard let actual = outcome.actual else { return outcome.note ?? "no samples" }
        return figure(actual, of: outcome.threshold)
    }

    /// A value of `threshold`'s statistic in its metric's unit.
    package static func figure(_ value: Double, of threshold: Threshold) -> String {
        switch (threshold.metric.kind, threshold.statistic) {
        case (.latency, .count), (.throughput, .count): grouped(saturated(value))
        case (.throughput, _): formatBytes(saturatedInt64(value * 1024)) + "/s"
        case (.latency, _): formatMicroseconds(value)
        case (_, .rate): String(format1: value * 100) + "%"
        case (_, .perSecond): String(format1: value) + "/s"
        default: grouped(saturated(value))
        }
    }

    /// The limit as the profile's author wrote it, comparison included (`< 10ms`, `<= 0.01%`): exact, where the
    /// actual's one decimal would show a 0.01% limit as 0.0%.
    package static func limit(of threshold: Threshold) -> String {
        // A parsed expression's last two words are its comparison and its value.
        let words = threshold.expression.split(whereSeparator: \.isWhitespace).suffix(2)
        guard words.count == 2, words.first == Substring(threshold.comparison.rawValue) else {
            return "\(threshold.comparison.rawValue) \(figure(threshold.limit, of: threshold))"
        }
        return words.joined(separator: " ")
    }

    /// A compared statistic in its row's unit (`us`, KiB/s, `/s`, or a fraction shown in percent).
    package static func statistic(_ value: Double, unit: String) -> String {
        switch unit {
        case Metric.Unit.microseconds.rawValue: formatMicroseconds(value)
        case Metric.Unit.kibibytesPerSecond.rawValue: formatBytes(saturatedInt64(value * 1024)) + "/s"
        case "/s": grouped(saturated(value.rounded()))
        default: String(format1: value * 100) + "%"
        }
    }

    /// Head against base: `+12.5%`, `-3.0%`, or `from 0` when base is 0.
    package static func change(_ row: ComparisonRow) -> String {
        guard let change = row.changePercent else { return "from 0" }
        return (change >= 0 ? "+" : "") + String(format1: change) + "%"
    }

    /// `p=0.042`, `p<0.001`.
    package static func pValue(_ p: Double) -> String {
        guard p >= 0.001 else { return "p<0.001" }
        let thousandths = saturated((p * 1000).rounded())
        guard thousandths < 1000 else { return "p=1.000" }
        let digits = String(thousandths)
        return "p=0." + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }
}

extension String {
    /// One decimal place, without Foundation's format strings.
    package init(format1 value: Double) {
        // NaN and figures beyond Int64 (crafted reports) must print something, not trap.
        let scaled = saturatedInt64((value * 10).rounded())
        self = "\(scaled / 10).\((scaled % 10).magnitude)"
    }
}

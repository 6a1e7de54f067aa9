/// Writes the lines of a Prometheus text (0.0.4) or OpenMetrics (1.0.0) exposition: family headers in each format's
/// naming (OpenMetrics names a counter's family without `_total` and an info family without `_info`), samples with
/// escaped label values. Pure; appends bytes (a scrape of a few hundred KiB is built without a string per line).
struct ExpositionWriter {
    let format: PrometheusExposition.Format
    var bytes: [UInt8] = []

    init(format: PrometheusExposition.Format) {
        self.format = format
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Room for a typical scrape, so the buffer grows once or twice rather than a few dozen times.
    mutating func reserve(_ snapshot: MetricsSnapshot) {
        bytes.reserveCapacity(4096 + snapshot.scenarios.count * 64 * 1024)
    }

    /// A counter family; nothing when it has no series. `name` ends in `_total`.
    mutating func counter(_ name: String, help: String, series: [([(String, String)], UInt64)]) {
        guard !series.isEmpty else { return }
        family(format == .openMetrics && name.hasSuffix("_total") ? String(name.dropLast(6)) : name, type: "counter", help: help)
        for (labels, value) in series {
            append(seriesPrefix(name, labels))
            append(value)
            bytes.append(0x0A)
        }
    }

    /// A gauge family; nothing when it has no series.
    mutating func gauge(_ name: String, help: String, series: [([(String, String)], Double)]) {
        guard !series.isEmpty else { return }
        family(name, type: "gauge", help: help)
        for (labels, value) in series { sample(name, labels, Self.number(value)) }
    }

    /// An info metric (value 1): OpenMetrics' `info` type, a gauge in the Prometheus format. `name` ends in `_info`.
    mutating func info(_ name: String, help: String, labels: [(String, String)]) {
        if format == .openMetrics && name.hasSuffix("_info") {
            family(String(name.dropLast(5)), type: "info", help: help)
        } else {
            family(name, type: "gauge", help: help)
        }
        sample(name, labels, "1")
    }

    /// The `# HELP` and `# TYPE` lines of a family.
    mutating func family(_ name: String, type: String, help: String) {
        append("# HELP " + name + " " + escapedHelp(help) + "\n# TYPE " + name + " " + type + "\n")
    }

    /// One sample line: `name{label="value",...} value`.
    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: String) {
        append(seriesPrefix(name, labels))
        append(value)
        bytes.append(0x0A)
    }

    /// One histogram series: a `_bucket` line per bound (`bounds` are the `le` texts, `cumulative` their counts), the
    /// `+Inf` bucket (`count`), `_sum` and `_count`. The label text is escaped once for all its lines.
    mutating func histogram(_ name: String, _ labels: [(String, String)], bounds: [[UInt8]], cumulative: [UInt64], count: UInt64,
                            sum: Double) {
        let labelText = Self.labelText(labels)
        let bucketPrefix = Array((name + "_bucket{" + labelText + (labels.isEmpty ? "" : ",") + "le=\"").utf8)
        for (bound, value) in zip(bounds, cumulative) {
            bytes.append(contentsOf: bucketPrefix)
            bytes.append(contentsOf: bound)
            bytes.append(0x22)  // "} , byte by byte: an array literal here would allocate per line
            bytes.append(0x7D)
            bytes.append(0x20)
            append(value)
            bytes.append(0x0A)
        }
        bytes.append(contentsOf: bucketPrefix)
        append("+Inf\"} ")
        append(count)
        bytes.append(0x0A)
        sample(name + "_sum", labels, Self.number(sum))
        append(seriesPrefix(name + "_count", labels))
        append(count)
        bytes.append(0x0A)
    }

    /// `name{labels} ` (or `name `): what precedes a sample's value.
    private func seriesPrefix(_ name: String, _ labels: [(String, String)]) -> String {
        labels.isEmpty ? name + " " : name + "{" + Self.labelText(labels) + "} "
    }

    /// `a="x",b="y"`, values escaped.
    private static func labelText(_ labels: [(String, String)]) -> String {
        var text = ""
        for (index, (label, value)) in labels.enumerated() {
            if index > 0 { text += "," }
            text += label + "=\"" + escapedLabelValue(value) + "\""
        }
        return text
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Decimal digits of `value`, written in place (no string, no scratch array).
    private mutating func append(_ value: UInt64) {
        var digitCount = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digitCount += 1
        }
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0x30, count: digitCount))
        rest = value
        for position in stride(from: start + digitCount - 1, through: start, by: -1) {
            bytes[position] = 0x30 + UInt8(rest % 10)
            rest /= 10
        }
    }

    /// `\` `"` and line feed escaped, as both formats want in label values.
    static func escapedLabelValue(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 == 0x0A }) else { return value }
        var escaped = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// HELP text: `\` and line feed escaped; OpenMetrics escapes `"` too.
    private func escapedHelp(_ help: String) -> String {
        var escaped = ""
        for character in help.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\"" where format == .openMetrics: escaped += "\\\""
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// A sample value: a whole number without a fraction (`3`, not `3.0`), else Swift's shortest round-tripping
    /// text (Go's parser reads it); `+Inf`, `-Inf`, `NaN`.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 0x1p53 { return String(Int64(value)) }
        return value.description
    }
}

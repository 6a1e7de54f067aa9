/// Writes the lines of a Prometheus text (0.0.4) or OpenMetrics (1.0.0) exposition: family headers in each format's
/// naming (OpenMetrics names a counter's family without `_total` and an info family without `_info`), samples with
/// escaped label values. Pure.
struct ExpositionWriter {
    let format: PrometheusExposition.Format
    var text = ""

    init(format: PrometheusExposition.Format) {
        self.format = format
    }

    /// Room for a typical scrape, so the text grows once or twice rather than a few dozen times.
    mutating func reserve(_ snapshot: MetricsSnapshot) {
        text.reserveCapacity(4096 + snapshot.scenarios.count * 32 * 1024)
    }

    /// A counter family; nothing when it has no series. `name` ends in `_total`.
    mutating func counter(_ name: String, help: String, series: [([(String, String)], UInt64)]) {
        guard !series.isEmpty else { return }
        family(format == .openMetrics && name.hasSuffix("_total") ? String(name.dropLast(6)) : name, type: "counter", help: help)
        for (labels, value) in series { sample(name, labels, String(value)) }
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
        text += "# HELP " + name + " " + escapedHelp(help) + "\n# TYPE " + name + " " + type + "\n"
    }

    /// One sample line: `name{label="value",...} value`.
    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: String) {
        text += name
        if !labels.isEmpty {
            text += "{"
            for (index, (label, labelValue)) in labels.enumerated() {
                if index > 0 { text += "," }
                text += label + "=\"" + Self.escapedLabelValue(labelValue) + "\""
            }
            text += "}"
        }
        text += " " + value + "\n"
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

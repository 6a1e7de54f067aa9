/// Parses a duration written with a unit: `250us`, `50ms`, `10s`, `5m`, `2h` (fractions allowed: `1.5s`).
package func parseDuration(_ text: String) -> Duration? {
    let units: [(suffix: String, nanoseconds: Double)] = [
        ("us", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3600e9),
    ]
    for unit in units where text.hasSuffix(unit.suffix) {
        let number = text.dropLast(unit.suffix.count)
        // "10ms" also ends in "s": only accept a plain number before the unit.
        guard !number.isEmpty, number.allSatisfy({ $0.isNumber || $0 == "." }), let value = Double(number), value.isFinite
        else { continue }
        let nanoseconds = value * unit.nanoseconds
        guard nanoseconds < 9e18 else { return nil }
        return .nanoseconds(Int64(nanoseconds.rounded()))
    }
    return nil
}

/// A duration the way a person reads it: `850us`, `12.3ms`, `4.56s`, `2m05s`, `1h02m`.
package func formatDuration(_ duration: Duration) -> String {
    formatMicroseconds(Double(duration.microseconds))
}

package func formatMicroseconds(_ micros: Double) -> String {
    // Display only, but a figure can come from a report file: NaN, negative and beyond ~292,000 years never trap.
    guard micros.isFinite else { return micros.isNaN ? "n/a" : micros > 0 ? "∞" : "-∞" }
    guard micros >= 0 else { return "-" + formatMicroseconds(-micros) }
    guard micros < 9.0e18 else { return "∞" }
    func fixed(_ value: Double, _ unit: String) -> String {
        let digits = value >= 100 ? 0 : value >= 10 ? 1 : 2
        var scaled = (value * pow10(digits)).rounded() / pow10(digits)
        if digits == 0 { scaled = scaled.rounded() }
        let text = digits == 0 ? String(Int64(scaled)) : "\(scaled)"
        return text + unit
    }
    switch micros {
    case ..<1000: return "\(Int64(micros.rounded()))us"
    case ..<1_000_000: return fixed(micros / 1000, "ms")
    case ..<60_000_000: return fixed(micros / 1_000_000, "s")
    case ..<3_600_000_000:
        let seconds = Int64((micros / 1_000_000).rounded())
        return "\(seconds / 60)m" + pad2(seconds % 60) + "s"
    default:
        let minutes = Int64((micros / 60_000_000).rounded())
        return "\(minutes / 60)h" + pad2(minutes % 60) + "m"
    }
}

private func pow10(_ digits: Int) -> Double { digits == 0 ? 1 : digits == 1 ? 10 : 100 }
private func pad2(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }

extension Duration {
    /// Whole microseconds (truncated).
    package var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    /// Seconds as a Double.
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// Parses a byte count: `1048576`, `512k`/`512KiB`, `256M`/`256MiB`, `1G`/`1GiB` (binary units; `kB`, `MB`,
/// `GB` are decimal). Nil for anything else or a value that does not fit.
package func parseByteSize(_ text: String) -> Int64? {
    let trimmed = text.filter { $0 != " " }
    let digits = trimmed.prefix { $0.isNumber }
    guard !digits.isEmpty, let value = Int64(digits) else { return nil }
    let multiplier: Int64
    switch trimmed.dropFirst(digits.count).lowercased() {
    case "", "b": multiplier = 1
    case "k", "kib": multiplier = 1 << 10
    case "m", "mib": multiplier = 1 << 20
    case "g", "gib": multiplier = 1 << 30
    case "t", "tib": multiplier = 1 << 40
    case "kb": multiplier = 1_000
    case "mb": multiplier = 1_000_000
    case "gb": multiplier = 1_000_000_000
    default: return nil
    }
    let (result, overflow) = value.multipliedReportingOverflow(by: multiplier)
    return overflow ? nil : result
}

/// `1.5 GiB`, `12.0 MiB`, `512 B`: binary units with one decimal.
package func formatBytes(_ bytes: Int64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes)
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : "\((value * 10).rounded() / 10) \(units[unit])"
}

import HTTP1

/// The `key=value` pairs of a request target's query, taken literally (no percent-decoding: every value the
/// server reads is a number, a flag or a seed), with the per-request chaos overrides they carry.
///
/// Any shape parses without a trap: empty pieces (`?&&`), empty keys (`?=`, `?=x`), a key without `=`,
/// a `%` anywhere. The last of repeated keys wins.
struct HTTPQuery {
    private(set) var items: [String: String] = [:]

    init(target: String) {
        guard let mark = target.firstIndex(of: "?") else { return }
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            let key: Substring
            let value: Substring
            if let equals = pair.firstIndex(of: "=") {
                key = pair[..<equals]
                value = pair[pair.index(after: equals)...]
            } else {
                key = pair
                value = ""
            }
            guard !key.isEmpty else { continue }
            items[String(key)] = String(value)
        }
    }

    subscript(_ key: String) -> String? { items[key] }

    /// `base` with the overrides in this query (`drop_after=N&throttle=BPS&fail_rate=P&ranges=0`).
    /// - Throws: a ``QueryError`` naming the parameter whose value is not what it must be.
    func chaos(over base: HTTPChaosOptions) throws(QueryError) -> HTTPChaosOptions {
        var chaos = base
        if let text = self["drop_after"] {
            guard let value = Self.nonNegative(text) else { throw QueryError(parameter: "drop_after", expected: "a byte count") }
            chaos.dropAfterBytes = value
        }
        if let text = self["throttle"] {
            guard let value = Self.nonNegative(text) else { throw QueryError(parameter: "throttle", expected: "bytes per second") }
            // 0 means no cap, as `--http-throttle 0` and the clients' bandwidth caps do.
            chaos.throttleBytesPerSecond = value > 0 ? value : nil
        }
        if let text = self["fail_rate"] {
            guard let value = Double(text), value.isFinite, (0...1).contains(value) else {
                throw QueryError(parameter: "fail_rate", expected: "a probability from 0 to 1")
            }
            chaos.errorRate = value
        }
        if self["ranges"] == "0" { chaos.ignoresRanges = true }
        return chaos
    }

    /// `seed=S`, or 0.
    func seed() throws(QueryError) -> UInt64 {
        guard let text = self["seed"] else { return 0 }
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let seed = UInt64(text) else {
            throw QueryError(parameter: "seed", expected: "a whole number from 0 to 2^64-1")
        }
        return seed
    }

    /// Decimal digits only (no sign), fitting in `Int64`.
    static func nonNegative(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int64(text)
    }
}

/// A query parameter the server cannot use: answered 400 naming it.
struct QueryError: Error, CustomStringConvertible {
    var parameter: String
    var expected: String
    var description: String { "query parameter \(parameter): expected \(expected)" }
}

/// How long `bytes` take at `bytesPerSecond`, saturating (a huge count at a tiny rate waits "forever", never traps).
func pacingDelay(bytes: Int64, bytesPerSecond: Int64) -> Duration {
    guard bytesPerSecond > 0, bytes > 0 else { return .zero }
    let nanoseconds = Double(bytes) / Double(bytesPerSecond) * 1e9
    // One year bounds every wait: later than that is "never" for a test server, and it stays far from Int64's edge.
    return nanoseconds < 3.15e16 ? .nanoseconds(Int64(nanoseconds)) : .seconds(365 * 24 * 3600)
}

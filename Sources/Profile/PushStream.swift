/// The embedded server's push stream, for the `receive` pattern: a WebSocket opened on
/// `/push?interval=10ms&size=64` gets a binary message every `interval` (1ms–1h, default 100ms) of
/// `size` bytes (24 B–1 MiB, default 64): `WSLPUSH1`, a sequence number from 0 and the server's
/// loop-clock send time (both big-endian UInt64), then filler. The sequence lets clients count losses.
package struct PushStream: Sendable, Hashable {
    package static let magic = Array("WSLPUSH1".utf8)
    package static let headerSize = 24

    package var interval: Duration = .milliseconds(100)
    package var size = 64

    /// The stream a request target asks for, or nil if it is not a `/push` target. Out-of-range or
    /// malformed parameters fall back to the defaults (the server is a test target, not a validator).
    package init?(requestTarget: String) {
        let parts = requestTarget.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.first == "/push" else { return nil }
        guard parts.count == 2 else { return }
        for item in parts[1].split(separator: "&") {
            let pair = item.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            switch pair[0] {
            case "interval":
                if let duration = Self.parseInterval(String(pair[1])), duration >= .milliseconds(1), duration <= .seconds(3600) {
                    interval = duration
                }
            case "size":
                if let bytes = Int(pair[1]), (Self.headerSize...(1 << 20)).contains(bytes) { size = bytes }
            default: continue
            }
        }
    }

    private static func parseInterval(_ text: String) -> Duration? {
        if text.hasSuffix("ms"), let value = Int(text.dropLast(2)) { return .milliseconds(value) }
        if text.hasSuffix("s"), let value = Int(text.dropLast(1)) { return .seconds(value) }
        return nil
    }

    /// Message `sequence`, stamped with `sentNanoseconds`.
    package func message(sequence: UInt64, sentNanoseconds: UInt64) -> [UInt8] {
        var bytes = Self.magic
        bytes.reserveCapacity(size)
        for value in [sequence, sentNanoseconds] {
            for index in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64(index)))) }
        }
        bytes += repeatElement(UInt8(ascii: "p"), count: size - Self.headerSize)
        return bytes
    }

    /// Reads a push message's header; nil for anything else.
    package static func read(_ bytes: [UInt8]) -> (sequence: UInt64, sentNanoseconds: UInt64)? {
        guard bytes.count >= headerSize, bytes.starts(with: magic) else { return nil }
        let sequence = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
        let sent = bytes[16..<24].reduce(0) { $0 << 8 | UInt64($1) }
        return (sequence, sent)
    }
}

/// Incremental UTF-8 validation (RFC 3629) that fails on the first invalid byte, across any split.
///
/// Rejects overlong forms, surrogates (U+D800–U+DFFF) and code points above U+10FFFF. Feed a text
/// message's bytes in pieces (fragments, inflated chunks); at the end of the message ``isComplete``
/// must also hold (no code point cut off).
public struct UTF8Validator: Sendable, Hashable {
    private var remaining = 0
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    public init() {}

    /// True when no multi-byte sequence is open.
    public var isComplete: Bool { remaining == 0 }

    /// Validates the next bytes; returns the index (within `bytes`) of the first invalid byte, or nil.
    public mutating func firstInvalidIndex(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        let count = bytes.count
        guard let base = bytes.baseAddress else { return nil }
        while index < count {
            if remaining == 0 {
                // ASCII fast path: eight bytes at a time.
                while index + 8 <= count {
                    let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                    if word & 0x8080_8080_8080_8080 != 0 { break }
                    index += 8
                }
                guard index < count else { return nil }
                let byte = base[index]
                switch byte {
                case 0x00...0x7F: break
                case 0xC2...0xDF: remaining = 1; lower = 0x80; upper = 0xBF
                case 0xE0: remaining = 2; lower = 0xA0; upper = 0xBF
                case 0xE1...0xEC, 0xEE...0xEF: remaining = 2; lower = 0x80; upper = 0xBF
                case 0xED: remaining = 2; lower = 0x80; upper = 0x9F
                case 0xF0: remaining = 3; lower = 0x90; upper = 0xBF
                case 0xF1...0xF3: remaining = 3; lower = 0x80; upper = 0xBF
                case 0xF4: remaining = 3; lower = 0x80; upper = 0x8F
                default: return index
                }
            } else {
                let byte = base[index]
                guard byte >= lower && byte <= upper else { return index }
                remaining -= 1
                lower = 0x80
                upper = 0xBF
            }
            index += 1
        }
        return nil
    }

    /// Validates the next bytes; false on the first invalid byte.
    public mutating func validate(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { firstInvalidIndex(in: $0) } == nil
    }
}

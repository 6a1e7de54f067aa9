/// The header wsload puts at the front of every echo message, so each reply says which request it
/// answers and when that request was due: a sequence number (loss, duplication and reordering show as
/// gaps) and the intended send time in loop-clock nanoseconds (the open model measures from it).
///
/// Binary messages carry the 16 bytes as they are; text messages carry them as 32 lowercase hex digits.
package enum EchoPayload {
    package static let headerSize = 16

    /// Writes the header into the front of `message` (which must be at least `headerSize` bytes, or
    /// twice that for text). The rest of the message is left as it is (the filler).
    package static func stamp(_ message: inout [UInt8], sequence: UInt64, intendedNanoseconds: UInt64, isText: Bool) {
        if isText {
            message.withUnsafeMutableBufferPointer { writeTextHeader(sequence, intendedNanoseconds, into: $0) }
        } else {
            for index in 0..<8 {
                message[index] = UInt8(truncatingIfNeeded: sequence >> (56 - 8 * UInt64(index)))
                message[8 + index] = UInt8(truncatingIfNeeded: intendedNanoseconds >> (56 - 8 * UInt64(index)))
            }
        }
    }

    /// A text message of `count` bytes: the header as hex, then `filler`'s bytes after it (ASCII: the rest is the
    /// filler as it is), built in the string's own storage — one allocation, where stamping an array and decoding
    /// it into a string took two. `count` must be at least twice `headerSize` and at most `filler.count`.
    package static func text(count: Int, filler: [UInt8], sequence: UInt64, intendedNanoseconds: UInt64) -> String {
        precondition(count >= 2 * headerSize && count <= filler.count, "an echo text message is 32 to filler.count bytes")
        return String(unsafeUninitializedCapacity: count) { buffer in
            filler.withUnsafeBufferPointer { source in
                _ = buffer.initialize(fromContentsOf: UnsafeBufferPointer(rebasing: source[..<count]))
            }
            writeTextHeader(sequence, intendedNanoseconds, into: buffer)
            return count
        }
    }

    /// Reads the header back; nil if the message is too short or (text) not hex.
    package static func read(_ message: some Collection<UInt8>, isText: Bool) -> (sequence: UInt64, intendedNanoseconds: UInt64)? {
        // Contiguous messages (arrays, native strings' UTF-8) are read in place: no array per reply.
        if let header = message.withContiguousStorageIfAvailable({ read(UnsafeRawBufferPointer($0), isText: isText) }) {
            return header
        }
        if isText {
            let digits = Array(message.prefix(2 * headerSize))
            guard digits.count == 2 * headerSize, let sequence = readHex(digits[0..<16]), let time = readHex(digits[16..<32])
            else { return nil }
            return (sequence, time)
        }
        guard message.count >= headerSize else { return nil }
        var sequence: UInt64 = 0
        var time: UInt64 = 0
        var index = message.startIndex
        for _ in 0..<8 {
            sequence = sequence << 8 | UInt64(message[index])
            index = message.index(after: index)
        }
        for _ in 0..<8 {
            time = time << 8 | UInt64(message[index])
            index = message.index(after: index)
        }
        return (sequence, time)
    }

    private static func read(_ bytes: UnsafeRawBufferPointer, isText: Bool) -> (sequence: UInt64, intendedNanoseconds: UInt64)? {
        if isText {
            guard bytes.count >= 2 * headerSize, let sequence = readHex(bytes, at: 0), let time = readHex(bytes, at: 16)
            else { return nil }
            return (sequence, time)
        }
        guard bytes.count >= headerSize else { return nil }
        var sequence: UInt64 = 0
        var time: UInt64 = 0
        for index in 0..<8 {
            sequence = sequence << 8 | UInt64(bytes[index])
            time = time << 8 | UInt64(bytes[8 + index])
        }
        return (sequence, time)
    }

    private static func readHex(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64? {
        var value: UInt64 = 0
        for index in offset..<(offset + 16) {
            guard let digit = hexValue(bytes[index]) else { return nil }
            value = value << 4 | digit
        }
        return value
    }

    private static func hexValue(_ digit: UInt8) -> UInt64? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt64(digit - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt64(digit - UInt8(ascii: "a") + 10)
        default: nil
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// The text header: the sequence, then the intended time, each as 16 lowercase hex digits.
    private static func writeTextHeader(_ sequence: UInt64, _ intendedNanoseconds: UInt64,
                                        into buffer: UnsafeMutableBufferPointer<UInt8>) {
        writeHex(sequence, into: buffer, at: 0)
        writeHex(intendedNanoseconds, into: buffer, at: 16)
    }

    private static func writeHex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        precondition(offset >= 0 && offset + 16 <= buffer.count, "the header lies inside the message")
        for index in 0..<16 {
            buffer[offset + index] = hexDigits[Int((value >> (60 - 4 * UInt64(index))) & 0xf)]
        }
    }

    private static func readHex(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for digit in digits {
            guard let nibble = hexValue(digit) else { return nil }
            value = value << 4 | nibble
        }
        return value
    }
}

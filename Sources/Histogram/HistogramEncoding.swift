import CZlib
import Crypto

/// The HdrHistogram "V2 compressed" transport form, byte-compatible with the Java, C and Python
/// implementations (`HISTFREQ` blobs, the format of `.hlog` interval logs): a big-endian header, then
/// zlib-deflated {payload header, ZigZag-LEB128 counts with runs of zeros as negative lengths}, then base64.
/// Lossless: decoding gives back exactly the counts, so merged reports add up exactly.
extension Histogram {
    static let encodingCookie: UInt32 = 0x1c84_9303 | 0x10
    static let compressionCookie: UInt32 = 0x1c84_9304 | 0x10
    static let payloadHeaderSize = 40
    /// The largest counts array one decoded blob may have (as HdrHistogram's own decoders bound it): 2^20
    /// slots, 8 MiB. wsload's own layout (1 µs to 1 h, 3 digits) has 23,552. Checked before allocating.
    package static let maximumDecodedCounts = 1 << 20

    /// Why a serialized histogram was refused; `offset` is a byte offset into the decoded blob.
    package struct DecodingError: Error, Sendable, CustomStringConvertible, Equatable {
        package var offset: Int
        package var reason: String
        package var description: String { "histogram blob at byte \(offset): \(reason)" }
    }

    /// The histogram as a base64 string (the form reports store).
    package func serialized() -> String { Crypto.base64Encoded(compressedBytes()) }

    /// The compressed binary form: `cookie, length` (big-endian UInt32s) and the zlib stream.
    package func compressedBytes() -> [UInt8] {
        let payload = payloadBytes()
        var bound = compressBound(uLong(payload.count))
        var compressed = [UInt8](repeating: 0, count: Int(bound))
        let status = compressed.withUnsafeMutableBufferPointer { output in
            payload.withUnsafeBufferPointer { input in
                compress2(output.baseAddress, &bound, input.baseAddress, uLong(input.count), Z_DEFAULT_COMPRESSION)
            }
        }
        precondition(status == Z_OK, "compress2 failed with \(status) on a buffer of compressBound size")
        compressed.removeSubrange(Int(bound)...)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8 + compressed.count)
        bytes.appendBigEndian(Self.compressionCookie)
        bytes.appendBigEndian(UInt32(compressed.count))
        bytes += compressed
        return bytes
    }

    /// The uncompressed payload: header, then the counts up to the highest slot in use.
    func payloadBytes() -> [UInt8] {
        var counts: [UInt8] = []
        let limit = totalCount == 0 ? 0 : countsIndex(of: maximumRecorded) + 1
        var index = 0
        while index < limit {
            let count = self.counts[index]
            index += 1
            if count == 0 {
                var zeros: Int64 = 1
                while index < limit && self.counts[index] == 0 {
                    zeros += 1
                    index += 1
                }
                counts.appendZigZag(zeros > 1 ? -zeros : 0)
            } else {
                // Counts beyond Int64.max cannot occur in practice (2^63 samples); clamp rather than trap.
                counts.appendZigZag(Int64(clamping: count))
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.payloadHeaderSize + counts.count)
        bytes.appendBigEndian(Self.encodingCookie)
        bytes.appendBigEndian(UInt32(counts.count))
        bytes.appendBigEndian(UInt32(0))  // normalizing index offset
        bytes.appendBigEndian(UInt32(significantDigits))
        bytes.appendBigEndian(lowestDiscernibleValue)
        bytes.appendBigEndian(highestTrackableValue)
        bytes.appendBigEndian((1.0 as Double).bitPattern)  // integer-to-double conversion ratio
        return bytes + counts
    }

    /// Decodes a base64 blob from ``serialized()`` (or any HdrHistogram V2 compressed encoder).
    /// `maximumSlots` bounds the layout's counts array (the caller's budget; never above
    /// ``maximumDecodedCounts``): a larger layout is refused before anything is allocated.
    package init(serialized text: String, maximumSlots: Int = Histogram.maximumDecodedCounts) throws(DecodingError) {
        guard let bytes = Crypto.base64Decoded(text) else {
            throw DecodingError(offset: 0, reason: "not base64")
        }
        try self.init(compressedBytes: bytes, maximumSlots: maximumSlots)
    }

    package init(
        compressedBytes bytes: [UInt8], maximumSlots: Int = Histogram.maximumDecodedCounts
    ) throws(DecodingError) {
        try Self.checkHeader(bytes)
        // At most 9 bytes a count: a stream that inflates further cannot fit the layout the caller allows.
        let limit = Self.payloadHeaderSize + 9 * max(0, min(maximumSlots, Self.maximumDecodedCounts))
        guard let payload = inflateZlib(Array(bytes[8...]), limit: limit) else {
            throw DecodingError(offset: 8, reason: "the zlib stream is corrupt or inflates beyond \(limit) bytes")
        }
        try self.init(payload: payload, maximumSlots: maximumSlots)
    }

    /// The slots the blob's layout needs once decoded, read from its payload header alone (the first bytes of the zlib
    /// stream are inflated, the counts are not): what a reader that keeps blobs compressed charges its budget, refusing
    /// the same layouts ``init(serialized:maximumSlots:)`` refuses. The counts are checked only when decoded.
    package static func slotCount(serialized text: String, maximumSlots: Int = Histogram.maximumDecodedCounts)
        throws(DecodingError) -> Int
    {
        guard let bytes = Crypto.base64Decoded(text) else { throw DecodingError(offset: 0, reason: "not base64") }
        try Self.checkHeader(bytes)
        guard let prefix = inflateZlib(Array(bytes[8...]), limit: payloadHeaderSize, prefixOnly: true),
            prefix.count == payloadHeaderSize
        else {
            throw DecodingError(offset: 8, reason: "the zlib stream is corrupt or shorter than a payload header")
        }
        return try layout(ofPayload: prefix, maximumSlots: maximumSlots).slots
    }

    /// The 8-byte header: the V2 compressed cookie and the length of what follows.
    private static func checkHeader(_ bytes: [UInt8]) throws(DecodingError) {
        guard bytes.count >= 8 else { throw DecodingError(offset: 0, reason: "shorter than its 8-byte header") }
        let cookie = bytes.readBigEndianUInt32(at: 0)
        guard cookie & ~0xf0 == Self.compressionCookie & ~0xf0 else {
            throw DecodingError(offset: 0, reason: "cookie 0x\(String(cookie, radix: 16)) is not a V2 compressed histogram")
        }
        let length = Int(bytes.readBigEndianUInt32(at: 4))
        guard length == bytes.count - 8 else {
            throw DecodingError(offset: 4, reason: "declares \(length) compressed bytes but \(bytes.count - 8) follow")
        }
    }

    /// The payload header's layout, checked (cookie, no normalizing offset, a valid layout within `maximumSlots`).
    private static func layout(ofPayload payload: [UInt8], maximumSlots: Int) throws(DecodingError)
        -> (lowest: UInt64, highest: UInt64, digits: Int, slots: Int)
    {
        guard payload.count >= Self.payloadHeaderSize else {
            throw DecodingError(offset: 8, reason: "payload shorter than its \(Self.payloadHeaderSize)-byte header")
        }
        let cookie = payload.readBigEndianUInt32(at: 0)
        guard cookie & ~0xf0 == Self.encodingCookie & ~0xf0 else {
            throw DecodingError(offset: 8, reason: "payload cookie 0x\(String(cookie, radix: 16)) is not V2")
        }
        guard payload.readBigEndianUInt32(at: 8) == 0 else {
            throw DecodingError(offset: 16, reason: "a normalizing index offset is not supported")
        }
        let digits = Int(payload.readBigEndianUInt32(at: 12))
        let lowest = payload.readBigEndianUInt64(at: 16)
        let highest = payload.readBigEndianUInt64(at: 24)
        guard let slots = Histogram.slotCount(lowest: lowest, highest: highest, significantDigits: digits) else {
            throw DecodingError(offset: 20, reason: "invalid layout \(lowest)...\(highest) at \(digits) digits")
        }
        let limit = min(maximumSlots, Self.maximumDecodedCounts)
        guard slots <= limit else {
            throw DecodingError(
                offset: 20, reason: "layout \(lowest)...\(highest) at \(digits) digits needs \(slots) slots, "
                + (limit < Self.maximumDecodedCounts ? "more than the \(limit) left of the report's decode budget"
                    : "more than the \(Self.maximumDecodedCounts) a histogram may have"))
        }
        return (lowest, highest, digits, slots)
    }

    init(payload: [UInt8], maximumSlots: Int = Histogram.maximumDecodedCounts) throws(DecodingError) {
        let (lowest, highest, digits, _) = try Self.layout(ofPayload: payload, maximumSlots: maximumSlots)
        let countsLength = Int(payload.readBigEndianUInt32(at: 4))
        guard countsLength == payload.count - Self.payloadHeaderSize else {
            throw DecodingError(offset: 12, reason: "payload declares \(countsLength) count bytes but has "
                + "\(payload.count - Self.payloadHeaderSize)")
        }
        let limit = min(maximumSlots, Self.maximumDecodedCounts)
        guard var histogram = Histogram(
            validatingLowest: lowest, highest: highest, significantDigits: digits, maximumSlots: limit)
        else {
            throw DecodingError(offset: 20, reason: "invalid layout \(lowest)...\(highest) at \(digits) digits")
        }
        var position = Self.payloadHeaderSize
        var index = 0
        while position < payload.count {
            let start = position
            guard let value = payload.readZigZag(at: &position) else {
                throw DecodingError(offset: 8 + start, reason: "truncated count")
            }
            if value < 0 {
                let zeros = value.magnitude
                guard zeros <= UInt64(histogram.counts.count - index) else {
                    throw DecodingError(offset: 8 + start, reason: "a run of \(zeros) zeros passes the last slot")
                }
                index += Int(zeros)
                continue
            }
            guard index < histogram.counts.count else {
                throw DecodingError(offset: 8 + start, reason: "more counts than the layout has slots")
            }
            if value > 0 {
                let count = UInt64(value)
                let (total, overflow) = histogram.totalCount.addingReportingOverflow(count)
                // Totals past Int64.max cannot be shown, merged or converted safely: refuse the blob.
                guard !overflow, total <= UInt64(Int64.max) else {
                    throw DecodingError(offset: 8 + start, reason: "the counts add up to more than 2^63-1")
                }
                histogram.counts[index] = count
                histogram.totalCount = total
                let slotValue = histogram.valueFromIndex(index)
                histogram.minimumRecorded = min(histogram.minimumRecorded, slotValue)
                histogram.maximumRecorded = max(histogram.maximumRecorded, slotValue)
            }
            index += 1
        }
        self = histogram
    }
}

/// `input` inflated, or nil when it is corrupt or inflates beyond `limit` bytes; with `prefixOnly`, only its first
/// `limit` bytes (fewer when the stream is shorter), the rest left unread.
private func inflateZlib(_ input: [UInt8], limit: Int, prefixOnly: Bool = false) -> [UInt8]? {
    var stream = z_stream()
    guard wsload_inflateInit2(&stream, 15) == Z_OK else { return nil }
    defer { inflateEnd(&stream) }
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    var input = input
    return input.withUnsafeMutableBufferPointer { source -> [UInt8]? in
        stream.next_in = source.baseAddress
        stream.avail_in = uInt(source.count)
        while true {
            let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer -> (Int32, Int) in
                stream.next_out = buffer.baseAddress
                stream.avail_out = uInt(buffer.count)
                let status = inflate(&stream, Z_NO_FLUSH)
                return (status, buffer.count - Int(stream.avail_out))
            }
            output += chunk[..<produced]
            if prefixOnly && output.count >= limit { return Array(output.prefix(limit)) }
            if output.count > limit { return nil }
            switch status {
            case Z_STREAM_END: return stream.avail_in == 0 ? output : nil
            case Z_OK: if produced == 0 && stream.avail_in == 0 { return nil }  // truncated
            default: return nil
            }
        }
    }
}

extension [UInt8] {
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }

    func readBigEndianUInt32(at offset: Int) -> UInt32 {
        self[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    func readBigEndianUInt64(at offset: Int) -> UInt64 {
        self[offset..<offset + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// HdrHistogram's ZigZag LEB128: 7 bits a byte for 8 bytes, then a 9th byte with the last 8 bits.
    mutating func appendZigZag(_ signed: Int64) {
        var value = UInt64(bitPattern: (signed << 1) ^ (signed >> 63))
        for _ in 0..<8 {
            if value >> 7 == 0 {
                append(UInt8(value))
                return
            }
            append(UInt8(value & 0x7f) | 0x80)
            value >>= 7
        }
        append(UInt8(truncatingIfNeeded: value))
    }

    func readZigZag(at position: inout Int) -> Int64? {
        var value: UInt64 = 0
        for byteIndex in 0..<9 {
            guard position < count else { return nil }
            let byte = self[position]
            position += 1
            if byteIndex == 8 {
                value |= UInt64(byte) << 56
                break
            }
            value |= UInt64(byte & 0x7f) << UInt64(7 * byteIndex)
            if byte & 0x80 == 0 { break }
        }
        return Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
    }
}

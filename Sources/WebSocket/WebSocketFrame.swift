/// One WebSocket frame (RFC 6455 §5.2) with its payload unmasked.
public struct WebSocketFrame: Hashable, Sendable {
    public var isFinal: Bool
    /// RSV1: "per-message compressed" when permessage-deflate is negotiated (RFC 7692 §6).
    public var rsv1: Bool
    public var rsv2: Bool
    public var rsv3: Bool
    public var opcode: WebSocketOpcode
    public var payload: [UInt8]

    public init(
        isFinal: Bool = true, rsv1: Bool = false, rsv2: Bool = false, rsv3: Bool = false,
        opcode: WebSocketOpcode, payload: [UInt8] = []
    ) {
        self.isFinal = isFinal
        self.rsv1 = rsv1
        self.rsv2 = rsv2
        self.rsv3 = rsv3
        self.opcode = opcode
        self.payload = payload
    }

    /// Appends this frame's wire form to `buffer`, masked with `maskingKey` when given (clients must
    /// mask every frame with a fresh key, §5.3; servers must not mask).
    public func encode(maskingKey: UInt32?, into buffer: inout [UInt8]) {
        payload.withUnsafeBytes { payload in
            WebSocketFrame.encode(isFinal: isFinal, rsv1: rsv1, rsv2: rsv2, rsv3: rsv3, opcode: opcode,
                                  payload: payload, maskingKey: maskingKey, into: &buffer)
        }
    }

    /// The wire form of this frame.
    public func encoded(maskingKey: UInt32?) -> [UInt8] {
        var buffer: [UInt8] = []
        encode(maskingKey: maskingKey, into: &buffer)
        return buffer
    }

    /// Appends a frame's wire form to `buffer` without building a `WebSocketFrame`.
    /// Lengths use the shortest of the three encodings (7-bit, 16-bit, 64-bit), as §5.2 requires.
    public static func encode(
        isFinal: Bool, rsv1: Bool = false, rsv2: Bool = false, rsv3: Bool = false, opcode: WebSocketOpcode,
        payload: UnsafeRawBufferPointer, maskingKey: UInt32?, into buffer: inout [UInt8]
    ) {
        var first = opcode.rawValue
        if isFinal { first |= 0x80 }
        if rsv1 { first |= 0x40 }
        if rsv2 { first |= 0x20 }
        if rsv3 { first |= 0x10 }
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        let length = payload.count
        buffer.reserveCapacity(buffer.count + length + 14)
        buffer.append(first)
        if length < 126 {
            buffer.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            buffer.append(maskBit | 126)
            buffer.append(UInt8(length >> 8))
            buffer.append(UInt8(length & 0xFF))
        } else {
            buffer.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { buffer.append(UInt8((UInt64(length) >> UInt64(shift)) & 0xFF)) }
        }
        guard let maskingKey else {
            buffer.append(contentsOf: payload)
            return
        }
        for shift in [24, 16, 8, 0] as [UInt32] { buffer.append(UInt8(truncatingIfNeeded: maskingKey >> shift)) }
        let start = buffer.count
        buffer.append(contentsOf: payload)
        buffer.withUnsafeMutableBufferPointer { bytes in
            applyMask(key: maskingKey, to: UnsafeMutableBufferPointer(rebasing: bytes[start...]))
        }
    }

    /// XORs `bytes` with the 4-byte `key`, starting at key index 0 (§5.3). Masking and unmasking are
    /// the same operation.
    public static func applyMask(key: [UInt8], to bytes: UnsafeMutableBufferPointer<UInt8>) {
        precondition(key.count == 4, "a masking key is 4 bytes")
        applyMask(key: UInt32(key[0]) << 24 | UInt32(key[1]) << 16 | UInt32(key[2]) << 8 | UInt32(key[3]), to: bytes)
    }

    /// XORs `bytes` with the 4-byte `key` (its bytes in wire order, most significant first), starting at key
    /// index `phase % 4`: a payload unmasked in pieces continues where the piece before it stopped. No allocation.
    public static func applyMask(key: UInt32, phase: Int = 0, to bytes: UnsafeMutableBufferPointer<UInt8>) {
        let count = bytes.count
        guard count > 0, let base = bytes.baseAddress else { return }
        // The key's bytes in the order they apply from `phase` on (a rotation of the wire order).
        let shift = UInt32(phase & 3) * 8
        let rotated = shift == 0 ? key : key << shift | key >> (32 - shift)
        @inline(__always) func keyByte(_ index: Int) -> UInt8 {
            UInt8(truncatingIfNeeded: rotated >> (24 - 8 * UInt32(index & 3)))
        }
        // Eight bytes at a time with the key repeated in a word, then the tail byte by byte.
        var word: UInt64 = 0
        withUnsafeMutableBytes(of: &word) { raw in
            for index in 0..<8 { raw[index] = keyByte(index) }
        }
        var index = 0
        let raw = UnsafeMutableRawPointer(base)
        while index + 8 <= count {
            let value = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) ^ word
            raw.storeBytes(of: value, toByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < count {
            base[index] ^= keyByte(index)
            index += 1
        }
    }
}

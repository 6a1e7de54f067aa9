import Crypto

/// Deterministic content for `/bytes/<size>?seed=S`: byte `p` is byte `p % 8` (little-endian) of
/// SplitMix64's output for `seed ^ (p / 8)`, so any range is generated directly, without a file.
package enum PatternContent {
    @inline(__always)
    static func word(_ index: UInt64, seed: UInt64) -> UInt64 {
        var z = (seed ^ index) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Fills `buffer` with `count` bytes of the content starting at `offset`.
    package static func fill(_ buffer: inout [UInt8], count: Int, offset: Int64, seed: UInt64) {
        // Resized without touching the kept bytes (an array-to-array append stays memcpy in debug builds).
        if buffer.count > count {
            buffer.removeLast(buffer.count - count)
        } else if buffer.count < count {
            buffer.append(contentsOf: [UInt8](repeating: 0, count: count - buffer.count))
        }
        buffer.withUnsafeMutableBytes { raw in
            var position = UInt64(offset)
            var index = 0
            while index < count && position % 8 != 0 {
                raw[index] = UInt8(truncatingIfNeeded: word(position / 8, seed: seed) >> ((position % 8) * 8))
                index += 1
                position += 1
            }
            while index + 8 <= count {
                raw.storeBytes(of: word(position / 8, seed: seed).littleEndian, toByteOffset: index, as: UInt64.self)
                index += 8
                position += 8
            }
            while index < count {
                raw[index] = UInt8(truncatingIfNeeded: word(position / 8, seed: seed) >> ((position % 8) * 8))
                index += 1
                position += 1
            }
        }
    }

    /// SHA-256 of the whole content of `size` bytes with `seed` (what a download of it must digest to).
    package static func sha256(size: Int64, seed: UInt64) -> [UInt8] {
        let hasher = SHA256Hasher()
        var buffer: [UInt8] = []
        var offset: Int64 = 0
        while offset < size {
            let count = Int(min(1 << 20, size - offset))
            fill(&buffer, count: count, offset: offset, seed: seed)
            hasher.update(buffer)
            offset += Int64(count)
        }
        return hasher.finalize()
    }
}

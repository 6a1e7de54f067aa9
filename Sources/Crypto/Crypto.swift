import COpenSSL
import Glibc

/// Digests, base64 and secure random bytes from OpenSSL's libcrypto: pure functions, no I/O.
///
/// Kept apart from `Runtime` so pure protocol targets (the WebSocket handshake needs SHA-1 and
/// base64; masking keys need a CSPRNG) can use them without depending on the event loops.
public enum Crypto {
    /// SHA-1 of `bytes` (20 bytes). Only for protocol needs such as `Sec-WebSocket-Accept`.
    public static func sha1(_ bytes: some Collection<UInt8>) -> [UInt8] {
        digest(bytes, length: Int(SHA_DIGEST_LENGTH)) { SHA1($0, $1, $2) }
    }

    /// SHA-256 of `bytes` (32 bytes).
    public static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        digest(bytes, length: Int(SHA256_DIGEST_LENGTH)) { SHA256($0, $1, $2) }
    }

    private static func digest(
        _ bytes: some Collection<UInt8>, length: Int,
        _ function: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>?
    ) -> [UInt8] {
        let input = Array(bytes)
        var output = [UInt8](repeating: 0, count: length)
        input.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                _ = function(input.baseAddress, input.count, output.baseAddress)
            }
        }
        return output
    }

    /// Standard base64 (RFC 4648 §4) with padding, no line breaks.
    public static func base64Encoded(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        guard !input.isEmpty else { return "" }
        var output = [UInt8](repeating: 0, count: 4 * ((input.count + 2) / 3) + 1)
        let count = input.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                EVP_EncodeBlock(output.baseAddress, input.baseAddress, Int32(input.count))
            }
        }
        return String(decoding: output.prefix(Int(count)), as: UTF8.self)
    }

    /// Decodes standard base64 with padding; `nil` if `text` is not valid base64.
    public static func base64Decoded(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        guard !input.isEmpty else { return [] }
        // EVP_DecodeBlock accepts whitespace and ignores padding: check the alphabet ourselves.
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let padding = input.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard padding <= 2, input.dropLast(padding).allSatisfy(alphabet.contains) else { return nil }
        var output = [UInt8](repeating: 0, count: input.count / 4 * 3)
        let count = input.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                EVP_DecodeBlock(output.baseAddress, input.baseAddress, Int32(input.count))
            }
        }
        guard count >= 0 else { return nil }
        return Array(output.prefix(Int(count) - padding))
    }

    /// `count` bytes from OpenSSL's CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        fillRandom(&bytes)
        return bytes
    }

    /// Overwrites `bytes` with CSPRNG output. Traps if the CSPRNG fails, which only happens when the
    /// system has no entropy source: continuing would produce predictable keys.
    public static func fillRandom(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { fillRandom($0) }
    }

    /// The same, into raw memory (at most `Int32.max` bytes).
    public static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        let status = RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count))
        precondition(status == 1, "OpenSSL RAND_bytes failed")
    }

    /// Lower-case hexadecimal.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// A `RandomNumberGenerator` backed by OpenSSL's CSPRNG (masking keys): drawn from a buffer of the calling thread's,
/// refilled 4 KiB at a time. A `RAND_bytes` call costs about 1.5 µs whatever its size up to that (OpenSSL 3 fetches
/// its generator on every call), so one per 512 draws instead of one per 8 (the 64 bytes each connection held
/// before) spares some 180 ns per message sent, and a connection holds no buffer of its own. The generator is empty,
/// so copies share the thread's stream; a draw is only ever used on the thread that made it.
public struct SecureRandomNumberGenerator: RandomNumberGenerator, Sendable {
    public init() {}

    public mutating func next() -> UInt64 { ThreadRandomPool.current.next() }
}

/// One thread's buffered CSPRNG output, found through a pthread key (freed with the thread).
private final class ThreadRandomPool {
    static let size = 4096
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
    /// Not checked for exclusive access at run time (a draw per message sent): the pool is its thread's alone, and
    /// each access is a plain read or store.
    @exclusivity(unchecked) private var offset = size

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pool in
            guard let pool else { return }
            Unmanaged<ThreadRandomPool>.fromOpaque(pool).release()
        }
        precondition(status == 0, "pthread_key_create failed for the random pool")
        return key
    }()

    static var current: ThreadRandomPool {
        if let pool = pthread_getspecific(key) { return Unmanaged<ThreadRandomPool>.fromOpaque(pool).takeUnretainedValue() }
        let pool = ThreadRandomPool()
        pthread_setspecific(key, Unmanaged.passRetained(pool).toOpaque())
        return pool
    }

    deinit { buffer.deallocate() }

    func next() -> UInt64 {
        if offset + 8 > Self.size {
            Crypto.fillRandom(buffer)
            offset = 0
        }
        let value = buffer.load(fromByteOffset: offset, as: UInt64.self)
        offset += 8
        return value
    }
}

/// Parses lowercase or uppercase hex into bytes; nil for odd lengths or other characters.
public func hexBytes(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: byte - 48
        case 65...70: byte - 55
        case 97...102: byte - 87
        default: nil
        }
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    for index in stride(from: 0, to: digits.count, by: 2) {
        guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
        bytes.append(high << 4 | low)
    }
    return bytes
}

import CLibFuzzer
#if canImport(Glibc)
import Glibc
#endif

/// The one input a fuzz target is running, kept so a failed property can print it.
nonisolated(unsafe) private var currentBody: (([UInt8]) -> Void)?

/// Runs libFuzzer with `body` as the test callback, passing it each input as bytes; never returns.
/// `body` must be deterministic and must not keep state between inputs beyond caches.
package func fuzzMain(_ body: @escaping ([UInt8]) -> Void) -> Never {
    currentBody = body
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    let status = LLVMFuzzerRunDriver(&argc, &argv) { data, count in
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
        currentBody?(bytes)
        return 0
    }
    exit(status)
}

/// A property every input must keep; a violation is a crash libFuzzer saves as a reproducer.
package func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        let line = Array("fuzz property violated: \(message())\n".utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        abort()
    }
}

/// `bytes` in hex, for property messages.
package func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

/// Takes option bytes off the front of an input (what role, which limits) and leaves the rest.
package struct FuzzInput {
    package private(set) var bytes: ArraySlice<UInt8>

    package init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    /// The next byte, or 0 once the input is used up.
    package mutating func byte() -> UInt8 {
        guard let first = bytes.first else { return 0 }
        bytes = bytes.dropFirst()
        return first
    }

    /// Up to `count` next bytes.
    package mutating func take(_ count: Int) -> [UInt8] {
        let taken = Array(bytes.prefix(count))
        bytes = bytes.dropFirst(taken.count)
        return taken
    }

    /// The rest of the input up to (not including) the next `separator` byte, which is consumed too.
    package mutating func field(separator: UInt8) -> [UInt8] {
        let end = bytes.firstIndex(of: separator) ?? bytes.endIndex
        let taken = Array(bytes[..<end])
        bytes = bytes[end...].dropFirst()
        return taken
    }

    /// A big-endian 16-bit value from the next two bytes.
    package mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

    /// What is left, split into pieces whose sizes come from `step` (1...255; 0 means all at once).
    /// There is always at least one piece (an empty one for an empty rest), so "fed at once" and "fed in
    /// pieces" make the same calls on empty input.
    package func pieces(step: UInt8) -> [ArraySlice<UInt8>] {
        guard step > 0, !bytes.isEmpty else { return [bytes] }
        var result: [ArraySlice<UInt8>] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let end = min(index + Int(step), bytes.endIndex)
            result.append(bytes[index..<end])
            index = end
        }
        return result
    }
}

import Glibc

/// A POSIX extended regular expression (the syntax of `grep -E`), compiled once when the profile is validated.
/// Matching is byte-wise (the C locale): `.` is one byte, so a multi-byte character under `+` needs parentheses,
/// `(é)+`; `.` does not match a NUL byte, but text after one is still searched.
/// Matching is safe from any number of threads at once (regexec on a compiled pattern does not modify it, which
/// is why the class is `@unchecked Sendable`: its only mutable state is the compiled `regex_t`, written once by
/// `regcomp` in `compile` and freed in `deinit`).
package final class FlowRegex: @unchecked Sendable, Equatable {
    /// The longest text `firstMatch` looks at: a longer text does not match (a message that size is not a
    /// reply a flow waits for, and matching it would cost milliseconds per message).
    package static let maximumInputLength = 1 << 20
    /// The longest pattern `compile` accepts.
    package static let maximumPatternLength = 4096

    /// The pattern as written.
    package let pattern: String
    /// The number of capture groups (parenthesised subexpressions) in the pattern.
    package let groupCount: Int
    private let compiled: UnsafeMutablePointer<regex_t>

    private init(pattern: String, compiled: UnsafeMutablePointer<regex_t>) {
        self.pattern = pattern
        self.compiled = compiled
        self.groupCount = Int(compiled.pointee.re_nsub)
    }

    deinit {
        regfree(compiled)
        compiled.deallocate()
    }

    /// Compiles `pattern` as POSIX ERE. A failure has offset 0 and regerror's text (POSIX gives no position).
    package static func compile(_ pattern: String) -> Result<FlowRegex, TemplateSyntaxError> {
        if let nul = pattern.utf8.firstIndex(of: 0) {
            let offset = pattern.utf8.distance(from: pattern.utf8.startIndex, to: nul)
            return .failure(TemplateSyntaxError(offset: offset, message: "a regular expression cannot hold a NUL byte"))
        }
        guard pattern.utf8.count <= maximumPatternLength else {
            return .failure(TemplateSyntaxError(
                offset: maximumPatternLength, message: "a regular expression is at most \(maximumPatternLength) bytes"))
        }
        let compiled = UnsafeMutablePointer<regex_t>.allocate(capacity: 1)
        let status = regcomp(compiled, pattern, REG_EXTENDED)
        guard status == 0 else {
            var buffer = [CChar](repeating: 0, count: 256)
            _ = regerror(status, compiled, &buffer, buffer.count)
            compiled.deallocate()
            let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(TemplateSyntaxError(offset: 0, message: message))
        }
        return .success(FlowRegex(pattern: pattern, compiled: compiled))
    }

    /// The capture groups of the first match (index 0 the whole match, then `groupCount` groups; nil for a group
    /// that took no part in the match or whose bounds fall inside a UTF-8 sequence); nil: no match.
    /// The whole text is searched, NUL bytes included (REG_STARTEND); a text over ``maximumInputLength`` bytes
    /// does not match.
    package func firstMatch(in text: String) -> [Substring?]? {
        var contiguous = text
        return contiguous.withUTF8 { bytes -> [Substring?]? in
            guard bytes.count <= Self.maximumInputLength else { return nil }
            let slots = groupCount + 1
            return withUnsafeTemporaryAllocation(of: regmatch_t.self, capacity: slots) { matches -> [Substring?]? in
                guard let base = matches.baseAddress else { return nil }
                base.initialize(repeating: regmatch_t(rm_so: -1, rm_eo: -1), count: slots)
                base[0].rm_so = 0
                base[0].rm_eo = regoff_t(bytes.count)
                // An empty buffer has no base address; regexec still needs a valid pointer.
                let status = bytes.withMemoryRebound(to: CChar.self) { characters -> Int32 in
                    guard let start = characters.baseAddress else { return regexec(compiled, "", slots, base, REG_STARTEND) }
                    return regexec(compiled, start, slots, base, REG_STARTEND)
                }
                guard status == 0 else { return nil }
                return (0..<slots).map { group in
                    Self.substring(of: text, bytes: bytes, from: Int(base[group].rm_so), to: Int(base[group].rm_eo))
                }
            }
        }
    }

    /// Whether the pattern matches somewhere in `text` (as ``firstMatch(in:)`` != nil), without building the
    /// groups: no allocation, and regexec asked for the whole match only.
    package func matches(_ text: String) -> Bool {
        var contiguous = text
        return contiguous.withUTF8 { bytes -> Bool in
            guard bytes.count <= Self.maximumInputLength else { return false }
            var whole = regmatch_t(rm_so: 0, rm_eo: regoff_t(bytes.count))
            let status = bytes.withMemoryRebound(to: CChar.self) { characters -> Int32 in
                guard let start = characters.baseAddress else { return regexec(compiled, "", 1, &whole, REG_STARTEND) }
                return regexec(compiled, start, 1, &whole, REG_STARTEND)
            }
            return status == 0
        }
    }

    /// The text between two byte offsets, if both are in range and on scalar boundaries.
    private static func substring(of text: String, bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int)
        -> Substring?
    {
        guard start >= 0, start <= end, end <= bytes.count,
              isScalarBoundary(start, in: bytes), isScalarBoundary(end, in: bytes)
        else { return nil }
        let utf8 = text.utf8
        let lower = utf8.index(utf8.startIndex, offsetBy: start)
        let upper = utf8.index(lower, offsetBy: end - start)
        return text[lower..<upper]
    }

    private static func isScalarBoundary(_ offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        offset == bytes.count || bytes[offset] & 0xC0 != 0x80
    }

    package static func == (lhs: FlowRegex, rhs: FlowRegex) -> Bool { lhs.pattern == rhs.pattern }
}

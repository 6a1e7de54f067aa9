/// Where and why a document is not JSON: the line and column (1-based) name the place for a user.
package struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    package var offset: Int
    package var line: Int
    package var column: Int
    package var reason: String
    package var description: String { "line \(line), column \(column): \(reason)" }
}

extension JSONValue {
    /// Parses a complete JSON document (RFC 8259). Duplicate keys are errors (a profile that says a thing
    /// twice is ambiguous), as is anything after the value.
    /// - Parameter maximumDepth: nesting beyond this is refused rather than recursed into.
    /// Reads contiguous input (an array, a native string's UTF-8) in place; other collections are copied first.
    package init(parsing bytes: some Collection<UInt8>, maximumDepth: Int = 256) throws(JSONSyntaxError) {
        let parsed = bytes.withContiguousStorageIfAvailable { JSONParser.parse($0, maximumDepth: maximumDepth) }
            ?? Array(bytes).withUnsafeBufferPointer { JSONParser.parse($0, maximumDepth: maximumDepth) }
        self = try parsed.get()
    }

    package init(parsing text: String, maximumDepth: Int = 256) throws(JSONSyntaxError) {
        try self.init(parsing: text.utf8, maximumDepth: maximumDepth)
    }
}

/// A parser over borrowed bytes: every read is behind a check of `position` against `bytes.count` (the buffer's
/// subscript does not check in release builds; the JSON fuzz target runs under AddressSanitizer).
private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maximumDepth: Int
    var position = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    /// The document in `bytes` (which must stay valid for the call only: the value holds none of them).
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) -> Result<JSONValue, JSONSyntaxError> {
        var parser = JSONParser(bytes: bytes, maximumDepth: maximumDepth)
        do throws(JSONSyntaxError) {
            return .success(try parser.parseDocument())
        } catch {
            return .failure(error)
        }
    }

    func error(_ reason: String, at offset: Int? = nil) -> JSONSyntaxError {
        let offset = min(offset ?? position, bytes.count)
        var line = 1
        var lineStart = 0
        for index in 0..<offset where bytes[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        let column = String(decoding: bytes[lineStart..<offset], as: UTF8.self).count + 1
        return JSONSyntaxError(offset: offset, line: line, column: column, reason: reason)
    }

    mutating func parseDocument() throws(JSONSyntaxError) -> JSONValue {
        if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { position = 3 }  // a BOM
        let value = try parseValue()
        skipWhitespace()
        guard position == bytes.count else { throw error("unexpected \(describeCurrent()) after the document") }
        return value
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    func describeCurrent() -> String {
        guard position < bytes.count else { return "end of input" }
        let byte = bytes[position]
        return byte >= 0x20 && byte < 0x7f ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
    }

    mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        skipWhitespace()
        guard position < bytes.count else { throw error("expected a value, found end of input") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try parseLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try parseLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try parseLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("expected a value, found \(describeCurrent())")
        }
    }

    mutating func parseLiteral(_ word: String, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        guard bytes[position...].starts(with: word.utf8) else { throw error("expected '\(word)'") }
        position += word.utf8.count
        return value
    }

    mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        if depth > maximumDepth { throw error("nested deeper than \(maximumDepth) levels") }
    }

    mutating func parseObject() throws(JSONSyntaxError) -> JSONValue {
        try enter()
        defer { depth -= 1 }
        position += 1
        var object = JSONObject()
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a key in quotes, found \(describeCurrent())")
            }
            let keyOffset = position
            let key = try parseString()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw error("expected ':' after the key \"\(key)\", found \(describeCurrent())")
            }
            position += 1
            let value = try parseValue()
            if object.isEmpty { object.reserveCapacity(4) }  // a message's few members in one allocation
            guard object.appendIfAbsent(key, value) else {
                throw error("the key \"\(key)\" appears twice", at: keyOffset)
            }
            skipWhitespace()
            guard position < bytes.count else { throw error("unterminated object: expected ',' or '}'") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "}") else {
                throw error("expected ',' or '}' in an object, found \(describeCurrent())")
            }
            position += 1
            return .object(object)
        }
    }

    mutating func parseArray() throws(JSONSyntaxError) -> JSONValue {
        try enter()
        defer { depth -= 1 }
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue())
            skipWhitespace()
            guard position < bytes.count else { throw error("unterminated array: expected ',' or ']'") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "]") else {
                throw error("expected ',' or ']' in an array, found \(describeCurrent())")
            }
            position += 1
            return .array(elements)
        }
    }

    /// The UTF-8 of `bytes[range]` as a string; nil if it is not valid UTF-8. Decoded from contiguous storage
    /// (`String(validating:)` instantiates generic metadata on every call); text that needed repair differs from
    /// its input, which is how invalid UTF-8 is told.
    func text(_ range: Range<Int>) -> String? {
        let run = UnsafeBufferPointer(rebasing: bytes[range])
        let decoded = String(decoding: run, as: UTF8.self)
        return run.allSatisfy({ $0 < 0x80 }) || decoded.utf8.elementsEqual(run) ? decoded : nil
    }

    /// A string: the bytes up to the closing quote, validated once when no escape interrupts them (the common
    /// case); with escapes, each raw run is validated (an error names its offset) and appended.
    mutating func parseString() throws(JSONSyntaxError) -> String {
        let start = position
        position += 1
        var runStart = position
        var result = ""
        func flushRun(_ end: Int) throws(JSONSyntaxError) {
            guard runStart < end else { return }
            guard let run = text(runStart..<end) else { throw error("invalid UTF-8 in a string", at: runStart) }
            if result.isEmpty { result = run } else { result += run }  // the first run is taken as it is
        }
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                try flushRun(position)
                position += 1
                return result
            case UInt8(ascii: "\\"):
                try flushRun(position)
                position += 1
                guard position < bytes.count else { break }
                let escape = bytes[position]
                position += 1
                let scalar: Unicode.Scalar
                switch escape {
                case UInt8(ascii: "\""): scalar = "\""
                case UInt8(ascii: "\\"): scalar = "\\"
                case UInt8(ascii: "/"): scalar = "/"
                case UInt8(ascii: "b"): scalar = "\u{08}"
                case UInt8(ascii: "f"): scalar = "\u{0C}"
                case UInt8(ascii: "n"): scalar = "\n"
                case UInt8(ascii: "r"): scalar = "\r"
                case UInt8(ascii: "t"): scalar = "\t"
                case UInt8(ascii: "u"): scalar = try parseUnicodeEscape()
                default: throw error("invalid escape '\\\(Character(Unicode.Scalar(escape)))'", at: position - 2)
                }
                result.unicodeScalars.append(scalar)
                runStart = position
            case 0..<0x20:
                throw error("control character 0x\(String(byte, radix: 16)) in a string (escape it)")
            default:
                position += 1
            }
        }
        throw error("unterminated string", at: start)
    }

    mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for byte in bytes[position..<position + 4] {
            guard let digit = hexDigit(byte) else { throw error("invalid hex digit in a \\u escape") }
            value = value << 4 | digit
        }
        position += 4
        return value
    }

    mutating func parseUnicodeEscape() throws(JSONSyntaxError) -> Unicode.Scalar {
        let escapeStart = position - 2
        let first = try parseHex4()
        if (0xD800..<0xDC00).contains(first) {
            guard bytes[position...].starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "u")]) else {
                throw error("a high surrogate without its low surrogate", at: escapeStart)
            }
            position += 2
            let second = try parseHex4()
            guard (0xDC00..<0xE000).contains(second) else { throw error("invalid low surrogate", at: escapeStart) }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
        }
        guard let scalar = Unicode.Scalar(first) else { throw error("a lone low surrogate", at: escapeStart) }
        return scalar
    }

    func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    mutating func parseNumber() throws(JSONSyntaxError) -> JSONValue {
        let start = position
        func digits() -> Int {
            let from = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            return position - from
        }
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        let integerStart = position
        let integerDigits = digits()
        guard integerDigits > 0 else { throw error("expected digits after '-'") }
        if integerDigits > 1 && bytes[integerStart] == UInt8(ascii: "0") {
            throw error("a number cannot have leading zeros", at: integerStart)
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { throw error("expected digits after the decimal point") }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digits() > 0 else { throw error("expected digits in the exponent") }
        }
        if position - integerStart == integerDigits && integerDigits <= 18 {
            // An integer of up to 18 digits fits an Int64, and converting that rounds to the nearest Double as
            // reading the text does: its digits, without a String or strtod.
            var magnitude: Int64 = 0
            for byte in bytes[integerStart..<position] { magnitude = magnitude &* 10 &+ Int64(byte &- UInt8(ascii: "0")) }
            return .number(start == integerStart ? Double(magnitude) : -Double(magnitude))
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw error("the number \(text) is out of range", at: start) }
        return .number(value)
    }
}

/// HTTP header fields in order, with case-insensitive lookup (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)]

    public init() { fields = [] }

    public init(_ fields: [(name: String, value: String)]) { self.fields = fields }

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    public mutating func add(name: String, value: String) { fields.append((name, value)) }

    /// Replaces every field named `name` with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    public mutating func remove(name: String) {
        fields.removeAll { $0.name.lowercased() == name.lowercased() }
    }

    /// The first value of the field `name`, compared case-insensitively.
    public subscript(name: String) -> String? {
        let lowered = name.lowercased()
        return fields.first { $0.name.lowercased() == lowered }?.value
    }

    /// Every value of `name`, split on commas into trimmed list elements (RFC 9110 §5.6.1).
    public func listValues(_ name: String) -> [String] {
        let lowered = name.lowercased()
        return fields.filter { $0.name.lowercased() == lowered }
            .flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingOWS() }
            .filter { !$0.isEmpty }
    }

    /// Whether the comma-separated list in `name` contains `token`, case-insensitively.
    public func listContains(_ name: String, token: String) -> Bool {
        listValues(name).contains { $0.lowercased() == token.lowercased() }
    }

    /// How many fields named `name` there are.
    public func count(of name: String) -> Int {
        fields.filter { $0.name.lowercased() == name.lowercased() }.count
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for field in fields {
            hasher.combine(field.name)
            hasher.combine(field.value)
        }
    }
}

/// Why a header name or value would not go on the wire as given.
public struct HTTPFieldError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
}

extension HTTPHeaders {
    /// Checks a field wsload is asked to send (profile `headers`, `--header`, an auth header's name): the name an RFC 9110
    /// §5.6.2 token, the value without CR, LF, NUL or any other control character but horizontal tab (§5.5), so nothing
    /// can start a header of its own. The error names the field as written (made printable), never the value.
    public static func validate(name: String, value: String) throws(HTTPFieldError) {
        try validate(name: name)
        if let bad = value.utf8.firstIndex(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            let byte = value.utf8[bad]
            let offset = value.utf8.distance(from: value.utf8.startIndex, to: bad)
            let what = byte == 0x0D ? "CR" : byte == 0x0A ? "LF" : byte == 0 ? "NUL" : TerminalText.printable(String(UnicodeScalar(byte)))
            throw HTTPFieldError(description: "the value of \(TerminalText.printable(name, limit: 80)) holds \(what) at byte \(offset); "
                + "header values cannot contain CR, LF, NUL or other control characters")
        }
    }

    /// Checks that `name` is an RFC 9110 §5.6.2 token (`!#$%&'*+-.^_`|~`, digits, letters), not empty.
    public static func validate(name: String) throws(HTTPFieldError) {
        guard !name.isEmpty else { throw HTTPFieldError(description: "a header name cannot be empty") }
        if let bad = name.utf8.firstIndex(where: { !isTokenByte($0) }) {
            let offset = name.utf8.distance(from: name.utf8.startIndex, to: bad)
            throw HTTPFieldError(description: "\"\(TerminalText.printable(name, limit: 80))\" is not a valid header name "
                + "(byte \(offset) is not a token character; RFC 9110 §5.6.2)")
        }
    }

    /// RFC 9110 §5.6.2 `tchar`.
    public static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

extension StringProtocol {
    /// Trims spaces and horizontal tabs (HTTP's optional whitespace), not other characters. Byte by byte: a
    /// space followed by a combining mark is one `Character`, but its space is still OWS.
    func trimmingOWS() -> String {
        let bytes = Substring(self).utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while start < end {
            let last = bytes.index(before: end)
            guard bytes[last] == 0x20 || bytes[last] == 0x09 else { break }
            end = last
        }
        return String(Substring(bytes[start..<end]))
    }
}

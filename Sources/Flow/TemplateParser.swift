/// Parsing `${...}` templates: done once when a profile is validated, never per message.
extension Template {
    /// The longest `${random.string(n)}` a template may ask for.
    package static let maximumRandomStringLength = 65_536

    /// Parses a template string. `$$` is a literal `$`; a `$` not followed by `{` or `$` is literal too.
    /// Errors carry the byte offset (in the UTF-8 of `text`) where the problem starts.
    package static func parse(_ text: String) -> Result<Template, TemplateSyntaxError> {
        let bytes = Array(text.utf8)
        var parts: [Part] = []
        var literal: [UInt8] = []
        var position = 0
        while position < bytes.count {
            let byte = bytes[position]
            guard byte == UInt8(ascii: "$"), position + 1 < bytes.count else {
                literal.append(byte)
                position += 1
                continue
            }
            let next = bytes[position + 1]
            if next == UInt8(ascii: "$") {
                literal.append(byte)
                position += 2
                continue
            }
            guard next == UInt8(ascii: "{") else {
                literal.append(byte)
                position += 1
                continue
            }
            guard let close = bytes[(position + 2)...].firstIndex(of: UInt8(ascii: "}")) else {
                return .failure(TemplateSyntaxError(offset: position, message: "unterminated ${ (no closing })"))
            }
            switch parsePlaceholder(bytes[(position + 2)..<close], offset: position + 2) {
            case .failure(let error): return .failure(error)
            case .success(let value):
                if !literal.isEmpty {
                    parts.append(.literal(String(decoding: literal, as: UTF8.self)))
                    literal.removeAll(keepingCapacity: true)
                }
                parts.append(.value(value))
            }
            position = close + 1
        }
        if !literal.isEmpty { parts.append(.literal(String(decoding: literal, as: UTF8.self))) }
        return .success(Template(parts: parts))
    }

    /// Every value the template reads, in order (the decoder checks each is defined before use).
    package var references: [TemplateValue] {
        parts.compactMap { part in
            if case .value(let value) = part { value } else { nil }
        }
    }

    /// True when the template has no placeholder: expanding it always gives the same text.
    package var isConstant: Bool { references.isEmpty }

    /// The text of a constant template (its literals joined); nil if it has placeholders.
    package var constantText: String? {
        var text = ""
        for part in parts {
            guard case .literal(let literal) = part else { return nil }
            text += literal
        }
        return text
    }

    /// One placeholder's contents (between `${` and `}`); `offset` is where they start in the template.
    private static func parsePlaceholder(
        _ bytes: ArraySlice<UInt8>,
        offset: Int
    ) -> Result<TemplateValue, TemplateSyntaxError> {
        func failure(_ message: String, at index: Int) -> Result<TemplateValue, TemplateSyntaxError> {
            .failure(TemplateSyntaxError(offset: offset + (index - bytes.startIndex), message: message))
        }
        guard !bytes.isEmpty else { return failure("empty ${}", at: bytes.startIndex) }
        if let open = bytes.firstIndex(of: UInt8(ascii: "(")) {
            return parseFunction(bytes, open: open, offset: offset)
        }
        let pieces = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        var pieceStart = bytes.startIndex
        for piece in pieces {
            if !isName(piece) {
                return failure("\"\(String(decoding: bytes, as: UTF8.self))\" is not a name ([A-Za-z_][A-Za-z0-9_]*)",
                               at: pieceStart)
            }
            pieceStart = piece.endIndex + 1
        }
        switch pieces.count {
        case 1:
            let name = String(decoding: pieces[0], as: UTF8.self)
            switch name {
            case "vu": return .success(.vu)
            case "iteration": return .success(.iteration)
            case "seq": return .success(.sequence)
            case "uuid": return .success(.uuid)
            case "now_ms": return .success(.nowMilliseconds)
            default: return .success(.variable(name))
            }
        case 2:
            let source = String(decoding: pieces[0], as: UTF8.self)
            let column = String(decoding: pieces[1], as: UTF8.self)
            if source == "random" {
                return failure("random.\(column) is not a function (random.int(a,b) or random.string(n))",
                               at: bytes.startIndex)
            }
            return .success(.feeder(source: source, column: column))
        default:
            return failure("a placeholder is a name or feeder.column, not a longer path", at: pieces[2].startIndex - 1)
        }
    }

    /// `random.int(a,b)` or `random.string(n)`; `open` is the index of the `(`.
    private static func parseFunction(
        _ bytes: ArraySlice<UInt8>,
        open: Int,
        offset: Int
    ) -> Result<TemplateValue, TemplateSyntaxError> {
        func failure(_ message: String, at index: Int) -> Result<TemplateValue, TemplateSyntaxError> {
            .failure(TemplateSyntaxError(offset: offset + (index - bytes.startIndex), message: message))
        }
        let name = String(decoding: bytes[..<open], as: UTF8.self)
        guard bytes.last == UInt8(ascii: ")") else { return failure("\(name)( is missing its )", at: open) }
        let argumentBytes = bytes[(open + 1)..<(bytes.endIndex - 1)]
        let arguments = argumentBytes.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        var integers: [Int64] = []
        var argumentStart = argumentBytes.startIndex
        for argument in arguments {
            let text = String(decoding: argument, as: UTF8.self).trimmingSpaces
            guard isInteger(text), let integer = Int64(text) else {
                let reason = isInteger(text) ? "is out of range (64-bit integers)" : "is not an integer"
                return failure("argument \"\(text)\" of \(name) \(reason)", at: argumentStart)
            }
            integers.append(integer)
            argumentStart = argument.endIndex + 1
        }
        switch name {
        case "random.int":
            guard integers.count == 2 else { return failure("random.int takes two integers: random.int(a,b)", at: open) }
            guard integers[0] <= integers[1] else {
                return failure("random.int(\(integers[0]),\(integers[1])): the lower bound is above the upper", at: open)
            }
            return .success(.randomInteger(integers[0]...integers[1]))
        case "random.string":
            guard integers.count == 1 else { return failure("random.string takes one length: random.string(n)", at: open) }
            guard (1...Int64(maximumRandomStringLength)).contains(integers[0]) else {
                return failure("random.string(\(integers[0])): the length must be 1...\(maximumRandomStringLength)",
                               at: open + 1)
            }
            return .success(.randomString(Int(integers[0])))
        default:
            return failure("unknown function \"\(name)\" (random.int(a,b) or random.string(n))", at: bytes.startIndex)
        }
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`: variable, feeder and column names.
    package static func isName(_ bytes: some Collection<UInt8>) -> Bool {
        guard let first = bytes.first, isLetter(first) || first == UInt8(ascii: "_") else { return false }
        return bytes.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`.
    package static func isName(_ text: String) -> Bool { isName(text.utf8) }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// An optional `-` then decimal digits (Int64's own parser also takes `+`, which the syntax does not).
    private static func isInteger(_ text: String) -> Bool {
        let digits = text.utf8.first == UInt8(ascii: "-") ? text.utf8.dropFirst() : text.utf8[...]
        return !digits.isEmpty && digits.allSatisfy(isDigit)
    }
}

extension String {
    /// Without leading and trailing spaces (the only blank `random.int( 1, 2 )` may hold).
    fileprivate var trimmingSpaces: String {
        let utf8 = self.utf8
        guard let first = utf8.firstIndex(where: { $0 != UInt8(ascii: " ") }),
              let last = utf8.lastIndex(where: { $0 != UInt8(ascii: " ") })
        else { return "" }
        return String(decoding: utf8[first...last], as: UTF8.self)
    }
}

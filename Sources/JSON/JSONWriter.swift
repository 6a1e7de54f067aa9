extension JSONValue {
    /// The document as text: two-space indented by default, keys in object order, integers without a
    /// fraction, strings escaped per RFC 8259 (non-ASCII kept as UTF-8). Deterministic: the same value
    /// always gives the same bytes, so digests of it are stable.
    package func formatted(pretty: Bool = true) -> String {
        var output = ""
        write(to: &output, indent: pretty ? 0 : nil)
        return output
    }

    private func write(to output: inout String, indent: Int?) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .number(let value): output += Self.format(value)
        case .string(let value): Self.appendQuoted(value, to: &output)
        case .array(let elements):
            guard !elements.isEmpty else { return output += "[]" }
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                Self.newline(&output, indent.map { $0 + 1 })
                element.write(to: &output, indent: indent.map { $0 + 1 })
            }
            Self.newline(&output, indent)
            output += "]"
        case .object(let object):
            guard !object.isEmpty else { return output += "{}" }
            output += "{"
            for (index, member) in object.members.enumerated() {
                if index > 0 { output += "," }
                Self.newline(&output, indent.map { $0 + 1 })
                Self.appendQuoted(member.key, to: &output)
                output += indent == nil ? ":" : ": "
                member.value.write(to: &output, indent: indent.map { $0 + 1 })
            }
            Self.newline(&output, indent)
            output += "}"
        }
    }

    private static func newline(_ output: inout String, _ indent: Int?) {
        guard let indent else { return }
        output += "\n"
        output += String(repeating: "  ", count: indent)
    }

    /// Integral values print as integers; others in the shortest form that reads back the same.
    static func format(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value.rounded() == value && abs(value) < 9.007_199_254_740_992e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// `value` as a JSON string literal, escaped as ``formatted(pretty:)`` escapes strings, appended to `output`.
    package static func appendQuoted(_ value: String, to output: inout String) {
        // Most strings need no escape: then the text goes in as one run.
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0x7F }) {
            output += "\""
            output += value
            output += "\""
            return
        }
        output += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{00}"..."\u{1F}", "\u{7F}":
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}

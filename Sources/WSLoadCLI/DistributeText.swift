import JSON

/// The two languages `wsload distribute` writes in: POSIX shell words and YAML. Every value that reaches a generated
/// file goes through one of these, so a path with quotes, `$`, spaces or newlines stays one word (tested by running
/// the scripts against recording stand-ins for sbatch, kubectl and wsload).
enum DistributeText {
    /// `text` as one POSIX shell word: single-quoted, a `'` inside written `'\''`. Nothing in it is expanded.
    static func shellWord(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// `text` for a `#` comment line: a line break would end the comment and run the rest, so every control
    /// character is shown escaped (`\n`, `\u{1B}`); the comment is for reading, the code beside it uses the real value.
    static func commentText(_ text: String) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029 {
                shown += scalar == "\n" ? "\\n" : "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    /// Shell words joined by spaces.
    static func shellWords(_ words: [String]) -> String {
        words.map(shellWord).joined(separator: " ")
    }

    /// `value` as a YAML 1.2 block document (also read alike by YAML 1.1 parsers such as PyYAML): mappings and
    /// sequences in block style, strings plain only when nothing can read them as another type, double-quoted
    /// with escapes otherwise, and multi-line text as a literal block when that keeps every character.
    static func yaml(_ value: JSONValue) -> String {
        var output = ""
        switch value {
        case .object(let object) where !object.isEmpty: writeMembers(object, indent: 0, to: &output)
        case .array(let items) where !items.isEmpty: writeItems(items, indent: 0, to: &output)
        default: output = scalar(value, indent: 0) + "\n"
        }
        return output
    }

    private static func writeMembers(_ object: JSONObject, indent: Int, to output: inout String) {
        let pad = String(repeating: " ", count: indent)
        for (key, value) in object.members {
            output += pad + yamlString(key, isKey: true) + ":"
            writeNested(value, indent: indent, to: &output)
        }
    }

    private static func writeItems(_ items: [JSONValue], indent: Int, to output: inout String) {
        let pad = String(repeating: " ", count: indent)
        for item in items {
            switch item {
            case .object(let object) where !object.isEmpty:
                // "- " then the first member on the same line, the others aligned under it.
                var nested = ""
                writeMembers(object, indent: indent + 2, to: &nested)
                output += pad + "- " + nested.dropFirst(indent + 2)
            case .array(let inner) where !inner.isEmpty:
                output += pad + "-\n"
                writeItems(inner, indent: indent + 2, to: &output)
            default:
                output += pad + "- " + scalar(item, indent: indent) + "\n"
            }
        }
    }

    /// After `key:`: a nested block on the following lines, or a scalar on the same line.
    private static func writeNested(_ value: JSONValue, indent: Int, to output: inout String) {
        switch value {
        case .object(let object) where !object.isEmpty:
            output += "\n"
            writeMembers(object, indent: indent + 2, to: &output)
        case .array(let items) where !items.isEmpty:
            output += "\n"
            writeItems(items, indent: indent + 2, to: &output)
        default:
            output += " " + scalar(value, indent: indent) + "\n"
        }
    }

    private static func scalar(_ value: JSONValue, indent: Int) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .number(let number): JSONValue.number(number).formatted(pretty: false)
        case .string(let text): literalBlock(text, indent: indent) ?? yamlString(text, isKey: false)
        case .array: "[]"
        case .object: "{}"
        }
    }

    /// Multi-line text as `|` (with `-` or `+` for its final line breaks), each line indented two more than its
    /// key or dash; nil when a literal block could not hold it exactly: a character YAML does not allow there (CR
    /// among them), no text at all, or a first line starting with a space or tab (its indentation would need an
    /// indicator, which PyYAML reads differently from the specification inside `- key:`).
    private static func literalBlock(_ text: String, indent: Int) -> String? {
        guard text.contains("\n"), text.unicodeScalars.allSatisfy(isBlockSafe) else { return nil }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.first(where: { !$0.isEmpty }), first.first != " ", first.first != "\t" else { return nil }
        var trailingBreaks = 0
        while lines.count > 1, lines.last == "" {
            lines.removeLast()
            trailingBreaks += 1
        }
        let chomping = trailingBreaks == 0 ? "-" : trailingBreaks == 1 ? "" : "+"
        let pad = String(repeating: " ", count: indent + 2)
        // Empty lines stay empty: the indentation is found from the first line that has text.
        var block = "|" + chomping
        for line in lines { block += "\n" + (line.isEmpty ? "" : pad + line) }
        // The line breaks after the last line: the one ending it comes from the caller, the kept ones are empty lines.
        block += String(repeating: "\n", count: max(0, trailingBreaks - 1))
        return block
    }

    /// Printable in a block scalar: tab, line feed, and YAML's printable set less the break-like and BOM characters.
    private static func isBlockSafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A: true
        case 0x20...0x7E: true
        case 0xA0...0xD7FF: scalar.value != 0x2028 && scalar.value != 0x2029
        case 0xE000...0xFFFD: scalar.value != 0xFEFF
        case 0x10000...0x10FFFF: true
        default: false
        }
    }

    /// A plain scalar when it cannot be read as anything but this string (letters first, a small safe alphabet, none
    /// of YAML 1.1's boolean and null words), double-quoted otherwise.
    private static func yamlString(_ text: String, isKey: Bool) -> String {
        let special: Set<String> = ["y", "n", "yes", "no", "on", "off", "true", "false", "null"]
        let isPlain = text.unicodeScalars.first.map { ("a"..."z").contains($0) || ("A"..."Z").contains($0) } == true
            && text.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._/-".unicodeScalars.contains($0)
            }
            && !special.contains(text.lowercased())
        return isPlain ? text : doubleQuoted(text)
    }

    /// `"…"` with `\"`, `\\`, the usual short escapes, and `\uXXXX`/`\UXXXXXXXX` for anything not printable.
    private static func doubleQuoted(_ text: String) -> String {
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\t": quoted += "\\t"
            case "\r": quoted += "\\r"
            default:
                if isBlockSafe(scalar) {
                    quoted.unicodeScalars.append(scalar)
                } else if scalar.value <= 0xFFFF {
                    quoted += "\\u" + hex(scalar.value, digits: 4)
                } else {
                    quoted += "\\U" + hex(scalar.value, digits: 8)
                }
            }
        }
        return quoted + "\""
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}

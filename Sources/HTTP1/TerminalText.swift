/// Text that came from a peer or a file, made safe to show on a terminal: a status reason, an error page, a URL
/// as written. Escape sequences could otherwise move the cursor, rewrite earlier lines, retitle the window or hide
/// text (CVE-class "terminal injection"); bidirectional overrides could reorder what the reader sees.
package enum TerminalText {
    /// `text` with every control character (C0, DEL, C1: ESC among them), line and paragraph separator and
    /// bidirectional formatting character shown as `\u{XX}` (`\n`, `\r` and `\t` as themselves, escaped), and cut to
    /// `limit` Unicode scalars with `…` marking the cut.
    /// - Parameter keepingLineBreaks: leave `\n` and `\t` as they are (for a message of several lines that wsload
    ///   wrote itself around peer text the source has already escaped).
    package static func printable(_ text: String, limit: Int = 200, keepingLineBreaks: Bool = false) -> String {
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count >= max(limit, 0) {
                result += "…"
                return result
            }
            count += 1
            if keepingLineBreaks && (scalar == "\n" || scalar == "\t") {
                result.unicodeScalars.append(scalar)
            } else if needsEscape(scalar) {
                result += escaped(scalar)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Whether `text` holds nothing ``printable(_:limit:keepingLineBreaks:)`` would change (for fast paths).
    package static func isPrintable(_ text: String) -> Bool { !text.unicodeScalars.contains(where: needsEscape) }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        // Line/paragraph separators and the bidirectional marks, embeddings, overrides and isolates.
        case 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    private static func escaped(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        default:
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "\\u{" + String(repeating: "0", count: max(0, 2 - hex.count)) + hex + "}"
        }
    }
}

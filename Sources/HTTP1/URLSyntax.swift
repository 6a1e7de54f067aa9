/// Why a URL's authority or target does not parse. The description quotes the URL made printable, its user info
/// left out, and names the byte offset of what is wrong.
public struct URLSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
}

/// RFC 3986 syntax, strictly, for what wsload puts on a request line and in `Host`: what follows `scheme://` split
/// into host, port and request target. Shared by ``HTTPURL`` and the WebSocket URL so that nothing a profile, an
/// option or a `Location` header says reaches the wire unchecked.
///
/// - Control characters, spaces and ASCII characters RFC 3986 does not allow (`"<>\^`{|}[]`, a bare `%`) are refused,
///   with the byte offset in the text as given.
/// - Non-ASCII characters in the path and query are percent-encoded as UTF-8 (`/ä` → `/%C3%A4`), as browsers and curl
///   do; a host must be ASCII (the `xn--` form of an international name).
/// - User info (`user:password@`) is refused and never repeated in the error; IPv6 hosts go in brackets (zone
///   identifiers and IPvFuture are refused); a port is 1–65535 (an empty port is the default one, RFC 3986 §3.2.3).
package enum URLSyntax {
    /// The longest host name accepted (DNS: 253 characters).
    package static let maximumHostLength = 253

    /// Splits `rest` (what follows `scheme://`, fragment already removed) into host (IPv6 without brackets), port and
    /// target (`/` when empty). `text` is the whole URL, for the error; `base` is where `rest` starts in it, in bytes.
    package static func split(
        _ rest: Substring, of text: String, base: Int, defaultPort: Int, userInfoHint: String
    ) throws(URLSyntaxError) -> (host: String, port: Int, target: String) {
        let bytes = Array(rest.utf8)
        let authorityEnd = bytes.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? bytes.endIndex
        let authority = bytes[..<authorityEnd]
        if authority.contains(UInt8(ascii: "@")) {
            throw failure(text, "user info (before \"@\") in the URL is not supported\(userInfoHint)")
        }
        var hostBytes = authority[...]
        var portBytes: ArraySlice<UInt8>?
        if hostBytes.first == UInt8(ascii: "[") {
            guard let close = hostBytes.firstIndex(of: UInt8(ascii: "]")) else { throw failure(text, "unclosed [ in the host") }
            let after = hostBytes[(close + 1)...]
            if after.first == UInt8(ascii: ":") {
                portBytes = after.dropFirst()
            } else if !after.isEmpty {
                throw failure(text, "unexpected \"\(show(after))\" after the host at offset \(base + close + 1)")
            }
            hostBytes = hostBytes[(hostBytes.startIndex + 1)..<close]
            guard isIPv6Address(hostBytes) else {
                throw failure(text, "\"[\(show(hostBytes))]\" is not an IPv6 address",
                              hint: "zone identifiers and IPvFuture are not supported")
            }
        } else {
            if let colon = hostBytes.lastIndex(of: UInt8(ascii: ":")) {
                portBytes = hostBytes[(colon + 1)...]
                hostBytes = hostBytes[..<colon]
            }
            guard !hostBytes.isEmpty else { throw failure(text, "has no host") }
            if let bad = hostBytes.firstIndex(where: { !isRegisteredNameByte($0) }) {
                let byte = hostBytes[bad]
                let hint = byte == UInt8(ascii: ":") ? "put an IPv6 address in brackets: [::1]"
                    : byte >= 0x80 ? "write an international host name in its xn-- form"
                    : byte == UInt8(ascii: "%") ? "percent-encoded host names are not supported" : nil
                throw failure(text, "\(describe(byte)) at offset \(base + bad) is not allowed in a host name", hint: hint)
            }
        }
        guard hostBytes.count <= maximumHostLength else {
            throw failure(text, "the host is \(hostBytes.count) bytes long; the limit is \(maximumHostLength)")
        }
        var port = defaultPort
        if let portBytes, !portBytes.isEmpty {
            guard portBytes.count <= 5, portBytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let number = Int(String(decoding: portBytes, as: UTF8.self)), (1...65535).contains(number)
            else { throw failure(text, "port \"\(show(portBytes))\" is not 1–65535") }
            port = number
        }
        let target = try requestTarget(bytes[authorityEnd...], of: text, base: base)
        return (String(decoding: hostBytes, as: UTF8.self), port, target.isEmpty ? "/" : target)
    }

    /// A path and query checked byte by byte (non-ASCII percent-encoded as UTF-8; anything else outside RFC 3986's
    /// `pchar / "/" / "?"` refused); a target that starts with `?` gets the `/` path. The error names the byte offset.
    package static func requestTarget(_ text: String) throws(URLSyntaxError) -> String {
        try requestTarget(Array(text.utf8)[...], of: text, base: 0)
    }

    static func requestTarget(_ bytes: ArraySlice<UInt8>, of text: String, base: Int) throws(URLSyntaxError) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 1)
        if bytes.first == UInt8(ascii: "?") { output.append(UInt8(ascii: "/")) }
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            let offset = base + index  // indices of `bytes` count from where `base` is
            if byte >= 0x80 {
                output.append(UInt8(ascii: "%"))
                output.append(hexDigit(byte >> 4))
                output.append(hexDigit(byte & 0x0F))
            } else if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex,
                      isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2])
                else { throw failure(text, "\"%\" at offset \(offset) does not start a %XX escape", hint: "write a % as %25") }
                output.append(contentsOf: bytes[index...(index + 2)])
                index += 2
            } else if isTargetByte(byte) {
                output.append(byte)
            } else {
                let hint = byte == 0x20 ? "write a space as %20" : byte < 0x20 || byte == 0x7F ? nil
                    : "percent-encode it as %" + String(decoding: [hexDigit(byte >> 4), hexDigit(byte & 0x0F)], as: UTF8.self)
                throw failure(text, "\(describe(byte)) at offset \(offset) is not allowed in a URL path or query", hint: hint)
            }
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Which of `schemes` (lowercase) `text` starts with, followed by `://` (ASCII letters compared case-insensitively),
    /// and what follows the `://`.
    package static func scheme(of text: String, among schemes: [String]) -> (index: Int, rest: Substring)? {
        let bytes = text.utf8
        for (index, scheme) in schemes.enumerated() {
            let prefix = Array((scheme + "://").utf8)
            guard bytes.count >= prefix.count else { continue }
            let matches = zip(bytes, prefix).allSatisfy { byte, expected in
                byte == expected || (expected >= 0x61 && expected <= 0x7A && byte == expected - 0x20)
            }
            if matches { return (index, text[bytes.index(bytes.startIndex, offsetBy: prefix.count)...]) }
        }
        return nil
    }

    /// `text` as an error shows it: user info replaced by `…`, made printable, at most 200 characters, quoted.
    package static func quoted(_ text: String) -> String {
        var shown = text
        let bytes = Array(text.utf8)
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) {
            let start = colon + 3
            let end = bytes[start...].firstIndex { "/?#".utf8.contains($0) } ?? bytes.endIndex
            if let at = bytes[start..<end].lastIndex(of: UInt8(ascii: "@")) {
                shown = String(decoding: bytes[..<start], as: UTF8.self) + "…" + String(decoding: bytes[at...], as: UTF8.self)
            }
        }
        return "\"" + TerminalText.printable(shown) + "\""
    }

    static func failure(_ text: String, _ message: String, hint: String? = nil) -> URLSyntaxError {
        URLSyntaxError(description: quoted(text) + ": " + message + (hint.map { " (\($0))" } ?? ""))
    }

    private static func show(_ bytes: ArraySlice<UInt8>) -> String {
        TerminalText.printable(String(decoding: bytes, as: UTF8.self), limit: 40)
    }

    private static func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x20: "a space"
        case 0x00..<0x20, 0x7F: "control character \(TerminalText.printable(String(UnicodeScalar(byte))))"
        case 0x80...: "a non-ASCII character"
        default: "\"\(String(UnicodeScalar(byte)))\""
        }
    }

    /// RFC 3986 `unreserved / sub-delims / ":" / "@" / "/" / "?"` (`%` is handled apart).
    static func isTargetByte(_ byte: UInt8) -> Bool {
        isUnreserved(byte) || isSubDelimiter(byte) || ":@/?".utf8.contains(byte)
    }

    /// RFC 3986 `reg-name` (and IPv4) bytes, without percent-encoding.
    static func isRegisteredNameByte(_ byte: UInt8) -> Bool { isUnreserved(byte) || isSubDelimiter(byte) }

    /// A query parameter name that needs no percent-encoding: RFC 3986 `unreserved`.
    package static func isQueryNameByte(_ byte: UInt8) -> Bool { isUnreserved(byte) }

    package static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "-._~".utf8.contains(byte)
        }
    }

    static func isSubDelimiter(_ byte: UInt8) -> Bool { "!$&'()*+,;=".utf8.contains(byte) }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x41 + value - 10 }

    /// RFC 3986 §3.2.2 `IPv6address`: up to eight 16-bit hex groups, one `::`, an optional dotted IPv4 tail.
    static func isIPv6Address(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard !bytes.isEmpty, bytes.count <= 45 else { return false }
        let text = String(decoding: bytes, as: UTF8.self)
        var halves: [Substring] = [text[...]]
        if let doubleColon = bytes.indices.first(where: { $0 + 1 < bytes.endIndex && bytes[$0] == 0x3A && bytes[$0 + 1] == 0x3A }) {
            let offset = doubleColon - bytes.startIndex
            let middle = text.utf8.index(text.utf8.startIndex, offsetBy: offset)
            halves = [text[..<middle], text[text.utf8.index(middle, offsetBy: 2)...]]
            // A third colon right after "::", or a second "::", is not an address.
            if halves[1].utf8.first == 0x3A || contains(halves[1], "::") { return false }
        }
        func groups(_ part: Substring, allowsIPv4Tail: Bool) -> Int? {
            if part.isEmpty { return 0 }
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            var count = 0
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, allowsIPv4Tail, piece.contains(".") {
                    guard isIPv4Address(piece) else { return nil }
                    count += 2
                } else {
                    guard (1...4).contains(piece.utf8.count), piece.utf8.allSatisfy(isHexDigit) else { return nil }
                    count += 1
                }
            }
            return count
        }
        if halves.count == 1 {
            return groups(halves[0], allowsIPv4Tail: true) == 8
        }
        guard let head = groups(halves[0], allowsIPv4Tail: false), let tail = groups(halves[1], allowsIPv4Tail: true) else {
            return false
        }
        return head + tail <= 7
    }

    private static func contains(_ text: Substring, _ needle: String) -> Bool {
        let bytes = Array(text.utf8), pattern = Array(needle.utf8)
        guard bytes.count >= pattern.count else { return false }
        return (0...(bytes.count - pattern.count)).contains { bytes[$0..<($0 + pattern.count)].elementsEqual(pattern) }
    }

    static func isIPv4Address(_ text: Substring) -> Bool {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.allSatisfy { octet in
            (1...3).contains(octet.utf8.count) && octet.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
                && (Int(octet).map { $0 <= 255 } ?? false) && (octet.utf8.count == 1 || octet.utf8.first != 0x30)
        }
    }
}

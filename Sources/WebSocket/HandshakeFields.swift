import HTTP1

/// The header fields an opening handshake checks (RFC 6455 §4.1, §4.2.1), read in one pass over the head.
///
/// `HTTPHeaders` looks a name up by lowercasing every field's name (a string allocated per field per lookup);
/// a handshake made about ten lookups on each side, and at 19,000 connects that was a fifth of the embedded
/// server's CPU per connection. Here each field's name is compared once, in place and ASCII case-insensitively
/// (field names are RFC 9110 tokens, ASCII), and the list tokens (`Upgrade: websocket`, `Connection: upgrade`)
/// are matched without splitting the value into strings.
package struct HandshakeFields {
    /// Some `Upgrade` field is present, whatever it lists (a request without one is plain HTTP).
    package var hasUpgrade = false
    /// A `Content-Length` or `Transfer-Encoding` field is present (an upgrade request must have neither).
    package var hasBodyFraming = false
    /// A `Host` field is present (the server requires one).
    package var hasHost = false
    /// Some `Upgrade` field lists the token `websocket`.
    package var isUpgradeToWebSocket = false
    /// Some `Connection` field lists the token `upgrade`.
    package var isConnectionUpgrade = false
    /// The first `Sec-WebSocket-Version`.
    package var version: String?
    /// The first `Sec-WebSocket-Key`, and how many there are.
    package var key: String?
    package var keyCount = 0
    /// The first `Sec-WebSocket-Accept`, and how many there are.
    package var accept: String?
    package var acceptCount = 0
    /// Every `Sec-WebSocket-Protocol` value, as sent (usually none).
    package var protocolValues: [String] = []
    /// Every `Sec-WebSocket-Extensions` value, as sent (usually none).
    package var extensionValues: [String] = []

    /// Reads `headers` once.
    package init(_ headers: HTTPHeaders) {
        for field in headers.fields {
            let name = field.name.utf8
            // The length tells the candidates apart before a byte is compared.
            switch name.count {
            case 4 where isNamed(name, "host"): hasHost = true
            case 7 where isNamed(name, "upgrade"):
                hasUpgrade = true
                if !isUpgradeToWebSocket { isUpgradeToWebSocket = listHasToken(field.value, "websocket") }
            case 14 where isNamed(name, "content-length"), 17 where isNamed(name, "transfer-encoding"):
                hasBodyFraming = true
            case 10 where isNamed(name, "connection"):
                if !isConnectionUpgrade { isConnectionUpgrade = listHasToken(field.value, "upgrade") }
            case 17 where isNamed(name, "sec-websocket-key"):
                keyCount += 1
                if key == nil { key = field.value }
            case 20 where isNamed(name, "sec-websocket-accept"):
                acceptCount += 1
                if accept == nil { accept = field.value }
            case 21 where isNamed(name, "sec-websocket-version"):
                if version == nil { version = field.value }
            case 22 where isNamed(name, "sec-websocket-protocol"): protocolValues.append(field.value)
            case 24 where isNamed(name, "sec-websocket-extensions"): extensionValues.append(field.value)
            default: break
            }
        }
    }

    /// The protocol list's elements, trimmed, empty ones dropped (as `HTTPHeaders.listValues` splits them).
    package var protocols: [String] {
        protocolValues.flatMap { $0.split(separator: ",") }.map { trimmedOWS($0.utf8) }.filter { !$0.isEmpty }
    }
}

/// Whether `name` equals `lowercase` (an ASCII lowercase literal) ignoring ASCII case.
private func isNamed(_ name: some Collection<UInt8>, _ lowercase: StaticString) -> Bool {
    guard name.count == lowercase.utf8CodeUnitCount else { return false }
    return lowercase.withUTF8Buffer { expected in
        zip(name, expected).allSatisfy { byte, wanted in byte | (byte &- 65 < 26 ? 0x20 : 0) == wanted }
    }
}

/// Whether the comma-separated list `value` has an element equal to `token` (ASCII lowercase) ignoring ASCII case,
/// each element trimmed of spaces and tabs (RFC 9110 §5.6.1).
private func listHasToken(_ value: String, _ token: StaticString) -> Bool {
    let bytes = value.utf8
    var start = bytes.startIndex
    while start <= bytes.endIndex {
        let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex
        var first = start
        var last = end
        while first < last, bytes[first] == 0x20 || bytes[first] == 0x09 { first = bytes.index(after: first) }
        while first < last, bytes[bytes.index(before: last)] == 0x20 || bytes[bytes.index(before: last)] == 0x09 {
            last = bytes.index(before: last)
        }
        if isNamed(bytes[first..<last], token) { return true }
        guard end < bytes.endIndex else { return false }
        start = bytes.index(after: end)
    }
    return false
}

/// `element` without leading and trailing spaces and tabs.
private func trimmedOWS(_ element: Substring.UTF8View) -> String {
    var first = element.startIndex
    var last = element.endIndex
    while first < last, element[first] == 0x20 || element[first] == 0x09 { first = element.index(after: first) }
    while first < last, element[element.index(before: last)] == 0x20 || element[element.index(before: last)] == 0x09 {
        last = element.index(before: last)
    }
    return String(Substring(element[first..<last]))
}

/// Whether `key` is the base64 of exactly 16 bytes (RFC 6455 §4.2.1 item 5): 22 characters of the base64 alphabet
/// and `==`, as `Crypto.base64Decoded(key)?.count == 16` decides, without decoding.
func isSixteenByteBase64(_ key: String) -> Bool {
    let bytes = key.utf8
    guard bytes.count == 24 else { return false }
    var index = 0
    for byte in bytes {
        switch index {
        case 22, 23: if byte != UInt8(ascii: "=") { return false }
        default:
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "+"), UInt8(ascii: "/"):
                break
            default: return false
            }
        }
        index += 1
    }
    return true
}

import HTTP1

/// A `ws://` or `wss://` URL split into what the handshake needs (RFC 6455 §3).
public struct WebSocketURL: Sendable, Hashable, CustomStringConvertible {
    public var isSecure: Bool
    /// Host name or IP address (IPv6 without brackets).
    public var host: String
    public var port: Int
    /// Path and query (`/` when empty).
    public var target: String

    /// Why a string is not a WebSocket URL.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Parses `ws://host[:port][/path][?query]` or `wss://…` strictly (``URLSyntax``): control characters, spaces,
    /// user info and characters outside RFC 3986 are refused, non-ASCII in the path and query is percent-encoded as
    /// UTF-8. A fragment is refused: RFC 6455 §3 says it MUST NOT be used (a `#` is written `%23`).
    public init(_ text: String) throws(ParseError) {
        guard let (index, rest) = URLSyntax.scheme(of: text, among: ["ws", "wss"]) else {
            throw ParseError(description: "\(URLSyntax.quoted(text)) is not a ws:// or wss:// URL")
        }
        isSecure = index == 1
        if let hash = rest.utf8.firstIndex(of: UInt8(ascii: "#")) {
            let offset = text.utf8.distance(from: text.utf8.startIndex, to: hash)
            throw ParseError(description: "\(URLSyntax.quoted(text)): WebSocket URLs cannot have a fragment (\"#\" at offset \(offset); "
                + "write it as %23)")
        }
        do {
            (host, port, target) = try URLSyntax.split(rest, of: text, base: isSecure ? 6 : 5, defaultPort: isSecure ? 443 : 80,
                                                       userInfoHint: "; use auth")
        } catch {
            throw ParseError(description: error.description)
        }
    }

    public var description: String {
        let name = host.contains(":") ? "[\(host)]" : host
        let isDefaultPort = port == (isSecure ? 443 : 80)
        return "\(isSecure ? "wss" : "ws")://\(name)\(isDefaultPort ? "" : ":\(port)")\(target)"
    }

    /// The URL with `name=value` added to the query, percent-encoding the value (for query-token auth).
    public func addingQueryItem(name: String, value: String) -> WebSocketURL {
        var copy = self
        let encoded = value.utf8.map { byte -> String in
            let isUnreserved = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
            return isUnreserved ? String(UnicodeScalar(byte)) : "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }.joined()
        copy.target += (target.contains("?") ? "&" : "?") + "\(name)=\(encoded)"
        return copy
    }
}

extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}

/// An `http://` or `https://` URL split into what a request needs.
public struct HTTPURL: Sendable, Hashable, CustomStringConvertible {
    public var isSecure: Bool
    /// Host name or IP address (IPv6 without brackets).
    public var host: String
    public var port: Int
    /// Path and query, `/` when empty; never a fragment.
    public var target: String

    /// Why a URL was refused (not http(s), no host, a bad port…).
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    public init(isSecure: Bool, host: String, port: Int, target: String) {
        self.isSecure = isSecure
        self.host = host
        self.port = port
        self.target = target
    }

    /// Parses `http[s]://host[:port][/path][?query][#fragment]` strictly (``URLSyntax``): the fragment is dropped,
    /// user info, control characters, spaces and characters outside RFC 3986 are refused, non-ASCII in the path and
    /// query is percent-encoded as UTF-8, and dot segments are removed (RFC 3986 §5.2.2).
    public init(_ text: String) throws(ParseError) {
        var rest: Substring
        switch URLSyntax.scheme(of: text, among: ["http", "https"]) {
        case (0, let after)?:
            isSecure = false
            rest = after
        case (_, let after)?:
            isSecure = true
            rest = after
        case nil:
            throw ParseError(description: "\(URLSyntax.quoted(text)) is not an http:// or https:// URL")
        }
        if let hash = rest.utf8.firstIndex(of: UInt8(ascii: "#")) { rest = rest[..<hash] }
        do {
            (host, port, target) = try URLSyntax.split(rest, of: text, base: isSecure ? 8 : 7, defaultPort: isSecure ? 443 : 80,
                                                       userInfoHint: "")
        } catch {
            throw ParseError(description: error.description)
        }
        target = Self.removingDotSegments(target)
    }

    /// `Host` header value: the port only when it is not the scheme's default.
    public var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isSecure ? 443 : 80) ? name : "\(name):\(port)"
    }

    public var description: String { "\(isSecure ? "https" : "http")://\(hostHeader)\(target)" }

    /// The last path segment (for naming a downloaded file), without the query; nil when empty.
    public var lastPathComponent: String? {
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard let last = path.split(separator: "/").last, !last.isEmpty else { return nil }
        return String(last)
    }

    /// Resolves a `Location` value against this URL (RFC 3986 §5.2, strict: a reference with a scheme is absolute).
    /// The reference is checked as strictly as a URL (``URLSyntax``): a space or control character in it is refused,
    /// never written into the next request line.
    public func resolving(_ reference: String) throws(ParseError) -> HTTPURL {
        var reference = Substring(reference.trimmingOWS())
        if let hash = reference.utf8.firstIndex(of: UInt8(ascii: "#")) { reference = reference[..<hash] }
        let firstDelimiter = reference.utf8.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? reference.endIndex
        if let colon = reference[..<firstDelimiter].utf8.firstIndex(of: UInt8(ascii: ":")),
           Self.isScheme(reference[..<colon]) {
            let scheme = reference[..<colon].lowercased()
            guard scheme == "http" || scheme == "https" else {
                throw ParseError(description: "redirect to \(URLSyntax.quoted(String(reference))) leaves http(s)")
            }
            return try HTTPURL(String(reference))
        }
        if reference.hasPrefix("//") { return try HTTPURL((isSecure ? "https:" : "http:") + reference) }
        if reference.isEmpty { return self }
        let checked: String
        do {
            checked = try URLSyntax.requestTarget(String(reference))
        } catch {
            throw ParseError(description: "redirect to " + error.description)
        }
        let basePath = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        var copy = self
        if checked.hasPrefix("/") && !reference.hasPrefix("?") {
            copy.target = Self.removingDotSegments(checked)
        } else if reference.hasPrefix("?") {
            copy.target = basePath + checked.dropFirst()  // requestTarget gave "?…" the "/" path: the base path replaces it
        } else {
            let directory = basePath.lastIndex(of: "/").map { String(basePath[...$0]) } ?? "/"
            copy.target = Self.removingDotSegments(directory + checked)
        }
        return copy
    }

    /// RFC 3986 §3.1 `scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.utf8.first, (first | 0x20) >= 0x61 && (first | 0x20) <= 0x7A else { return false }
        return text.utf8.allSatisfy { URLSyntax.isUnreserved($0) && $0 != UInt8(ascii: "_") && $0 != UInt8(ascii: "~") || $0 == UInt8(ascii: "+") }
    }

    /// RFC 3986 §5.2.4 on the path part; the query is kept as is.
    static func removingDotSegments(_ target: String) -> String {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var output: [Substring] = []
        let segments = parts[0].split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            if segment == "." {
                if isLast { output.append("") }
            } else if segment == ".." {
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            } else {
                output.append(segment)
            }
        }
        let path = "/" + output.joined(separator: "/")
        return parts.count > 1 ? path + "?" + parts[1] : path
    }
}

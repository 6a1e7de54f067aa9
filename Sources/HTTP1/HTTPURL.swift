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

    /// Parses `http[s]://host[:port][/path][?query][#fragment]`; the fragment is dropped, user info refused.
    public init(_ text: String) throws(ParseError) {
        let lowered = text.lowercased()
        var rest: Substring
        if lowered.hasPrefix("http://") {
            isSecure = false
            rest = text.dropFirst(7)
        } else if lowered.hasPrefix("https://") {
            isSecure = true
            rest = text.dropFirst(8)
        } else {
            throw ParseError(description: "\"\(text.prefix(200))\" is not an http:// or https:// URL")
        }
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        guard !rest.contains(where: { $0 == " " || $0 == "\r" || $0 == "\n" || $0 == "\t" }) else {
            throw ParseError(description: "\"\(text.prefix(200))\": whitespace in the URL")
        }
        do {
            (host, port, target) = try splitAuthorityAndTarget(rest, of: String(text.prefix(200)), defaultPort: isSecure ? 443 : 80,
                                                               userInfoHint: "")
        } catch {
            throw ParseError(description: error.description)
        }
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

    /// Resolves a `Location` value against this URL (RFC 3986 §5.2, for the forms servers send:
    /// absolute, scheme-relative, absolute-path and relative-path references).
    public func resolving(_ reference: String) throws(ParseError) -> HTTPURL {
        let reference = reference.trimmingOWS()
        let lowered = reference.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") { return try HTTPURL(reference) }
        if reference.hasPrefix("//") { return try HTTPURL((isSecure ? "https:" : "http:") + reference) }
        if reference.contains("://") { throw ParseError(description: "redirect to \"\(reference.prefix(200))\" leaves http(s)") }
        var copy = self
        let withoutFragment = reference.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        if withoutFragment.hasPrefix("/") {
            copy.target = Self.removingDotSegments(withoutFragment)
        } else if withoutFragment.hasPrefix("?") {
            copy.target = (target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/")
                + withoutFragment
        } else if withoutFragment.isEmpty {
            return self
        } else {
            let basePath = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
            let directory = basePath.lastIndex(of: "/").map { String(basePath[...$0]) } ?? "/"
            copy.target = Self.removingDotSegments(directory + withoutFragment)
        }
        return copy
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

/// Why a URL's authority or target does not parse.
public struct URLSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
}

/// Splits what follows `scheme://` into host (IPv6 without brackets), port (or `defaultPort`) and target
/// (path and query; `/` when empty). Shared by ``HTTPURL`` and the WebSocket URL. User info is refused.
public func splitAuthorityAndTarget(
    _ rest: Substring, of text: String, defaultPort: Int, userInfoHint: String
) throws(URLSyntaxError) -> (host: String, port: Int, target: String) {
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
    let authority = rest[..<authorityEnd]
    var path = String(rest[authorityEnd...])
    if path.hasPrefix("?") { path = "/" + path }
    if authority.contains("@") { throw URLSyntaxError(description: "\"\(text)\": user info in the URL is not supported\(userInfoHint)") }
    var hostPart = Substring(authority)
    var portText: Substring?
    if hostPart.hasPrefix("[") {
        guard let close = hostPart.firstIndex(of: "]") else { throw URLSyntaxError(description: "\"\(text)\": unclosed [ in host") }
        let after = hostPart[hostPart.index(after: close)...]
        if after.hasPrefix(":") {
            portText = after.dropFirst()
        } else if !after.isEmpty {
            throw URLSyntaxError(description: "\"\(text)\": unexpected \"\(after)\" after the host")
        }
        hostPart = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
    } else if let colon = hostPart.lastIndex(of: ":") {
        portText = hostPart[hostPart.index(after: colon)...]
        hostPart = hostPart[..<colon]
    }
    guard !hostPart.isEmpty else { throw URLSyntaxError(description: "\"\(text)\" has no host") }
    var port = defaultPort
    if let portText {
        guard let number = Int(portText), (1...65535).contains(number) else {
            throw URLSyntaxError(description: "\"\(text)\": port \"\(portText)\" is not 1–65535")
        }
        port = number
    }
    return (String(hostPart), port, path.isEmpty ? "/" : path)
}

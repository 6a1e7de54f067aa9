import HTTP1

/// A URL's origin (RFC 6454 §4: scheme, host, port): what credentials and a chosen TLS server name are bound to.
/// A redirect to another origin gets neither; one from https to http is refused.
package struct TransferOrigin: Sendable, Hashable, CustomStringConvertible {
    package var isSecure: Bool
    /// The host as a URL names it, lowercased (DNS names compare without case, RFC 4343).
    package var host: String
    package var port: Int

    package init(_ url: HTTPURL) {
        isSecure = url.isSecure
        host = url.host.lowercased()
        port = url.port
    }

    package var description: String { "\(isSecure ? "https" : "http")://\(host):\(port)" }

    /// Header names that carry credentials whatever the configuration says (lowercased): they never cross an origin.
    package static let credentialHeaderNames: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "x-api-key", "x-auth-token", "x-access-token", "x-csrf-token",
    ]

    /// Whether a configured header named `name` is a credential: a known credential name, one the configuration
    /// marks (a profile's header-auth name), or a name that says it holds a token, key, secret or session.
    package static func isCredentialHeader(_ name: String, marked: Set<String>) -> Bool {
        let lowered = name.lowercased()
        if credentialHeaderNames.contains(lowered) || marked.contains(lowered) { return true }
        return ["token", "secret", "auth", "session", "cookie", "key", "signature", "password"].contains { lowered.contains($0) }
    }
}

extension HTTPURL {
    /// The resource a URL names for resuming: origin and path, without the query.
    package var resourceIdentity: String {
        "\(TransferOrigin(self))\(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")"
    }

    /// The URL for messages, errors and logs: a query (signed URLs, query tokens) is replaced by `?…`.
    package var redactedDescription: String {
        guard let question = target.firstIndex(of: "?") else { return description }
        return "\(isSecure ? "https" : "http")://\(hostHeader)\(target[..<question])?…"
    }
}

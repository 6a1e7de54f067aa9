/// Where `--metrics` or `--dashboard` listens: `PORT` (loopback), `HOST:PORT` or `[IPV6]:PORT`, the host a numeric
/// address or `localhost`. Port 0 picks a free port (the bound one is printed).
package struct LiveAddress: Sendable, Hashable, CustomStringConvertible {
    /// A numeric IPv4 or IPv6 address (`localhost` becomes `127.0.0.1`).
    package var host: String
    package var port: UInt16

    package init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// - Throws: a message naming `option` and what is wrong with `text` (the CLI exits 64 with it).
    package init(parsing text: String, option: String) throws(LiveAddressError) {
        // SKELETON (r-metrics replaces this body).
        throw LiveAddressError(description: "--\(option): not built yet")
    }

    /// Whether the host is in 127.0.0.0/8 or is ::1.
    package var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    /// `127.0.0.1:9464`, `[::1]:9464`.
    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A `--metrics`/`--dashboard` address that does not parse.
package struct LiveAddressError: Error, Sendable, CustomStringConvertible {
    package var description: String
    package init(description: String) { self.description = description }
}

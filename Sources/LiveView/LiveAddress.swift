import HTTP1
import Runtime

/// Where `--metrics` or `--dashboard` listens: `PORT` (loopback), `HOST:PORT` or `[IPV6]:PORT`, the host a numeric
/// address or `localhost`; an IPv6 address may carry a zone (`[fe80::1%eth0]:9464`, by interface name or index).
/// Port 0 picks a free port (the bound one is printed).
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
        let form = "give PORT, HOST:PORT or [IPV6]:PORT, HOST a numeric address or localhost"
        func failure(_ what: String) -> LiveAddressError {
            LiveAddressError(description: "--\(option): \(what) (\(form))")
        }
        let shown = "\"\(TerminalText.printable(text, limit: 80))\""
        let hostText: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            // [IPV6]:PORT: the brackets are what separates an IPv6 address's colons from the port's.
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw failure("\(shown) has no \"]:PORT\" after the IPv6 address")
            }
            hostText = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
            guard hostText.contains(":") else { throw failure("\(shown): only an IPv6 address goes in brackets") }
        } else if let colon = text.lastIndex(of: ":") {
            hostText = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !hostText.contains(":") else { throw failure("\(shown): an IPv6 address goes in brackets, [::1]:PORT") }
        } else {
            hostText = "127.0.0.1"
            portText = Substring(text)
        }
        guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ (48...57).contains($0) }),
            let port = Int(portText), port <= 65535
        else {
            throw failure("the port in \(shown) is not a number from 0 to 65535")
        }
        let host = hostText == "localhost" ? "127.0.0.1" : String(hostText)
        if let percent = hostText.firstIndex(of: "%") {
            // A zone (RFC 4007 §11) is kept as the scope id the socket binds with; an unknown one is refused here,
            // not dropped (a link-local address without its interface does not bind).
            let zone = String(hostText[hostText.index(after: percent)...])
            guard hostText.contains(":"), SocketAddress.interfaceIndex(zone) != nil else {
                throw failure("\"\(TerminalText.printable(zone, limit: 40))\" in \(shown) is not a network interface of this "
                    + "machine (a zone is an interface name such as lo, or its index)")
            }
        }
        // Numeric only: no DNS, so the address bound is exactly the one the user typed.
        guard let address = try? SocketAddress(ip: host, port: port) else {
            throw failure("\"\(TerminalText.printable(String(hostText), limit: 80))\" is not a numeric IPv4 or IPv6 address "
                + "or localhost (names are not looked up)")
        }
        self.init(host: address.ip, port: UInt16(port))
    }

    /// Whether the host is in 127.0.0.0/8 or is ::1 (with a zone or without).
    package var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" || host.hasPrefix("::1%") }

    /// `127.0.0.1:9464`, `[::1]:9464`.
    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A `--metrics`/`--dashboard` address that does not parse.
package struct LiveAddressError: Error, Sendable, CustomStringConvertible {
    package var description: String
    package init(description: String) { self.description = description }
}

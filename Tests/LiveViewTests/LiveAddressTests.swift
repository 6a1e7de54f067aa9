import Glibc
import Runtime
import Testing
@testable import LiveView

@Suite(.timeLimit(.minutes(2))) struct LiveAddressTests {
    @Test("an address prints as host:port, IPv6 in brackets")
    func description() {
        #expect(LiveAddress(host: "127.0.0.1", port: 9464).description == "127.0.0.1:9464")
        #expect(LiveAddress(host: "::1", port: 5665).description == "[::1]:5665")
    }

    @Test("PORT, HOST:PORT, [IPV6]:PORT and localhost:PORT parse; the host is numeric and canonical")
    func parses() throws {
        let cases: [(String, String, UInt16)] = [
            ("9464", "127.0.0.1", 9464), ("0", "127.0.0.1", 0), ("65535", "127.0.0.1", 65535),
            ("127.0.0.1:9464", "127.0.0.1", 9464), ("localhost:5665", "127.0.0.1", 5665), ("[::1]:80", "::1", 80),
            ("[0:0:0:0:0:0:0:1]:80", "::1", 80), ("0.0.0.0:9464", "0.0.0.0", 9464), ("[::]:1", "::", 1),
            ("10.1.2.3:00080", "10.1.2.3", 80),
        ]
        for (text, host, port) in cases {
            let address = try LiveAddress(parsing: text, option: "metrics")
            #expect(address == LiveAddress(host: host, port: port), "\(text)")
        }
        #expect(try LiveAddress(parsing: "9464", option: "metrics").isLoopback)
        #expect(try LiveAddress(parsing: "[::1]:9464", option: "metrics").isLoopback)
        #expect(try !LiveAddress(parsing: "0.0.0.0:9464", option: "metrics").isLoopback)
    }

    @Test("a bad address names the option and says what is wrong, never looking a name up")
    func refuses() {
        let cases: [(String, String)] = [
            ("", "the port in \"\" is not a number from 0 to 65535"),
            ("65536", "the port in \"65536\" is not a number from 0 to 65535"),
            ("-1", "the port in \"-1\" is not a number from 0 to 65535"),
            ("+80", "the port in \"+80\" is not a number from 0 to 65535"),
            ("127.0.0.1:", "the port in \"127.0.0.1:\" is not a number from 0 to 65535"),
            ("127.0.0.1:99999999999999999999", "the port in \"127.0.0.1:99999999999999999999\" is not a number from 0 to 65535"),
            ("example.com:80", "\"example.com\" is not a numeric IPv4 or IPv6 address or localhost (names are not looked up)"),
            ("127.1:80", "\"127.1\" is not a numeric IPv4 or IPv6 address or localhost (names are not looked up)"),
            (":80", "\"\" is not a numeric IPv4 or IPv6 address or localhost (names are not looked up)"),
            ("::1:80", "\"::1:80\": an IPv6 address goes in brackets, [::1]:PORT"),
            ("[::1]", "\"[::1]\" has no \"]:PORT\" after the IPv6 address"),
            ("[::1]80", "\"[::1]80\" has no \"]:PORT\" after the IPv6 address"),
            ("[127.0.0.1]:80", "\"[127.0.0.1]:80\": only an IPv6 address goes in brackets"),
            ("[::g]:80", "\"::g\" is not a numeric IPv4 or IPv6 address or localhost (names are not looked up)"),
        ]
        for (text, message) in cases {
            do {
                let address = try LiveAddress(parsing: text, option: "metrics")
                Issue.record("\"\(text)\" parsed as \(address)")
            } catch {
                #expect(error.description == "--metrics: \(message) (give PORT, HOST:PORT or [IPV6]:PORT, HOST a numeric address or localhost)")
            }
        }
    }

    @Test("an IPv6 zone is kept as the scope id (by name or index), for --metrics and --dashboard alike")
    func zones() throws {
        let lo = if_nametoindex("lo")
        try #require(lo != 0, "this machine has a loopback interface named lo")
        for option in ["metrics", "dashboard"] {
            for text in ["[fe80::1%lo]:0", "[fe80::1%\(lo)]:0"] {
                let address = try LiveAddress(parsing: text, option: option)
                #expect(address.host == "fe80::1%lo" && address.port == 0 && address.description == "[fe80::1%lo]:0", "\(text)")
                let socket = try SocketAddress(ip: address.host, port: 0)
                #expect(socket.scopeID == lo && socket.ip == "fe80::1%lo", "\(text): \(socket)")
            }
            #expect(try LiveAddress(parsing: "[::1]:0", option: option).host == "::1")
            #expect(try SocketAddress(ip: "::1", port: 0).scopeID == 0)
        }
    }

    @Test("a zone that is no interface of this machine is refused naming the option (exit 64), never dropped")
    func unknownZones() {
        for (option, text, zone) in [("metrics", "[::1%nosuch]:0", "nosuch"), ("dashboard", "[fe80::1%99999]:9", "99999"),
                                     ("metrics", "[fe80::1%]:9", ""), ("metrics", "[fe80::1%a/b]:9", "a/b")] {
            do {
                let address = try LiveAddress(parsing: text, option: option)
                Issue.record("\"\(text)\" parsed as \(address)")
            } catch {
                #expect(error.description == "--\(option): \"\(zone)\" in \"\(text)\" is not a network interface of this machine "
                    + "(a zone is an interface name such as lo, or its index) (give PORT, HOST:PORT or [IPV6]:PORT, HOST a "
                    + "numeric address or localhost)", "\(error)")
            }
        }
    }

    @Test("a link-local address on lo binds with its scope when lo has one, and otherwise fails naming the address")
    func linkLocalBind() async throws {
        let address = try LiveAddress(parsing: "[fe80::1%lo]:0", option: "metrics")
        do {
            let server = try await LiveServer.start(at: address, name: "--metrics") { _ in
                .content(status: 404, contentType: "text/plain", body: [])
            }
            // The kernel gave lo this link-local address: the bound one keeps the zone.
            #expect(server.boundAddress.host == "fe80::1%lo")
            await server.stop()
        } catch {
            // Usually lo has no link-local address: the scope reached bind(2), which says the address is not here
            // (without the scope it would say EINVAL: a link-local address needs an interface).
            #expect(error.description.hasPrefix("--metrics: cannot listen on [fe80::1%lo]:0: address_not_available"), "\(error)")
        }
    }
}

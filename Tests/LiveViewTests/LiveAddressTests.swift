import Testing
@testable import LiveView

@Suite struct LiveAddressTests {
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
}

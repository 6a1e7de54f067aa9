import Glibc
import Runtime
import Testing

/// Numeric IPv4 addresses are parsed in place (every connect parses its target): exactly what inet_pton(3) accepts,
/// to the same address.
@Suite("IPv4 addresses, parsed", .timeLimit(.minutes(1)))
struct SocketAddressParsingTests {
    @Test("dotted quads parse exactly as inet_pton reads them", arguments: [
        "127.0.0.1", "0.0.0.0", "255.255.255.255", "1.2.3.4", "10.20.30.40", "192.168.100.200", "127.0.0.254",
        "01.2.3.4", "1.2.3.04", "1.2.3.00", "256.1.1.1", "1.2.3.256", "1.2.3", "1.2.3.4.5", "1..2.3", ".1.2.3", "1.2.3.",
        "1.2.3.4 ", " 1.2.3.4", "1.2.3.-4", "1.2.3.4a", "1234.1.1.1", "0x7f.0.0.1", "127.1", "", "٣.1.1.1",
    ])
    func asInetPton(text: String) {
        var reference = in_addr()
        let isValid = inet_pton(AF_INET, text, &reference) == 1
        let parsed = try? SocketAddress(ip: text, port: 8080)
        #expect((parsed != nil) == isValid, "\(text)")
        guard let parsed, isValid else { return }
        var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &reference, &buffer, socklen_t(buffer.count))
        #expect(parsed.ip == String(cString: buffer), "\(text)")
        #expect(parsed.port == 8080 && parsed.family == .ipv4)
        #expect(parsed == (try? SocketAddress(ip: parsed.ip, port: 8080)))
    }
}

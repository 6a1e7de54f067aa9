import Runtime
import TestSupport
import Testing

/// Connections to IPv4 loopback spread their source addresses over 127.0.0.1 … 127.0.0.N (`loopbackSourceCount`),
/// so no source and destination pair runs into Linux's slow ephemeral-port search past 14,116 connections.
@Suite("Source addresses toward loopback", .timeLimit(.minutes(2)))
struct SourceAddressSpreadTests {
    /// Connects `count` times to a listener on `listenOn` with `options`; returns the sources the server saw
    /// and the ports the clients were given.
    private func sources(count: Int, listenOn: String = "127.0.0.1", options: TCPOptions) async throws -> (ips: [String], ports: [Int]) {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            return try await onLoop(loop) {
                let listener = try TCPListener.bind(try SocketAddress(ip: listenOn, port: 0), on: loop)
                var ips: [String] = []
                var ports: [Int] = []
                for _ in 0..<count {
                    async let accepted = listener.accept()
                    let client = try await TCPConnection.connect(to: listener.localAddress, on: loop, options: options)
                    let server = try await accepted
                    ips.append(server.remoteAddress?.ip ?? "none")
                    ports.append(client.localAddress?.port ?? 0)
                    client.close()
                    server.close()
                }
                listener.close()
                return (ips, ports)
            }
        }
    }

    @Test("connections to 127.0.0.1 come from several loopback sources, each with a port of its own")
    func spread() async throws {
        let seen = try await sources(count: 16, options: TCPOptions())
        let allowed = Set((1...8).map { "127.0.0.\($0)" })
        #expect(seen.ips.allSatisfy { allowed.contains($0) }, "sources \(seen.ips)")
        // Round-robin (other tests connecting at the same time may take turns in between): never one source for all.
        #expect(Set(seen.ips).count > 1, "sources \(seen.ips)")
        #expect(seen.ports.allSatisfy { $0 > 0 })
    }

    @Test("any 127.x.y.z destination is spread too; loopbackSourceCount 1 and an explicit source are left alone")
    func leftAlone() async throws {
        let other = try await sources(count: 16, listenOn: "127.0.0.3", options: TCPOptions())
        #expect(Set(other.ips).count > 1, "sources \(other.ips)")
        let kernel = try await sources(count: 8, options: TCPOptions(loopbackSourceCount: 1))
        #expect(kernel.ips == Array(repeating: "127.0.0.1", count: 8))
        let fixed = try await sources(count: 4, options: TCPOptions(sourceAddress: try SocketAddress(ip: "127.0.0.9", port: 0)))
        #expect(fixed.ips == Array(repeating: "127.0.0.9", count: 4))
    }

    @Test("only 127.0.0.0/8 counts as IPv4 loopback")
    func loopbackAddresses() throws {
        for ip in ["127.0.0.1", "127.0.0.2", "127.255.255.254"] {
            #expect(try SocketAddress(ip: ip, port: 1).isIPv4Loopback, "\(ip)")
        }
        for ip in ["128.0.0.1", "10.0.0.1", "126.255.255.255", "0.0.0.0", "::1", "::ffff:127.0.0.1"] {
            #expect(try !SocketAddress(ip: ip, port: 1).isIPv4Loopback, "\(ip)")
        }
    }
}

import CLibUV
import Glibc
import Synchronization

/// Where a connection to IPv4 loopback comes from, when its options name no source address: round-robin over
/// `127.0.0.1 … 127.0.0.N` (``TCPOptions/loopbackSourceCount``).
///
/// Linux picks a connecting socket's ephemeral port by walking the even ports of the range first (14,116 of
/// 32768–60999) for one not yet used toward the same destination from the same source, then the odd ones. Past
/// 14,116 connections from one source to one destination every connect walks all the even ports before it finds
/// one: at 19,000 connections that walk (`__inet_check_established`) was half the client's CPU and the connects of
/// the last thousands took seconds. Every address of 127.0.0.0/8 is the loopback interface's, so spreading the
/// sources costs nothing and keeps each pair far below the cliff (a bind per connect, measured in
/// `Benchmarks/connect-scale.sh`).
enum SourceAddressSpread {
    /// Connections spread so far (any loop): the next one's source index. Relaxed: only the spread matters.
    private static let counter = Atomic<Int>(0)

    /// The source for the next connection to `destination`: nil (let the kernel choose) unless the destination is
    /// IPv4 loopback and `count` is above 1.
    static func source(toward destination: SocketAddress, count: Int) -> SocketAddress? {
        guard count > 1, destination.isIPv4Loopback else { return nil }
        let index = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return SocketAddress(ipv4Loopback: UInt8(truncatingIfNeeded: 1 + index.magnitude % UInt(min(count, 254))))
    }
}

extension TCPStream {
    /// Binds the socket to `source` before it connects. With port 0 the port is left to connect(2)
    /// (`IP_BIND_ADDRESS_NO_PORT`), which picks one free for the whole address pair; bind(2) would reserve a port
    /// of the source for every destination, and skip the ports other sources' connections use.
    func bindSource(_ source: SocketAddress) throws(RuntimeError) {
        let domain = source.family == .ipv6 ? AF_INET6 : AF_INET
        let descriptor = socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw RuntimeError(uvStatus: -errno, function: "socket") }
        if source.port == 0 {
            var one: Int32 = 1
            // Not supported (a kernel before 4.2): bind(2) picks the port instead, as it always did.
            _ = setsockopt(descriptor, Int32(IPPROTO_IP), IP_BIND_ADDRESS_NO_PORT, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let status = uv_tcp_open(tcp, descriptor)
        guard status == 0 else {
            Glibc.close(descriptor)
            throw RuntimeError(uvStatus: status, function: "uv_tcp_open")
        }
        // From here the handle owns the descriptor: closing the stream closes it.
        try source.withSockaddr { address throws(RuntimeError) in try uvCheck(uv_tcp_bind(tcp, address, 0), "uv_tcp_bind") }
    }
}

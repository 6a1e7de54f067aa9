import CLibUV
import Glibc

/// An IPv4 or IPv6 address with a port, as the kernel wants it (`sockaddr_storage`).
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable { case ipv4, ipv6 }

    private(set) var storage: sockaddr_storage

    /// Parses a numeric IPv4 (`127.0.0.1`) or IPv6 (`::1`, brackets optional) address; no DNS. An IPv6 address may
    /// carry a zone (`fe80::1%lo`, `fe80::1%2`, RFC 4007 §11): an interface of this machine, by name or index, kept
    /// as the address's scope id (libuv's own parser would turn an unknown or numeric zone into no scope, silently).
    public init(ip: String, port: Int) throws(RuntimeError) {
        guard (0...65535).contains(port) else {
            throw RuntimeError(.invalidArgument, function: "SocketAddress", detail: "port \(port) is out of range")
        }
        // The common case, every connect to a numeric IPv4 target: parsed in place, without a string split.
        if let host = Self.dottedQuad(ip.utf8) {
            storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { raw in
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                address.pointee.sin_family = sa_family_t(AF_INET)
                address.pointee.sin_port = UInt16(port).bigEndian
                address.pointee.sin_addr.s_addr = host.bigEndian
            }
            return
        }
        var host = ip
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var scopeID: UInt32 = 0
        if let percent = host.firstIndex(of: "%") {
            let zone = String(host[host.index(after: percent)...])
            guard host.contains(":"), let index = Self.interfaceIndex(zone) else {
                throw RuntimeError(.invalidArgument, function: "SocketAddress",
                                   detail: "\"\(ip)\": \"\(zone)\" is not a network interface of this machine")
            }
            scopeID = index
            host = String(host[..<percent])
        }
        storage = sockaddr_storage()
        let status = withUnsafeMutableBytes(of: &storage) { raw -> Int32 in
            if host.contains(":") {
                return uv_ip6_addr(host, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self))
            }
            // uv_ip4_addr accepts shorthand such as "127.1"; require the dotted quad.
            guard host.split(separator: ".", omittingEmptySubsequences: false).count == 4 else { return -1 }
            return uv_ip4_addr(host, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self))
        }
        guard status == 0 else {
            throw RuntimeError(.invalidArgument, function: "SocketAddress", detail: "\"\(ip)\" is not an IP address")
        }
        if scopeID != 0 {
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_scope_id = scopeID
            }
        }
    }

    /// `a.b.c.d` as inet_pton(3) reads it (four decimal parts of 0–255, no leading zeros, nothing else), in host
    /// byte order; nil for anything else, which the general parser then judges.
    private static func dottedQuad(_ text: String.UTF8View) -> UInt32? {
        var value: UInt32 = 0
        var part: UInt32 = 0
        var digits = 0
        var parts = 0
        for byte in text {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if digits == 1 && part == 0 { return nil }  // a leading zero
                part = part * 10 + UInt32(byte - UInt8(ascii: "0"))
                digits += 1
                if digits > 3 || part > 255 { return nil }
            case UInt8(ascii: "."):
                guard digits > 0, parts < 3 else { return nil }
                value = value << 8 | part
                parts += 1
                part = 0
                digits = 0
            default:
                return nil
            }
        }
        guard digits > 0, parts == 3 else { return nil }
        return value << 8 | part
    }

    /// The index of the network interface a zone names: a name (`lo`, `eth0`) or a decimal index, of an interface
    /// that exists now; nil otherwise.
    public static func interfaceIndex(_ zone: String) -> UInt32? {
        let isPrintable = zone.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != 0x2f }
        guard !zone.isEmpty, zone.utf8.count < Int(IF_NAMESIZE), isPrintable else { return nil }
        if zone.utf8.allSatisfy({ (48...57).contains($0) }) {
            guard let index = UInt32(zone), index > 0 else { return nil }
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE))
            return if_indextoname(index, &name) != nil ? index : nil
        }
        let index = if_nametoindex(zone)
        return index == 0 ? nil : index
    }

    /// The IPv6 scope id (an interface index; 0 when there is none, and always for IPv4).
    public var scopeID: UInt32 {
        guard family == .ipv6 else { return 0 }
        return withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self).sin6_scope_id }
    }

    init(copying address: UnsafePointer<sockaddr>) {
        storage = sockaddr_storage()
        let length = address.pointee.sa_family == sa_family_t(AF_INET6)
            ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: length)) }
    }

    /// `127.0.0.host` with port 0: a source address on the loopback interface (every address of 127.0.0.0/8 is).
    init(ipv4Loopback host: UInt8) {
        storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
            address.pointee.sin_family = sa_family_t(AF_INET)
            address.pointee.sin_addr.s_addr = (UInt32(127) << 24 | UInt32(host)).bigEndian
        }
    }

    /// IPv4 or IPv6.
    public var family: Family { Int32(storage.ss_family) == AF_INET6 ? .ipv6 : .ipv4 }

    /// Whether this is an IPv4 loopback address (127.0.0.0/8).
    public var isIPv4Loopback: Bool {
        guard family == .ipv4 else { return false }
        return withUnsafeBytes(of: storage) { UInt32(bigEndian: $0.load(as: sockaddr_in.self).sin_addr.s_addr) >> 24 == 127 }
    }

    /// The port in host byte order.
    public var port: Int {
        withUnsafeBytes(of: storage) { raw in
            family == .ipv6
                ? Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port))
                : Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
        }
    }

    /// The numeric host, e.g. `127.0.0.1` or `::1` (without brackets).
    public var ip: String {
        var buffer = [CChar](repeating: 0, count: 64)
        withUnsafeBytes(of: storage) { raw in
            if family == .ipv6 {
                var address = raw.load(as: sockaddr_in6.self)
                _ = uv_ip6_name(&address, &buffer, buffer.count)
            } else {
                var address = raw.load(as: sockaddr_in.self)
                _ = uv_ip4_name(&address, &buffer, buffer.count)
            }
        }
        let address = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let scope = scopeID
        guard scope != 0 else { return address }
        // The zone by name where the interface still has one, so `ip` parses back to the same scope.
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE))
        guard if_indextoname(scope, &name) != nil else { return address + "%\(scope)" }
        return address + "%" + String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The same address with another port.
    public func withPort(_ port: Int) -> SocketAddress {
        // The ip round-trips through our own formatting, so this cannot fail.
        (try? SocketAddress(ip: ip, port: port)) ?? self
    }

    /// `127.0.0.1:80` or `[::1]:80`.
    public var description: String { family == .ipv6 ? "[\(ip)]:\(port)" : "\(ip):\(port)" }

    func withSockaddr<T, E: Error>(_ body: (UnsafePointer<sockaddr>) throws(E) -> T) throws(E) -> T {
        let result = withUnsafeBytes(of: storage) { raw -> Result<T, E> in
            do throws(E) {
                return .success(try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self)))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        lhs.family == rhs.family && lhs.port == rhs.port && lhs.ip == rhs.ip
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ip)
        hasher.combine(port)
    }
}

/// A TCP port held without listening: connects to it are refused (RST), and no other socket can take it.
/// A restarting server holds its port this way while it is down, so that when it listens again the port
/// is still its own (on a busy host, a freed ephemeral port is soon some other socket's).
public final class PortReservation: Sendable {
    private let descriptor: Int32

    /// Binds a socket to `address` with `SO_REUSEADDR` (and `SO_REUSEPORT`, so it can be taken over by
    /// listeners that set it), without listening.
    public init(_ address: SocketAddress) throws(RuntimeError) {
        let descriptor = socket(address.family == .ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw RuntimeError(uvStatus: -errno, function: "socket") }
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let status = address.withSockaddr { pointer in
            bind(descriptor, pointer, socklen_t(address.family == .ipv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size))
        }
        guard status == 0 else {
            let error = RuntimeError(uvStatus: -errno, function: "bind")
            Glibc.close(descriptor)
            throw error
        }
        self.descriptor = descriptor
    }

    /// Releases the port (also on deinit).
    deinit { Glibc.close(descriptor) }
}

import CLibUV
import Glibc

/// A TCP stream's two ends, as the kernel names them.
extension TCPStream {
    var localAddress: SocketAddress? { address(uv_tcp_getsockname) }
    var remoteAddress: SocketAddress? { address(uv_tcp_getpeername) }

    private func address(
        _ query: (UnsafePointer<uv_tcp_t>?, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<Int32>?) -> Int32
    ) -> SocketAddress? {
        guard !isClosing else { return nil }
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutableBytes(of: &storage) { raw in
            query(tcp, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        guard status == 0 else { return nil }
        return withUnsafeBytes(of: storage) { SocketAddress(copying: $0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }
}

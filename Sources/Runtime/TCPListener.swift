import CLibUV
import Glibc

/// A listening TCP socket on one event loop; ``accept()`` hands out connections on the same loop.
///
/// To serve on every loop of a group, bind one listener per loop on the same port with
/// ``bind(_:on:backlog:)`` (an array of loops): the kernel spreads connections over them (`SO_REUSEPORT`).
public final class TCPListener: Sendable {
    public let loop: EventLoop
    let handle: ListenerHandle
    /// The bound address (with the real port when port 0 was asked for).
    public let localAddress: SocketAddress

    private init(handle: ListenerHandle, localAddress: SocketAddress) {
        loop = handle.loop
        self.handle = handle
        self.localAddress = localAddress
    }

    deinit {
        let handle = handle
        handle.loop.perform { handle.close() }
    }

    /// Binds and listens on `address`. Call on `loop`'s thread.
    /// - Parameters:
    ///   - backlog: the kernel's queue of connections not yet accepted.
    ///   - isReusePort: set `SO_REUSEPORT`, so listeners on other loops can share the port.
    ///   - options: applied to accepted connections.
    public static func bind(
        _ address: SocketAddress, on loop: EventLoop, backlog: Int32 = 1024, isReusePort: Bool = false,
        options: TCPOptions = TCPOptions()
    ) throws(RuntimeError) -> TCPListener {
        precondition(loop.inLoopThread, "TCPListener.bind must be called on \(loop)'s thread")
        let handle = try ListenerHandle(loop: loop, family: address.family, options: options)
        do throws(RuntimeError) {
            if isReusePort {
                var fd: Int32 = -1
                try uvCheck(uv_fileno(handle.handle, &fd), "uv_fileno")
                var one: Int32 = 1
                if setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size)) != 0 {
                    throw RuntimeError(uvStatus: -errno, function: "setsockopt(SO_REUSEPORT)")
                }
            }
            try address.withSockaddr { address throws(RuntimeError) in
                try uvCheck(uv_tcp_bind(handle.tcp, address, 0), "uv_tcp_bind")
            }
            try handle.listen(backlog: backlog)
            guard let bound = handle.localAddress else {
                throw RuntimeError(.io, function: "uv_tcp_getsockname", detail: "listener has no address")
            }
            return TCPListener(handle: handle, localAddress: bound)
        } catch {
            handle.close()
            throw error
        }
    }

    /// Binds one listener per loop on the same address and port (port 0: one ephemeral port for all).
    public static func bind(
        _ address: SocketAddress, on loops: [EventLoop], backlog: Int32 = 1024, options: TCPOptions = TCPOptions()
    ) async throws -> [TCPListener] {
        var listeners: [TCPListener] = []
        var address = address
        let isShared = loops.count > 1
        do {
            for loop in loops {
                let boundAddress = address
                let listener = try await loop.submit {
                    try TCPListener.bind(boundAddress, on: loop, backlog: backlog, isReusePort: isShared, options: options)
                }
                address = listener.localAddress
                listeners.append(listener)
            }
        } catch {
            for listener in listeners { listener.close() }
            throw error
        }
        return listeners
    }

    /// Waits for the next connection. Call on the loop thread.
    /// - Throws: `closed` once the listener is closed; `CancellationError` (which closes the listener).
    public func accept() async throws -> TCPConnection {
        precondition(loop.inLoopThread, "TCPListener.accept must be called on \(loop)'s thread")
        return TCPConnection(stream: try await handle.accept())
    }

    /// Stops listening; a pending ``accept()`` fails with `closed`. Callable from any thread.
    public func close() {
        let handle = handle
        loop.perform { handle.close() }
    }

    /// Connections the kernel handed over but libuv could not accept (e.g. out of descriptors).
    public var acceptErrorCount: Int { handle.acceptErrorCount }
}

/// The libuv listening handle; loop-confined.
final class ListenerHandle: LoopHandle, @unchecked Sendable {
    let options: TCPOptions
    private var accepted: [TCPStream] = []
    private var acceptedStart = 0
    private var waiter: CheckedContinuation<TCPStream, any Error>?
    private var closeReason: (any Error)?
    private(set) var acceptErrorCount = 0

    var tcp: UnsafeMutablePointer<uv_tcp_t> { rawHandle.assumingMemoryBound(to: uv_tcp_t.self) }

    init(loop: EventLoop, family: SocketAddress.Family, options: TCPOptions) throws(RuntimeError) {
        self.options = options
        super.init(loop: loop, size: MemoryLayout<uv_tcp_t>.size)
        let domain = family == .ipv6 ? AF_INET6 : AF_INET
        try uvCheck(uv_tcp_init_ex(loop.uvLoop, tcp, UInt32(domain)), "uv_tcp_init_ex")
        didInitialize()
    }

    func listen(backlog: Int32) throws(RuntimeError) {
        try uvCheck(uv_listen(rawHandle.assumingMemoryBound(to: uv_stream_t.self), backlog) { server, status in
            Unmanaged<ListenerHandle>.fromOpaque(server!.pointee.data).takeUnretainedValue()
                .didReceiveConnection(status: status)
        }, "uv_listen")
    }

    var localAddress: SocketAddress? {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutableBytes(of: &storage) { raw in
            uv_tcp_getsockname(tcp, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        guard status == 0 else { return nil }
        return withUnsafeBytes(of: storage) { SocketAddress(copying: $0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }

    private func didReceiveConnection(status: Int32) {
        guard status == 0, !isClosing else {
            acceptErrorCount += 1
            return
        }
        let client: TCPStream
        do {
            client = try TCPStream(loop: loop, options: options)
        } catch {
            acceptErrorCount += 1
            return
        }
        guard uv_accept(rawHandle.assumingMemoryBound(to: uv_stream_t.self), client.stream) == 0 else {
            acceptErrorCount += 1
            client.close()
            return
        }
        if let waiter {
            self.waiter = nil
            loop.operationEnded()
            waiter.resume(returning: client)
        } else {
            accepted.append(client)
        }
    }

    func accept() async throws -> TCPStream {
        if acceptedStart < accepted.count {
            let client = accepted[acceptedStart]
            acceptedStart += 1
            if acceptedStart == accepted.count {
                accepted.removeAll(keepingCapacity: true)
                acceptedStart = 0
            }
            return client
        }
        if isClosing { throw closeReason ?? RuntimeError(.closed, function: "accept") }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TCPStream, any Error>) in
                if isClosing {
                    return continuation.resume(throwing: closeReason ?? RuntimeError(.closed, function: "accept"))
                }
                precondition(waiter == nil, "two tasks accept on one listener")
                waiter = continuation
                loop.operationStarted()
            }
        } onCancel: {
            loop.perform {
                if self.closeReason == nil { self.closeReason = CancellationError() }
                self.close()
            }
        }
    }

    override func willClose() {
        if closeReason == nil { closeReason = RuntimeError(.closed, function: "accept", detail: "listener was closed") }
        if let waiter {
            self.waiter = nil
            loop.operationEnded()
            waiter.resume(throwing: closeReason!)
        }
        for client in accepted[acceptedStart...] { client.close() }
        accepted = []
        acceptedStart = 0
    }
}

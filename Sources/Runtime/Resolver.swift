import CLibUV
import Glibc

extension EventLoop {
    /// Resolves `host` to socket addresses with `uv_getaddrinfo` on this loop (IPv4 and IPv6, in the
    /// system's preference order). Numeric hosts are parsed without a lookup. Call on the loop thread.
    ///
    /// - Throws: `RuntimeError` with code `dns` when the name does not resolve; `CancellationError`
    ///   when the task is cancelled (the lookup's result is then discarded).
    public func resolve(host: String, port: Int) async throws -> [SocketAddress] {
        precondition(inLoopThread, "EventLoop.resolve must be called on \(self)'s thread")
        // Not an IP literal: resolve it as a name.
        if let address = try? SocketAddress(ip: host, port: port) { return [address] }
        guard (0...65535).contains(port) else {
            throw RuntimeError(.invalidArgument, function: "resolve", detail: "port \(port) is out of range")
        }
        let lookup = Lookup(loop: self)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lookup.start(host: host, port: port, continuation: continuation)
            }
        } onCancel: {
            perform { lookup.cancel() }
        }
    }
}

/// One `uv_getaddrinfo` request; loop-confined. The request owns itself until libuv's callback.
private final class Lookup: @unchecked Sendable {
    let loop: EventLoop
    var continuation: CheckedContinuation<[SocketAddress], any Error>?
    var request: UnsafeMutablePointer<uv_getaddrinfo_t>?
    var isCancelled = false

    init(loop: EventLoop) { self.loop = loop }

    func start(host: String, port: Int, continuation: CheckedContinuation<[SocketAddress], any Error>) {
        if isCancelled || Task.isCancelled {
            continuation.resume(throwing: CancellationError())
            return
        }
        self.continuation = continuation
        hostName = host
        loop.operationStarted()
        let request = allocateZeroed(uv_getaddrinfo_t.self)
        request.pointee.data = Unmanaged.passRetained(self).toOpaque()
        self.request = request
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        let status = uv_getaddrinfo(loop.uvLoop, request, { request, status, result in
            let lookup = Unmanaged<Lookup>.fromOpaque(request!.pointee.data).takeRetainedValue()
            lookup.finish(status: status, result: result)
            uv_freeaddrinfo(result)
            request!.deallocate()
        }, host, String(port), &hints)
        if status < 0 {
            Unmanaged<Lookup>.fromOpaque(request.pointee.data).release()
            request.deallocate()
            self.request = nil
            finish(status: status, result: nil)
        }
    }

    private var hostName = ""

    func finish(status: Int32, result: UnsafeMutablePointer<addrinfo>?) {
        request = nil
        guard let continuation else { return }
        self.continuation = nil
        loop.operationEnded()
        if isCancelled || status == UV_EAI_CANCELED.rawValue {
            continuation.resume(throwing: CancellationError())
            return
        }
        if status < 0 {
            var error = RuntimeError(uvStatus: status, function: "uv_getaddrinfo")
            error.code = .dnsFailure
            error.detail = "\(hostName): \(error.detail)"
            continuation.resume(throwing: error)
            return
        }
        var addresses: [SocketAddress] = []
        var entry = result
        while let current = entry {
            if let address = current.pointee.ai_addr,
                current.pointee.ai_family == AF_INET || current.pointee.ai_family == AF_INET6
            {
                let parsed = SocketAddress(copying: address)
                if !addresses.contains(parsed) { addresses.append(parsed) }
            }
            entry = current.pointee.ai_next
        }
        continuation.resume(returning: addresses)
    }

    func cancel() {
        isCancelled = true
        if let request {
            // Succeeds only if the lookup has not started on the threadpool; otherwise we answer now
            // and discard the result when it arrives.
            _ = uv_cancel(UnsafeMutableRawPointer(request).assumingMemoryBound(to: uv_req_t.self))
        }
        if let continuation {
            self.continuation = nil
            loop.operationEnded()
            continuation.resume(throwing: CancellationError())
        }
    }
}

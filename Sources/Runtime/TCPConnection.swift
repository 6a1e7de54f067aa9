/// A TCP connection on one event loop: the runtime's basic ``ByteStream``.
///
/// Create it with ``connect(to:on:options:)`` or accept it from a ``TCPListener``. Dropping the last
/// reference closes the socket on its loop, so a forgotten connection cannot leak a descriptor.
public final class TCPConnection: ByteStream {
    public let loop: EventLoop
    let stream: TCPStream

    init(stream: TCPStream) {
        loop = stream.loop
        self.stream = stream
    }

    deinit {
        let stream = stream
        stream.loop.perform { stream.close() }
    }

    /// Connects to `address`. Call on `loop`'s thread.
    /// A connection to IPv4 loopback comes from one of `options.loopbackSourceCount` loopback addresses in turn,
    /// unless `options.sourceAddress` names its source.
    /// - Throws: `RuntimeError` (`refused`, `timeout` after `options.connectTimeout`, `unreachable`,
    ///   `address_not_available` for a bad source address, ...) or `CancellationError`.
    public static func connect(
        to address: SocketAddress, on loop: EventLoop, options: TCPOptions = TCPOptions()
    ) async throws -> TCPConnection {
        precondition(loop.inLoopThread, "TCPConnection.connect must be called on \(loop)'s thread")
        var options = options
        if options.sourceAddress == nil {
            options.sourceAddress = SourceAddressSpread.source(toward: address, count: options.loopbackSourceCount)
        }
        let connection = TCPConnection(stream: try TCPStream(loop: loop, options: options))
        do {
            try await connection.stream.connect(to: address)
        } catch {
            connection.stream.close()
            throw error
        }
        return connection
    }

    /// Resolves `host` and connects to its addresses in order until one answers.
    /// - Throws: the last address's error, or `dns` when nothing resolves.
    public static func connect(
        host: String, port: Int, on loop: EventLoop, options: TCPOptions = TCPOptions()
    ) async throws -> TCPConnection {
        let addresses = try await loop.resolve(host: host, port: port)
        var lastError: any Error = RuntimeError(.dnsFailure, function: "connect", detail: "\(host) has no address")
        for address in addresses {
            do {
                return try await connect(to: address, on: loop, options: options)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    public func read(into buffer: inout [UInt8], maxBytes: Int) async throws -> Int {
        precondition(loop.inLoopThread, "TCPConnection.read must be called on \(loop)'s thread")
        return try await stream.read(into: &buffer, maxBytes: maxBytes)
    }

    public func write(_ bytes: [UInt8]) async throws {
        precondition(loop.inLoopThread, "TCPConnection.write must be called on \(loop)'s thread")
        try await stream.write(bytes)
    }

    public func setReadsCancelledByCaller(_ isOn: Bool) -> Bool {
        precondition(loop.inLoopThread, "TCPConnection.setReadsCancelledByCaller must be called on \(loop)'s thread")
        stream.areReadsCancelledByCaller = isOn
        return true
    }

    public func cancelReads() { stream.cancelOnLoop() }

    public func setReadableHandler(_ handler: (() -> Void)?) throws -> Bool {
        precondition(loop.inLoopThread, "TCPConnection.setReadableHandler must be called on \(loop)'s thread")
        try stream.setReadableHandler(handler)
        return true
    }

    public func readIfAvailable(into buffer: inout [UInt8], maxBytes: Int) throws -> Int? {
        precondition(loop.inLoopThread, "TCPConnection.readIfAvailable must be called on \(loop)'s thread")
        return try stream.readIfAvailable(into: &buffer, maxBytes: maxBytes)
    }

    public func writeIfReady(_ bytes: [UInt8]) throws -> Bool {
        precondition(loop.inLoopThread, "TCPConnection.writeIfReady must be called on \(loop)'s thread")
        return try stream.writeIfReady(bytes)
    }

    public func writeWithoutWaiting(_ bytes: [UInt8]) {
        precondition(loop.inLoopThread, "TCPConnection.writeWithoutWaiting must be called on \(loop)'s thread")
        stream.writeWithoutWaiting(bytes)
    }

    public func shutdownWrite() async throws {
        precondition(loop.inLoopThread, "TCPConnection.shutdownWrite must be called on \(loop)'s thread")
        try await stream.shutdownWrite()
    }

    public func close() {
        let stream = stream
        loop.perform { stream.close() }
    }

    /// Aborts the connection with an RST (as a crashed peer would); the peer's reads fail with `reset`.
    public func reset() {
        let stream = stream
        loop.perform { stream.reset() }
    }

    /// The local address, or `nil` once closed. Call on the loop thread.
    public var localAddress: SocketAddress? { stream.localAddress }
    /// The peer's address, or `nil` once closed. Call on the loop thread.
    public var remoteAddress: SocketAddress? { stream.remoteAddress }
    /// Bytes accepted by ``write(_:)`` but not yet handed to the kernel. Call on the loop thread.
    public var pendingWriteBytes: Int { stream.pendingWriteBytes }
    /// Bytes the peer has acknowledged since the connection opened: grows whenever a slow reader reads, where a
    /// write's completion (or the kernel's wake-up of a writer) comes far later. Call on the loop thread.
    public var deliveredBytes: Int { stream.deliveredBytes }
}

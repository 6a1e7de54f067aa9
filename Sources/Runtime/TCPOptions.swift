/// Socket options and buffer limits for TCP connections.
public struct TCPOptions: Sendable {
    /// Give up connecting after this long (`timeout`); `nil` waits for the kernel's own timeout.
    public var connectTimeout: Duration?
    /// Bind to this local address before connecting (port 0 picks one), e.g. `127.0.0.2` to use
    /// another source IP's ephemeral ports past ~28k connections to one destination.
    public var sourceAddress: SocketAddress?
    /// Connections to IPv4 loopback (127.0.0.0/8) without a ``sourceAddress`` come from `127.0.0.1 … 127.0.0.N`
    /// in turn (default 8; at most 254), so that no source and destination pair runs short of ephemeral ports
    /// (Linux's port choice slows down sharply past 14,116 connections per pair). 1: the kernel's choice.
    public var loopbackSourceCount: Int
    /// Disable Nagle's algorithm (`TCP_NODELAY`); on by default, as latency is what we measure.
    public var isNoDelay: Bool
    /// Send TCP keepalive probes after this much idleness; `nil` leaves keepalive off.
    public var keepAlive: Duration?
    /// Stop reading from the socket while this many received bytes wait for the reader.
    public var readHighWaterMark: Int
    /// A writer waits while more than this many bytes are queued for the kernel.
    public var writeHighWaterMark: Int
    /// A waiting writer resumes once the queue drains to this many bytes.
    public var writeLowWaterMark: Int

    public init(
        connectTimeout: Duration? = .seconds(10),
        sourceAddress: SocketAddress? = nil,
        loopbackSourceCount: Int = 8,
        isNoDelay: Bool = true,
        keepAlive: Duration? = nil,
        readHighWaterMark: Int = 256 * 1024,
        writeHighWaterMark: Int = 1024 * 1024,
        writeLowWaterMark: Int = 256 * 1024
    ) {
        self.connectTimeout = connectTimeout
        self.sourceAddress = sourceAddress
        self.loopbackSourceCount = loopbackSourceCount
        self.isNoDelay = isNoDelay
        self.keepAlive = keepAlive
        self.readHighWaterMark = readHighWaterMark
        self.writeHighWaterMark = writeHighWaterMark
        self.writeLowWaterMark = writeLowWaterMark
    }
}

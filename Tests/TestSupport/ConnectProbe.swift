import Runtime

/// True when a TCP connect to `port` on loopback is accepted by the kernel (something listens there).
public func canConnect(port: Int, on loop: EventLoop) async throws -> Bool {
    let address = try SocketAddress(ip: "127.0.0.1", port: port)
    return try await onLoop(loop) {
        guard let connection = try? await TCPConnection.connect(to: address, on: loop) else { return false }
        connection.close()
        return true
    }
}

/// Connects to `port` every 20 ms until a connect is accepted (for at most `limit`): when the first probe
/// started, how many were refused, and when the accepted one was; nil if none was accepted.
public func probeUntilAccepted(
    port: Int, on loop: EventLoop, limit: Duration = .seconds(20)
) async throws -> (firstStart: ContinuousClock.Instant, refused: Int, accepted: ContinuousClock.Instant)? {
    let firstStart = ContinuousClock.now
    var refused = 0
    while ContinuousClock.now < firstStart + limit {
        if try await canConnect(port: port, on: loop) { return (firstStart, refused, ContinuousClock.now) }
        refused += 1
        try await Task.sleep(for: .milliseconds(20))
    }
    return nil
}

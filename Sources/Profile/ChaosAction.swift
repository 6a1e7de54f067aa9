import WebSocket

/// A fault applied to a running server at a moment of a run (a profile's chaos timeline).
package enum ServerChaosAction: Sendable, Hashable, CustomStringConvertible {
    /// Drop the TCP connection (no close frame; clients see 1006) of this share of the sessions.
    case kill(fraction: Double)
    /// Reset the TCP connection (RST) of this share of the sessions.
    case reset(fraction: Double)
    /// Send a close frame with `code` to this share of the sessions.
    case close(code: WebSocketCloseCode, fraction: Double)
    /// Stop reading (no echoes, no pongs) for `duration` on this share of the sessions.
    case stall(duration: Duration, fraction: Double)
    /// Stop listening and drop every session; listen again on the same address after `downFor`.
    case restart(downFor: Duration)

    package var description: String {
        switch self {
        case .kill(let fraction): "kill \(Int((fraction * 100).rounded()))%"
        case .reset(let fraction): "reset \(Int((fraction * 100).rounded()))%"
        case .close(let code, let fraction): "close \(code.rawValue) \(Int((fraction * 100).rounded()))%"
        case .stall(let duration, let fraction): "stall \(duration) \(Int((fraction * 100).rounded()))%"
        case .restart(let pause): "restart (down \(pause))"
        }
    }
}

extension ServerChaosAction {
    /// The share of the connections it hits.
    package var fraction: Double {
        switch self {
        case .kill(let share), .reset(let share), .close(_, let share), .stall(_, let share): share
        case .restart: 1
        }
    }
}

extension ChaosEvent {
    /// The seed the `index`-th event of a run seeded `runSeed` draws its connections with: the same for the
    /// coordinator that fires it in process and a server process that runs the timeline itself (`--processes`).
    package static func seed(run runSeed: UInt64, index: Int) -> UInt64 { runSeed &+ UInt64(index) &* 0x9E37_79B9 }
}

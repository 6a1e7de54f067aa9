import Runtime

/// Closes a connection whose current phase overruns its timeout, with one loop timer at a time (not one per read).
///
/// A phase is a deadline (``arm(_:timeout:)``: the whole phase must end within it, e.g. a request head, so
/// a byte-by-byte trickle cannot stretch it) or an inactivity limit (``arm(_:timeout:resetsOnProgress:)``
/// with `true`: each ``progress()`` restarts the wait, e.g. a body or a write that moves slowly but moves).
/// Loop-confined: create, arm and touch it on the connection's loop thread.
final class ConnectionWatchdog: @unchecked Sendable {
    /// What the connection was doing when it ran out of time (the server counts timeouts by phase).
    enum Phase: String, Sendable {
        /// Waiting for the next request on a kept-alive connection.
        case idle
        /// Reading a request head.
        case head
        /// Reading a request body.
        case body
        /// Writing a response.
        case write
    }

    private let loop: EventLoop
    private let clock = LoopClock()
    private let onExpiry: (Phase) -> Void
    private var timer: ScheduledTimer?
    private var phase: Phase?
    private var timeout: Duration = .zero
    private var resetsOnProgress = false
    private var lastProgress: LoopClock.Instant
    /// The phase that timed out, once one did; the connection is then closed.
    private(set) var expired: Phase?

    /// - Parameter onExpiry: closes the connection (runs once, on the loop, when a phase overruns).
    init(loop: EventLoop, onExpiry: @escaping (Phase) -> Void) {
        self.loop = loop
        self.onExpiry = onExpiry
        lastProgress = clock.now
    }

    /// Starts `phase` with `timeout` (nil or zero: no limit) from now.
    func arm(_ phase: Phase, timeout: Duration?, resetsOnProgress: Bool = false) {
        timer?.cancel()
        timer = nil
        guard expired == nil, let timeout, timeout > .zero else {
            self.phase = nil
            return
        }
        self.phase = phase
        self.timeout = timeout
        self.resetsOnProgress = resetsOnProgress
        lastProgress = clock.now
        schedule(after: timeout)
    }

    /// Notes that the phase moved (bytes arrived or a write finished): an inactivity limit starts again.
    func progress() {
        if resetsOnProgress { lastProgress = clock.now }
    }

    /// Ends the current phase without a limit.
    func disarm() {
        timer?.cancel()
        timer = nil
        phase = nil
    }

    private func schedule(after delay: Duration) {
        timer = ScheduledTimer(on: loop, after: delay) { [weak self] in self?.check() }
    }

    private func check() {
        guard let phase, expired == nil else { return }
        let waited = lastProgress.duration(to: clock.now)
        if waited < timeout {
            schedule(after: timeout - waited)
            return
        }
        expired = phase
        timer = nil
        onExpiry(phase)
    }
}

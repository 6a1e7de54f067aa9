import Runtime

/// Closes a connection whose current phase overruns its timeout, with one loop timer at a time (not one per read).
///
/// A phase is a deadline (``arm(_:timeout:)``: the whole phase must end within it, e.g. a request head, so
/// a byte-by-byte trickle cannot stretch it) or an inactivity limit (``arm(_:timeout:resetsOnProgress:)``
/// with `true`: each ``progress()`` restarts the wait, e.g. a body that moves slowly but moves), or a write stall
/// (``armWrite(timeout:)``: fires only when the peer acknowledged no byte of what is queued for the whole timeout,
/// however slowly the client reads; polled a few times per timeout while bytes are queued, ends once none are).
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
    /// The socket whose write progress ``armWrite(timeout:)`` watches (TLS records go out through it too).
    private let tcp: TCPConnection?
    private let clock = LoopClock()
    private let onExpiry: (Phase) -> Void
    private var timer: ScheduledTimer?
    private var phase: Phase?
    private var timeout: Duration = .zero
    private var resetsOnProgress = false
    /// A write stall is watched: progress is the peer acknowledging bytes (``TCPConnection/deliveredBytes``).
    private var watchesWrites = false
    private var lastSent = 0
    private var lastProgress: LoopClock.Instant
    /// The phase that timed out, once one did; the connection is then closed.
    private(set) var expired: Phase?

    /// - Parameters:
    ///   - tcp: the connection's socket, for ``armWrite(timeout:)``.
    ///   - onExpiry: closes the connection (runs once, on the loop, when a phase overruns).
    init(loop: EventLoop, tcp: TCPConnection? = nil, onExpiry: @escaping (Phase) -> Void) {
        self.loop = loop
        self.tcp = tcp
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
        watchesWrites = false
        lastProgress = clock.now
        schedule(after: timeout)
    }

    /// Watches a write: the connection is closed only when, with bytes queued, the kernel took none of them for
    /// the whole `timeout` (nil or zero: no limit). Any byte taken restarts the wait, so a slow reader is never
    /// cut; the watch ends by itself once nothing is queued. Already watching: nothing changes (cheap to call
    /// per message).
    func armWrite(timeout: Duration?) {
        guard !(watchesWrites && phase == .write), let tcp else { return }
        arm(.write, timeout: timeout)
        guard phase == .write else { return }
        watchesWrites = true
        lastSent = tcp.deliveredBytes
        timer?.cancel()
        schedule(after: pollInterval)
    }

    /// How often a write stall is looked at: a quarter of the timeout, so it is noticed within 1¼ timeouts.
    private var pollInterval: Duration { max(timeout / 4, .milliseconds(10)) }

    /// Whether a write stall is being watched now.
    var isWatchingWrites: Bool { watchesWrites && phase == .write }

    /// Notes that the phase moved (bytes arrived or a write finished): an inactivity limit starts again.
    func progress() {
        if resetsOnProgress { lastProgress = clock.now }
    }

    /// Ends the current phase without a limit.
    func disarm() {
        timer?.cancel()
        timer = nil
        phase = nil
        watchesWrites = false
    }

    private func schedule(after delay: Duration) {
        timer = ScheduledTimer(on: loop, after: delay) { [weak self] in self?.check() }
    }

    private func check() {
        guard let phase, expired == nil else { return }
        if watchesWrites, let tcp {
            guard tcp.pendingWriteBytes > 0 else {
                disarm()  // Everything queued reached the kernel: nothing is stalled.
                return
            }
            let sent = tcp.deliveredBytes
            if sent != lastSent {
                lastSent = sent
                lastProgress = clock.now
            }
        }
        let waited = lastProgress.duration(to: clock.now)
        if waited < timeout {
            schedule(after: watchesWrites ? min(timeout - waited, pollInterval) : timeout - waited)
            return
        }
        expired = phase
        timer = nil
        onExpiry(phase)
    }
}

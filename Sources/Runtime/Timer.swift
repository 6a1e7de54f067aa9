import CLibUV

/// A one-shot libuv timer that resumes one waiting task.
final class TimerHandle: LoopHandle, @unchecked Sendable {
    private var continuation: CheckedContinuation<Void, any Error>?
    private var isFired = false

    init(loop: EventLoop) {
        super.init(loop: loop, size: MemoryLayout<uv_timer_t>.size)
        uv_timer_init(loop.uvLoop, rawHandle.assumingMemoryBound(to: uv_timer_t.self))
        didInitialize()
    }

    /// Arms the timer; `callback` runs on the loop thread when it fires (not when it is closed).
    func start(milliseconds: UInt64, _ callback: @escaping () -> Void) {
        self.callback = callback
        // The cached loop time may be stale after a long drain; timers are relative to it.
        uv_update_time(loop.uvLoop)
        uv_timer_start(rawHandle.assumingMemoryBound(to: uv_timer_t.self), { timer in
            let owner = Unmanaged<TimerHandle>.fromOpaque(timer!.pointee.data).takeUnretainedValue()
            owner.callback?()
            owner.callback = nil
        }, milliseconds, 0)
    }

    private var callback: (() -> Void)?

    /// Suspends until the timer fires; cancellation closes the timer and throws `CancellationError`.
    func wait(milliseconds: UInt64) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard !isClosing, !Task.isCancelled else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                self.continuation = continuation
                loop.operationStarted()
                start(milliseconds: milliseconds) { [unowned self] in
                    isFired = true
                    resume(with: .success(()))
                    close()
                }
            }
        } onCancel: {
            loop.perform { self.close() }
        }
    }

    private func resume(with result: Result<Void, any Error>) {
        guard let continuation else { return }
        self.continuation = nil
        loop.operationEnded()
        continuation.resume(with: result)
    }

    override func willClose() {
        callback = nil
        if !isFired { resume(with: .failure(CancellationError())) }
    }
}

extension Duration {
    /// Whole milliseconds, rounded up so a timer never fires early (libuv timers have 1 ms resolution).
    /// Saturates at `UInt64.max` (a timer that never fires) for durations beyond it, such as a timeout a
    /// profile gave as a huge number, instead of trapping in the conversion.
    var roundedUpMilliseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 || seconds > 0 else { return 0 }
        let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        let milliseconds = (nanoseconds / 1e6).rounded(.up)
        // 2^64 is exactly representable; anything at or past it does not fit.
        guard milliseconds < 18_446_744_073_709_551_616.0 else { return .max }
        return UInt64(milliseconds)
    }
}

extension EventLoop {
    /// Suspends the calling task for `duration` on this loop's timer wheel. Call on the loop thread.
    /// Cancellation ends the sleep at once with `CancellationError`.
    public func sleep(for duration: Duration) async throws {
        precondition(inLoopThread, "EventLoop.sleep must be called on \(self)'s thread")
        // libuv's timers count whole milliseconds of a loop time truncated to the millisecond, so a timer can
        // fire up to 1 ms before the precise deadline: wait again for whatever is left.
        let deadline = uv_hrtime() &+ UInt64(max(0, duration.nanoseconds))
        var remaining = duration
        repeat {
            try await TimerHandle(loop: self).wait(milliseconds: remaining.roundedUpMilliseconds)
            let now = uv_hrtime()
            remaining = .nanoseconds(Int64(deadline > now ? deadline - now : 0))
        } while remaining > .zero
    }
}

/// The runtime's clock: monotonic `uv_hrtime` instants; sleeping uses the calling thread's loop.
///
/// Pure code takes `some Clock<Duration>`; production passes `LoopClock()`, tests a ``ManualClock``.
/// Called off every loop thread, `sleep` falls back to `Task.sleep` on the continuous clock.
public struct LoopClock: Clock {
    /// A point on the monotonic clock, in nanoseconds since an arbitrary origin.
    public struct Instant: InstantProtocol, Sendable {
        public var nanoseconds: UInt64

        public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

        public func advanced(by duration: Duration) -> Instant {
            let delta = duration.nanoseconds
            return Instant(nanoseconds: delta >= 0 ? nanoseconds &+ UInt64(delta) : nanoseconds &- UInt64(-delta))
        }

        public func duration(to other: Instant) -> Duration {
            .nanoseconds(Int64(bitPattern: other.nanoseconds &- nanoseconds))
        }

        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
    }

    public init() {}

    public var now: Instant { Instant(nanoseconds: uv_hrtime()) }

    public var minimumResolution: Duration { .milliseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let remaining = now.duration(to: deadline)
        guard remaining > .zero else { return }
        if let loop = EventLoop.current {
            try await loop.sleep(for: remaining)
        } else {
            try await Task.sleep(for: remaining)
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (truncated), saturating at `Int64`'s range.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}

/// A one-shot callback on a loop's timer wheel; ``cancel()`` before it fires and it never runs.
///
/// For deadlines that close a handle (handshake and closing timeouts) without a task per deadline.
/// Create, cancel and fire on the loop thread.
public final class ScheduledTimer: @unchecked Sendable {
    private let timer: TimerHandle

    /// Arms a timer on `loop` (call on its thread) that runs `callback` on the loop after `delay`.
    public init(on loop: EventLoop, after delay: Duration, _ callback: @escaping () -> Void) {
        precondition(loop.inLoopThread, "ScheduledTimer must be created on \(loop)'s thread")
        let timer = TimerHandle(loop: loop)
        self.timer = timer
        timer.start(milliseconds: delay.roundedUpMilliseconds) { [unowned timer] in
            callback()
            timer.close()
        }
    }

    /// Disarms the timer; harmless after it fired. Callable from any thread.
    public func cancel() {
        let timer = timer
        timer.loop.perform { timer.close() }
    }

    deinit { cancel() }
}

import Runtime
import Synchronization

/// Parks the coordinator until its next deadline, or until something it waits for happens first (a stop
/// request, the last running connection ending): ``ring()`` from any thread wakes it at once. A ring while
/// nobody waits is kept, so the next wait returns at once and no event is lost between a check and a wait.
final class CoordinatorWakeup: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Void, Never>?
        var isRung = false
    }

    private let state = Lock(State())

    /// Wakes the waiting coordinator, or the next wait.
    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.isRung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Waits until `deadline` on `loop`'s timer wheel (call on its thread), or until rung. One waiter at a time.
    func wait(until deadline: LoopClock.Instant, on loop: EventLoop) async {
        let delay = LoopClock().now.duration(to: deadline)
        var timer: ScheduledTimer?
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isRung = state.withLock { state -> Bool in
                if state.isRung || delay <= .zero {
                    state.isRung = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if isRung {
                continuation.resume()
            } else {
                timer = ScheduledTimer(on: loop, after: delay) { [self] in ring() }
            }
        }
        // A timer that fires after a ring (before this cancel lands) leaves one spare ring: the next wait
        // returns at once and the coordinator looks again, which costs one pass and loses nothing.
        timer?.cancel()
    }
}

/// The connections (and transfer slots) started and not yet ended, counted from their own tasks; the last
/// to end rings the coordinator (it may be waiting for every connection to be done).
final class RunningConnections: Sendable {
    private let count = Atomic<Int>(0)
    let wakeup: CoordinatorWakeup

    init(wakeup: CoordinatorWakeup) { self.wakeup = wakeup }

    var value: Int { count.load(ordering: .acquiring) }

    func started() { count.add(1, ordering: .releasing) }

    func ended() {
        if count.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { wakeup.ring() }
    }
}

/// Runs `work` on `loop` and returns its result (the recorders and ledgers are confined to their loops).
func onLoop<T: Sendable>(_ loop: EventLoop, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in loop.perform { continuation.resume(returning: work()) } }
}

import CLibUV

/// A deadline on its loop's timer queue that runs a callback on the loop thread, re-armable at no cost: no
/// allocation, no libuv handle, no task and no continuation per arming. For the deadlines a connection sets over
/// and over — its pings and pong deadlines, its paced sends, its think times — where a ``ScheduledTimer`` (a
/// `uv_timer_t` opened and closed each time) or a sleeping task per deadline would cost more than the work.
///
/// The callback runs from the loop's timer phase, outside any job, so an actor on the loop may be entered with
/// `assumeIsolated`. It runs at or after the deadline, never before (libuv's millisecond clock is rounded up and
/// the deadline checked against `uv_hrtime`), and once per arming. Loop-confined: create, arm and cancel it on its
/// loop's thread. Nothing keeps a timer's owner alive while it is armed but the callback's own captures; an owner
/// that captures itself weakly or unowned cancels the timer when it goes (``cancel()`` in its `deinit`).
public final class LoopTimer {
    /// The loop whose queue the timer is armed on.
    public let loop: EventLoop
    private let callback: () -> Void
    /// The timer's slot in the queue's heap, or one of the states below. Not checked for exclusive access at run time
    /// (nor is the queue's state): loop-confined, and every access is a plain read or store, so no access can overlap
    /// another; a checked one costs a runtime call, and a sift makes a dozen (17 per open-model message).
    @exclusivity(unchecked) fileprivate var slot = LoopTimer.idle
    fileprivate static let idle = -1
    /// Taken off the heap because it is due; its callback runs in this pass unless it is cancelled or re-armed first.
    fileprivate static let firing = -2

    /// A timer on `loop` that runs `callback` each time an arming of it falls due.
    public init(on loop: EventLoop, _ callback: @escaping () -> Void) {
        self.loop = loop
        self.callback = callback
    }

    /// Whether the timer is armed (its callback has yet to run for the last arming).
    public var isArmed: Bool { slot != Self.idle }

    /// Arms the timer for `deadline` (a past deadline: the next timer pass), replacing an earlier arming.
    public func schedule(at deadline: LoopClock.Instant) {
        precondition(loop.inLoopThread, "LoopTimer must be armed on \(loop)'s thread")
        loop.timers.schedule(self, at: deadline.nanoseconds)
    }

    /// Arms the timer `delay` from now, replacing an earlier arming. A delay past the clock's range never falls due.
    public func schedule(after delay: Duration) {
        let now = LoopClock().now.nanoseconds
        let (deadline, isOverflow) = now.addingReportingOverflow(UInt64(max(0, delay.nanoseconds)))
        schedule(at: LoopClock.Instant(nanoseconds: isOverflow ? .max : deadline))
    }

    /// Disarms the timer; its callback does not run for the arming cancelled. Harmless when not armed.
    public func cancel() {
        precondition(loop.inLoopThread, "LoopTimer must be cancelled on \(loop)'s thread")
        loop.timers.cancel(self)
    }

    fileprivate func run() { callback() }
}

/// The armed ``LoopTimer``s of one loop behind a single libuv timer: a 4-ary min-heap by deadline, the libuv timer
/// armed for the earliest (four children per node: half a binary heap's depth, so half the entries moved per arming —
/// each move writes the moved timer's slot, a load from wherever that timer lives). Arming and cancelling are
/// O(log n) with no allocation once the heap has grown; a pass takes every due timer off the heap first and then
/// runs their callbacks, so a callback that re-arms its timer (or another) for a past deadline runs in the next
/// pass, not in a loop within this one. A heap rather than a hashed
/// wheel: nothing ticks while the deadlines are far (an idle connection's ping is 30 s away), and at a few tens of
/// thousands of timers per loop the heap's depth is about 8.
///
/// Loop-confined; owned by its ``EventLoop``, which closes it with its other handles.
final class TimerQueue {
    /// A heap slot: the deadline beside its timer, so sifting compares without loading the timers. The heap holds
    /// one retain of each armed timer (`Unmanaged`, so moving an entry costs no reference counting).
    private struct Entry {
        var deadline: UInt64
        var timer: Unmanaged<LoopTimer>
    }

    private let handle: UnsafeMutablePointer<uv_timer_t>
    /// Unchecked at run time, as ``LoopTimer``'s slot and the rest of the queue's state: the heap's accesses (an
    /// element's read or store, an append, a removal) run nothing outside this file while they last, and a pass runs
    /// the callbacks over a copy of ``due``.
    @exclusivity(unchecked) private var heap: [Entry] = []
    /// The due timers of the pass under way (kept for its capacity; retained until their callbacks ran).
    @exclusivity(unchecked) private var due: [Unmanaged<LoopTimer>] = []
    /// The loop time (ms) the libuv timer is armed for, if it is.
    @exclusivity(unchecked) private var armedFor: UInt64?
    @exclusivity(unchecked) private var isFiring = false
    private var isRegistered = false
    @exclusivity(unchecked) private var isClosed = false

    init() {
        handle = allocateZeroed(uv_timer_t.self)
    }

    deinit {
        // A loop dropped without its shutdown may still hold the handle: leave it to the loop then.
        if !isRegistered || isClosed { handle.deallocate() }
        for entry in heap { entry.timer.release() }
    }

    /// Registers the libuv timer with `uvLoop` (once, before the loop runs). Its `data` stays nil: the loop's
    /// handle walk at shutdown closes only runtime handles; the loop closes this one after ``close()``.
    func initialize(on uvLoop: UnsafeMutablePointer<uv_loop_t>) {
        uv_timer_init(uvLoop, handle)
        isRegistered = true
    }

    /// How many timers are armed.
    var count: Int { heap.count }

    /// The libuv handle, for the loop's shutdown to close.
    var uvHandle: UnsafeMutablePointer<uv_handle_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self) }

    /// Drops every armed timer (their callbacks never run) and stops arming: the loop is shutting down.
    func close() {
        isClosed = true
        let dropped = heap
        heap = []
        for entry in dropped {
            entry.timer.takeUnretainedValue().slot = LoopTimer.idle
            entry.timer.release()
        }
        uv_timer_stop(handle)
        armedFor = nil
    }

    func schedule(_ timer: LoopTimer, at deadline: UInt64) {
        guard !isClosed else { return }
        if timer.slot >= 0 {
            let index = timer.slot
            let isEarlier = deadline < heap[index].deadline
            heap[index].deadline = deadline
            if isEarlier { siftUp(index) } else { siftDown(index) }
        } else {
            // Idle, or taken off the heap for the pass under way (whose retain the pass gives back).
            timer.slot = heap.count
            heap.append(Entry(deadline: deadline, timer: .passRetained(timer)))
            siftUp(heap.count - 1)
        }
        if !isFiring { arm() }
    }

    func cancel(_ timer: LoopTimer) {
        switch timer.slot {
        case LoopTimer.idle:
            return
        case LoopTimer.firing:
            timer.slot = LoopTimer.idle
        default:
            remove(at: timer.slot).release()
        }
        // The libuv timer stays armed for a removed first deadline: the pass it causes finds nothing due and
        // re-arms, which is cheaper than re-arming at every cancel.
    }

    /// The libuv timer's callback: takes the due timers off the heap, runs them, re-arms for the next deadline.
    private func fire() {
        armedFor = nil
        isFiring = true
        let now = uv_hrtime()
        while let first = heap.first, first.deadline <= now {
            let timer = remove(at: 0)
            timer.takeUnretainedValue().slot = LoopTimer.firing
            due.append(timer)
        }
        for entry in due {
            let timer = entry.takeUnretainedValue()
            if timer.slot == LoopTimer.firing {
                timer.slot = LoopTimer.idle
                timer.run()
            }
            entry.release()
        }
        due.removeAll(keepingCapacity: due.capacity <= 4096)
        isFiring = false
        arm()
    }

    /// Arms the libuv timer for the first deadline, unless it is armed for it already.
    private func arm() {
        guard !isClosed, let first = heap.first else { return }
        // libuv counts whole milliseconds of its cached loop time; rounding the deadline up means the timer never
        // fires before it (a pass that finds it early anyway re-arms).
        let (rounded, isOverflow) = first.deadline.addingReportingOverflow(999_999)
        let dueMilliseconds = isOverflow ? UInt64.max / 1_000_000 : rounded / 1_000_000
        if let armedFor, armedFor <= dueMilliseconds { return }
        let uvLoop = handle.pointee.loop!
        // The cached loop time may be stale after a long drain; the timeout is relative to it.
        uv_update_time(uvLoop)
        let now = uv_now(uvLoop)
        armedFor = max(dueMilliseconds, now)
        uv_timer_start(handle, { handle in
            EventLoop.from(handle!.pointee.loop).timers.fire()
        }, dueMilliseconds > now ? dueMilliseconds - now : 0, 0)
    }

    // MARK: The heap

    /// Takes the entry at `index` off the heap; returns its timer, still retained (the caller releases it).
    private func remove(at index: Int) -> Unmanaged<LoopTimer> {
        let removed = heap[index].timer
        removed.takeUnretainedValue().slot = LoopTimer.idle
        let last = heap.removeLast()
        guard index < heap.count else { return removed }
        heap[index] = last
        last.timer.takeUnretainedValue().slot = index
        if index > 0 && last.deadline < heap[(index - 1) / 4].deadline { siftUp(index) } else { siftDown(index) }
        return removed
    }

    private func siftUp(_ start: Int) {
        var index = start
        let entry = heap[index]
        while index > 0 {
            let parent = (index - 1) / 4
            guard entry.deadline < heap[parent].deadline else { break }
            heap[index] = heap[parent]
            heap[index].timer.takeUnretainedValue().slot = index
            index = parent
        }
        heap[index] = entry
        entry.timer.takeUnretainedValue().slot = index
    }

    private func siftDown(_ start: Int) {
        var index = start
        let entry = heap[index]
        let count = heap.count
        while true {
            let first = 4 * index + 1
            guard first < count else { break }
            var child = first
            for other in (first + 1)..<min(first + 4, count) where heap[other].deadline < heap[child].deadline {
                child = other
            }
            guard heap[child].deadline < entry.deadline else { break }
            heap[index] = heap[child]
            heap[index].timer.takeUnretainedValue().slot = index
            index = child
        }
        heap[index] = entry
        entry.timer.takeUnretainedValue().slot = index
    }
}

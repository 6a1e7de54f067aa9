import Runtime
import Synchronization
import TestSupport
import Testing

/// What the loop's timers did, written on the loop thread and read by the test once it has waited for them.
private final class TimerLog: @unchecked Sendable {
    private let lock = Mutex<[(label: Int, late: Int64)]>([])

    /// `label` fired `late` nanoseconds after its deadline (negative: before it).
    func fired(_ label: Int, deadline: LoopClock.Instant) {
        let late = Int64(bitPattern: LoopClock().now.nanoseconds &- deadline.nanoseconds)
        lock.withLock { $0.append((label, late)) }
    }

    var entries: [(label: Int, late: Int64)] { lock.withLock { $0 } }
}

/// Keeps a test's timers referenced until it is done with them; touched on the loop only.
private final class TimerKeeper: @unchecked Sendable {
    var timers: [LoopTimer] = []
}

@Suite("Loop timers (one libuv timer per loop)", .timeLimit(.minutes(1)))
struct LoopTimerTests {
    @Test("timers fire in deadline order, never before their deadline, once per arming")
    func deadlineOrder() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let log = TimerLog()
            // Deadlines 1–40 ms away, armed out of order, several in the same millisecond.
            let offsets = (0..<200).map { ($0 * 7919) % 40_000 + 1_000 }
            try await onLoop(loop) {
                let start = LoopClock().now
                // The timers stay alive until they fired: the queue holds each armed one.
                for (label, offset) in offsets.enumerated() {
                    let deadline = start.advanced(by: .microseconds(offset))
                    let timer = LoopTimer(on: loop) { log.fired(label, deadline: deadline) }
                    timer.schedule(at: deadline)
                }
            }
            try await waitUntil { log.entries.count >= offsets.count }
            try await Task.sleep(for: .milliseconds(20))  // a second firing would show by now
            let entries = log.entries
            #expect(entries.count == offsets.count, "every timer fired once")
            #expect(entries.allSatisfy { $0.late >= 0 }, "early: \(entries.filter { $0.late < 0 }.prefix(5))")
            let firedOffsets = entries.map { offsets[$0.label] }
            #expect(firedOffsets == firedOffsets.sorted(), "fired out of deadline order")
        }
    }

    @Test("thousands armed, re-armed and cancelled at random: exactly the armed ones fire, each once, in deadline order")
    func randomArmings() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let log = TimerLog()
            let keep = TimerKeeper()
            let expected = try await onLoop(loop) { () -> [Int: LoopClock.Instant] in
                var random = SystemRandomNumberGenerator()
                let start = LoopClock().now
                var deadlines: [Int: LoopClock.Instant] = [:]
                for label in 0..<3000 {
                    let deadline = start.advanced(by: .microseconds(Int.random(in: 1_000...60_000, using: &random)))
                    let timer = LoopTimer(on: loop) { log.fired(label, deadline: deadlines[label] ?? deadline) }
                    keep.timers.append(timer)
                    timer.schedule(at: deadline)
                    deadlines[label] = deadline
                }
                // Cancel some, re-arm others earlier or later (the callbacks read the final deadline).
                for label in 0..<3000 {
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0...2:
                        keep.timers[label].cancel()
                        deadlines[label] = nil
                    case 3...5:
                        let deadline = start.advanced(by: .microseconds(Int.random(in: 1_000...60_000, using: &random)))
                        keep.timers[label].schedule(at: deadline)
                        deadlines[label] = deadline
                    default:
                        break
                    }
                }
                return deadlines
            }
            try await waitUntil { log.entries.count >= expected.count }
            try await Task.sleep(for: .milliseconds(80))  // past every deadline: a cancelled one would have fired
            let entries = log.entries
            #expect(entries.count == expected.count && Set(entries.map(\.label)) == Set(expected.keys))
            #expect(entries.allSatisfy { $0.late >= 0 }, "early: \(entries.filter { $0.late < 0 }.prefix(5))")
            let order = entries.compactMap { expected[$0.label]?.nanoseconds }
            #expect(order == order.sorted(), "fired out of deadline order")
            try await onLoop(loop) { keep.timers = [] }
        }
    }

    @Test("a re-armed timer fires once, at its new deadline; a cancelled one never; a due timer cancelled by another's callback does not run")
    func rearmAndCancel() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let log = TimerLog()
            let keep = TimerKeeper()
            try await onLoop(loop) {
                let now = LoopClock().now
                let moved = LoopTimer(on: loop) { log.fired(1, deadline: now.advanced(by: .milliseconds(30))) }
                moved.schedule(at: now.advanced(by: .milliseconds(5)))
                moved.schedule(at: now.advanced(by: .milliseconds(30)))  // replaces the 5 ms arming
                let cancelled = LoopTimer(on: loop) { log.fired(2, deadline: now) }
                cancelled.schedule(at: now.advanced(by: .milliseconds(10)))
                cancelled.cancel()
                // Both due in the same pass: the first to run cancels the second, which must not run then.
                let victim = LoopTimer(on: loop) { log.fired(3, deadline: now) }
                let killer = LoopTimer(on: loop) {
                    log.fired(4, deadline: now)
                    victim.cancel()
                }
                killer.schedule(at: now.advanced(by: .milliseconds(15)))
                victim.schedule(at: now.advanced(by: .milliseconds(15)).advanced(by: .nanoseconds(1)))
                keep.timers = [moved, cancelled, victim, killer]
            }
            try await waitUntil { log.entries.contains { $0.label == 1 } }
            try await Task.sleep(for: .milliseconds(20))
            let labels = log.entries.map(\.label)
            #expect(labels == [4, 1], "fired: \(labels)")
            #expect(log.entries.first { $0.label == 1 }.map { $0.late >= 0 } == true, "the re-armed timer fired early")
            try await onLoop(loop) {
                keep.timers.forEach { $0.cancel() }
                keep.timers = []
            }
        }
    }

    @Test("a callback that re-arms its timer for a past deadline runs again in a later pass, and the loop serves other work meanwhile")
    func rearmInCallback() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let runs = Atomic<Int>(0)
            let otherWork = Atomic<Int>(0)
            final class Box: @unchecked Sendable { var timer: LoopTimer? }
            let box = Box()
            try await onLoop(loop) {
                let timer = LoopTimer(on: loop) {
                    // Re-armed for a deadline already past: a pass must not loop on it forever.
                    if runs.add(1, ordering: .relaxed).newValue < 100 { box.timer?.schedule(at: LoopClock.Instant(nanoseconds: 0)) }
                    loop.execute { otherWork.add(1, ordering: .relaxed) }
                }
                box.timer = timer
                timer.schedule(after: .zero)
            }
            try await waitUntil { runs.load(ordering: .relaxed) == 100 && otherWork.load(ordering: .relaxed) == 100 }
            try await onLoop(loop) {
                box.timer?.cancel()
                box.timer = nil
            }
        }
    }

    @Test("a loop shut down with timers armed drops them: no callback runs, no handle is left open")
    func shutdownWithArmedTimers() async throws {
        let loop = try EventLoop(index: 0)
        let fired = Atomic<Int>(0)
        try await onLoop(loop) {
            for index in 0..<100 {
                let timer = LoopTimer(on: loop) { fired.add(1, ordering: .relaxed) }
                timer.schedule(after: .seconds(3600 + index))
            }
        }
        #expect(loop.liveHandleCount == 0, "a loop timer is no runtime handle")
        #expect(loop.shutdown() == 0)
        #expect(fired.load(ordering: .relaxed) == 0)
    }
}

import Runtime
import TestSupport
import Testing

/// An actor run by one loop, as the connection managers are.
private actor Tally {
    nonisolated let loop: EventLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    private(set) var count = 0
    private(set) var offLoop = 0

    init(loop: EventLoop) { self.loop = loop }

    func bump() {
        if !loop.inLoopThread { offLoop += 1 }
        count += 1
    }

    /// ``bump()`` by `times` on another tally of the same loop, from this one's isolation.
    static let bumpOnThisLoop = isolatedFunction { (tally: isolated Tally, times: Int) in
        for _ in 0..<times { tally.bump() }
    }

    func bump(_ other: Tally, times: Int) {
        Self.bumpOnThisLoop(other, times)
    }

    private var timer: LoopTimer?
    private var remaining = 0

    /// Bumps `times` times from a timer's callback made by `isolatedCallback`, re-armed from inside the callback.
    func bumpFromTimer(times: Int) {
        remaining = times
        timer = LoopTimer(on: loop, isolatedCallback { $0.fired() })
        timer?.schedule(after: .zero)
    }

    private func fired() {
        bump()
        remaining -= 1
        if remaining > 0 { timer?.schedule(after: .zero) } else { timer = nil }  // the last lets the timer go
    }
}

@Suite("Callbacks entering a loop-bound actor (isolatedCallback)", .timeLimit(.minutes(1)))
struct IsolatedCallbackTests {
    @Test("a callback made by isolatedCallback runs isolated to the actor on its loop, once per call, from a timer")
    func timerCallback() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let tally = Tally(loop: group.loops[0])
            await tally.bumpFromTimer(times: 100)
            try await Deadline.waitUntil("100 bumps") { await tally.count == 100 }
            #expect(await tally.count == 100)
            #expect(await tally.offLoop == 0)
        }
    }

    @Test("isolatedFunction: one actor enters another of its loop with an argument, and it traps off the loop")
    func functionAcrossActors() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let (first, second) = (Tally(loop: group.loops[0]), Tally(loop: group.loops[0]))
            await first.bump(second, times: 7)
            #expect(await second.count == 7)
            #expect(await first.count == 0)
            #expect(await second.offLoop == 0)
        }
        await #expect(processExitsWith: .failure) {
            let group = try EventLoopGroup(loopCount: 1)
            Tally.bumpOnThisLoop(Tally(loop: group.loops[0]), 1)  // on the test's thread, not the loop's
        }
    }

    @Test("called off the loop's thread, an isolated callback traps (the check assumeIsolated makes)")
    func trapsOffLoop() async {
        await #expect(processExitsWith: .failure) {
            let group = try EventLoopGroup(loopCount: 1)
            let tally = Tally(loop: group.loops[0])
            let callback = tally.isolatedCallback { $0.bump() }
            callback()  // on the test's thread, not the loop's
        }
    }
}

import Runtime
import TestSupport
import Testing

@Suite("Timers and clocks", .timeLimit(.minutes(1)))
struct TimerTests {
    @Test("a loop sleep lasts at least its duration")
    func sleepLowerBound() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let elapsed = try await onLoop(loop) { () async throws -> Duration in
                let clock = LoopClock()
                let start = clock.now
                try await loop.sleep(for: .milliseconds(30))
                return start.duration(to: clock.now)
            }
            #expect(elapsed >= .milliseconds(29))
        }
    }

    @Test("LoopClock sleeps on the calling loop, or via Task.sleep off the loops")
    func loopClockSleep() async throws {
        let clock = LoopClock()
        let start = clock.now
        try await clock.sleep(for: .milliseconds(5))
        #expect(start.duration(to: clock.now) >= .milliseconds(5))
        try await withLoopGroup(loopCount: 1) { group in
            try await onLoop(group.loops[0]) {
                let start = clock.now
                try await clock.sleep(until: start.advanced(by: .milliseconds(5)), tolerance: nil)
                #expect(start.duration(to: clock.now) >= .milliseconds(4))
            }
        }
    }

    @Test("sub-millisecond durations round up, never down to zero")
    func roundingUp() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let elapsed = try await onLoop(loop) { () async throws -> Duration in
                let clock = LoopClock()
                let start = clock.now
                try await loop.sleep(for: .microseconds(200))
                return start.duration(to: clock.now)
            }
            #expect(elapsed >= .microseconds(200))
        }
    }

    @Test("ManualClock wakes sleepers in deadline order only when advanced")
    func manualClock() async throws {
        let clock = ManualClock()
        let woken = WokenOrder()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for (index, delay) in [300, 100, 200].enumerated() {
                tasks.addTask {
                    try await clock.sleep(for: .milliseconds(delay))
                    await woken.append(index)
                }
            }
            await clock.waitForSleepers(count: 3)
            clock.advance(by: .milliseconds(150))
            while await woken.values.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
            #expect(await woken.values == [1])
            #expect(clock.sleeperCount == 2)
            clock.advance(by: .milliseconds(150))
            try await tasks.waitForAll()
        }
        #expect(Set(await woken.values) == [0, 1, 2])
        #expect(clock.recordedDeadlines.map(\.offset).sorted() == [.milliseconds(100), .milliseconds(200), .milliseconds(300)])
    }

    @Test("cancelling a ManualClock sleeper ends it with CancellationError")
    func manualClockCancellation() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(60)) }
        await clock.waitForSleepers(count: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }
}

private actor WokenOrder {
    var values: [Int] = []
    func append(_ value: Int) { values.append(value) }
}

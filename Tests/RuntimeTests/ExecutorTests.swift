import Foundation
import Runtime
import TestSupport
import Testing

/// A loop-bound actor holding a continuation that another task resumes: the pattern that broke actor
/// atomicity with every drain strategy but the right one (RUNTIME-NOTES, "the executor trap").
private actor Mailbox {
    let loop: EventLoop
    private var waiter: CheckedContinuation<Int, Never>?
    private var isInside = false
    private(set) var violations = 0
    private(set) var exchanges = 0

    init(loop: EventLoop) { self.loop = loop }

    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    /// Hands `value` to whoever waits, then waits for the next value itself.
    func exchange(_ value: Int) async -> Int {
        if isInside { violations += 1 }
        isInside = true
        exchanges += 1
        loop.preconditionInLoopThread()
        let previous = waiter
        waiter = nil
        previous?.resume(returning: value)
        isInside = false
        return await withCheckedContinuation { continuation in
            if isInside { violations += 1 }
            if let other = waiter {
                // Two waiters at once: pair them off immediately.
                waiter = nil
                other.resume(returning: value)
                continuation.resume(returning: value)
            } else {
                waiter = continuation
            }
        }
    }

    var hasWaiter: Bool { waiter != nil }

    func flush() {
        waiter?.resume(returning: -1)
        waiter = nil
    }
}

extension EventLoop {
    func preconditionInLoopThread() { precondition(inLoopThread, "not on \(self)") }
}

@Suite("Loop executor", .timeLimit(.minutes(2)))
struct ExecutorTests {
    /// 10,000 exchanges, each a hop between threads: 0.05 s on an idle box; 40,000 of them, through the cooperative pool,
    /// outlasted the time limit where the suite shares one CPU with a busy loop (`scripts/test.sh --one-cpu`).
    static let taskCount = 200
    static let roundCount = 50

    @Test("actor isolation holds under continuation ping-pong across loops")
    func actorIsolationUnderStress() async throws {
        try await withLoopGroup(loopCount: 2) { group in
            let mailboxes = group.loops.map { Mailbox(loop: $0) }
            let finished = Counter()
            let workers = Task {
                await withTaskGroup(of: Void.self) { tasks in
                    for taskIndex in 0..<Self.taskCount {
                        // Between exchanges a task returns to its own loop, not to the cooperative pool, where a busy
                        // full suite queues every hop behind other suites' work.
                        tasks.addTask(executorPreference: group.loops[taskIndex % group.loops.count].taskExecutor) {
                            for round in 0..<Self.roundCount {
                                let mailbox = mailboxes[(taskIndex + round) % mailboxes.count]
                                _ = await mailbox.exchange(taskIndex)
                            }
                            finished.increment()
                        }
                    }
                }
            }
            // Waiters left at the end are released so every task finishes. A full suite can hold the cooperative pool
            // (two threads here, one under `taskset`) for a minute, stalling workers and flusher alike, so the flusher
            // measures progress in its own turns: it gives up only when 2,000 of its flushes in a row, over at least
            // 30 s, saw no exchange at all, and then the test fails naming what was stuck instead of awaiting tasks
            // that will never end (which would hang the whole run past the time limit).
            let clock = ContinuousClock()
            var lastProgress = (exchanges: 0, at: clock.now, flushes: 0)
            while finished.value < Self.taskCount {
                for mailbox in mailboxes { await mailbox.flush() }
                try? await Task.sleep(for: .milliseconds(1))
                var exchanges = 0
                for mailbox in mailboxes { exchanges += await mailbox.exchanges }
                lastProgress.flushes += 1
                if exchanges != lastProgress.exchanges {
                    lastProgress = (exchanges, clock.now, 0)
                } else if lastProgress.flushes >= 2_000 && clock.now - lastProgress.at > .seconds(30) {
                    var waiting = 0
                    for mailbox in mailboxes where await mailbox.hasWaiter { waiting += 1 }
                    Issue.record("""
                        \(Self.taskCount - finished.value) tasks made no exchange in 2,000 flushes over 30 s, \(waiting) of them in a mailbox: a lost job
                        """)
                    return
                }
            }
            await workers.value
            for mailbox in mailboxes {
                #expect(await mailbox.violations == 0)
            }
        }
    }

    @Test("tasks preferring a loop's task executor run on that loop's thread")
    func taskExecutorPlacement() async throws {
        try await withLoopGroup(loopCount: 2) { group in
            for loop in group.loops {
                let isOnLoop = try await onLoop(loop) { () async throws -> Bool in
                    try await loop.sleep(for: .milliseconds(1))
                    return loop.inLoopThread && EventLoop.current === loop
                }
                #expect(isOnLoop)
            }
            #expect(EventLoop.current == nil)
        }
    }

    @Test("closures run in order, and submit returns values and errors")
    func closureScheduling() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let order = Lock<[Int]>([])
            for value in 0..<1000 {
                loop.execute { order.withLock { $0.append(value) } }
            }
            let count = try await loop.submit { order.withLock { $0.count } }
            #expect(count == 1000)
            #expect(order.withLock { $0 } == Array(0..<1000))
            await #expect(throws: RuntimeError.self) {
                try await loop.submit { () throws -> Int in throw RuntimeError(.io, function: "test") }
            }
        }
    }

    @Test("shutdown with forgotten handles whose waiters resume: each job runs once, no handle is closed twice")
    func shutdownWithParkedWaiters() async throws {
        let loop = try EventLoop()
        let listener = try await loop.submit { try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop) }
        let failures = FailureCount()
        // Tasks parked on the loop (an accept, and timers) that nobody cancels: shutdown must close their handles,
        // fail their waiters, and run each resumed job exactly once while it drains.
        var parked: [Task<Void, Never>] = [Task(executorPreference: loop.taskExecutor) {
            do { _ = try await listener.accept() } catch { failures.add() }
        }]
        for _ in 0..<3 {
            parked.append(Task(executorPreference: loop.taskExecutor) {
                do { try await loop.sleep(for: .seconds(3600)) } catch { failures.add() }
            })
        }
        try await waitUntil { loop.waitingTaskCount == 4 }
        let leaked = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: loop.shutdown()) }.start()
        }
        #expect(leaked == 4)
        for task in parked { await task.value }
        #expect(failures.value == 4)
    }

    @Test("work enqueued after shutdown is dropped and counted, not crashed on")
    func workAfterShutdown() throws {
        let loop = try EventLoop()
        #expect(loop.shutdown() == 0)
        loop.execute {}
        #expect(loop.droppedWorkCount == 1)
    }
}

private final class FailureCount: Sendable {
    private let count = Lock(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

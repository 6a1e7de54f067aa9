import Glibc
import Runtime
import Testing

/// A body handed to a pthread.
private final class ThreadBody: @unchecked Sendable {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// A result written on one thread and read after `pthread_join`, which orders the two.
private final class ResultCell<T>: @unchecked Sendable {
    var value: T?
}

/// Runs `body` on a fresh pthread with default attributes (as the loop threads are made) and returns its result.
private func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
    let cell = ResultCell<T>()
    let box = ThreadBody { cell.value = body() }
    var thread = pthread_t()
    let status = pthread_create(&thread, nil, { raw in
        Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().run()
        return nil
    }, Unmanaged.passRetained(box).toOpaque())
    precondition(status == 0, "pthread_create failed: \(status)")
    pthread_join(thread, nil)
    return cell.value!
}

@Suite("A shut-down loop's thread identity", .timeLimit(.minutes(1)))
struct DeadLoopThreadTests {
    /// glibc reuses a joined thread's descriptor, and so its `pthread_t`, for the next thread: that thread
    /// must not count as the dead loop's, or work it enqueues would start freed libuv handles.
    @Test func theNextThreadWithTheDeadLoopsPthreadIdentityIsNotOnTheLoop() async throws {
        let loop = try EventLoop(index: 0)
        let loopThread = try await loop.submit { UInt(pthread_self()) }
        loop.shutdown()
        var sawReuse = false
        for _ in 0..<8 where !sawReuse {
            let seen = onNewThread { (UInt(pthread_self()), loop.inLoopThread) }
            guard seen.0 == loopThread else { continue }
            sawReuse = true
            #expect(!seen.1, "a new thread with the dead loop's pthread_t passed inLoopThread")
            // Only once it is known to be off the loop: enqueuing is then dropped and counted, not run.
            if !seen.1 {
                onNewThread { loop.execute {} }
                #expect(loop.droppedWorkCount >= 1)
            }
        }
        // Without reuse this test would show nothing; glibc's stack cache makes it the rule here.
        #expect(sawReuse, "no new thread got the dead loop's pthread_t in 8 tries")
    }
}

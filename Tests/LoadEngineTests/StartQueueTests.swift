import Runtime
import TestSupport
import Testing
import WebSocket
@testable import LoadEngine

/// A loop is handed at most `ConnectionFleet.startsPerLoop` connections it has not started yet; when it starts the
/// last of a queue the coordinator held back, it rings the coordinator for the rest.
@Suite("Start queues", .timeLimit(.minutes(1)))
struct StartQueueTests {
    @Test("a queue takes up to the limit, then holds; emptying a held queue rings the coordinator, emptying another does not")
    func handAndRing() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let wakeup = CoordinatorWakeup()
            let queue = StartQueue(wakeup: wakeup)
            #expect(queue.hand(limit: 2) && queue.hand(limit: 2))
            #expect(!queue.hand(limit: 2), "a third while two wait")
            #expect(queue.value == 2)
            queue.started()
            let notRung = try await waitedFully(wakeup, on: loop)
            #expect(notRung, "one still waits: no ring")
            #expect(queue.hand(limit: 2), "a place is free again")
            queue.started()
            queue.started()
            let rung = try await !waitedFully(wakeup, on: loop)
            #expect(rung, "the held queue emptied: rung")
            // Not held: emptying it rings nobody.
            #expect(queue.hand(limit: 2))
            queue.started()
            let quiet = try await waitedFully(wakeup, on: loop)
            #expect(quiet)
        }
    }

    /// Whether a 100 ms wait on `wakeup` ran its full time (nobody rang).
    private func waitedFully(_ wakeup: CoordinatorWakeup, on loop: EventLoop) async throws -> Bool {
        try await onLoop(loop) {
            let clock = LoopClock()
            let started = clock.now
            await wakeup.wait(until: started.advanced(by: .milliseconds(100)), on: loop)
            return started.duration(to: clock.now) >= .milliseconds(100)
        }
    }

    @Test("a 0 s stage of 1,000 connections against the embedded server opens every one, a batch at a time")
    func allAtOnce() async throws {
        let result = try await withServer { server in
            try await LoadRun(profile: try profile("""
                {"version": 1, "name": "at-once", "target": "embedded", "duration": "3s", "gracefulStop": "10s", "seed": 3,
                 "scenarios": [{"name": "idle", "pattern": "idle", "pingInterval": "30s",
                                "stages": [{"target": 1000, "duration": "0s"}, {"target": 1000, "duration": "3s"}]}]}
                """)).run(target: RunTarget(url: try WebSocketURL(server.url)))
        }
        #expect(result.total.count("ws.connections_opened") == 1000)
        #expect(result.total.errors.isEmpty, "\(result.total.errors)")
    }
}

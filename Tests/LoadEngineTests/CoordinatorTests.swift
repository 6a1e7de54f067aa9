import EmbeddedServer
import Foundation
import LoadEngine
import Profile
import Reporting
import Runtime
import Testing
import TestSupport
import WebSocket

/// A chaos controller that applies nothing and records what it was asked, for runs that check the coordinator.
private final class RecordingChaos: ChaosController {
    let actions = Lock<[String]>([])

    func apply(_ action: ServerChaosAction, seed: UInt64) async -> Int {
        actions.withLock { $0.append(action.description) }
        return 0
    }
}

@Suite("The coordinator, event by event", .serialized, .timeLimit(.minutes(2)))
struct CoordinatorTests {
    @Test("a coordinator starved past the end of the run still fires every chaos event and follows every ramp step due before it")
    func starvedCoordinator() async throws {
        // The first progress report blocks the coordinator's own thread for longer than the rest of the run:
        // it wakes again only after the end (2 s), with two chaos events (1.3 s, 1.7 s) and the ramp's top (6 at
        // 1.5 s) due meanwhile. The report comes at the first gather (1 s) or later; whatever fell due before
        // it was done then, the rest must be done by the late wake. What is checked is what the run recorded.
        let blockedAt = Box<Duration?>(nil)
        let chaos = RecordingChaos()
        let result = try await withServer { server in
            try await LoadRun(profile: try profile("""
                {"version": 1, "name": "starved", "target": "embedded", "duration": "2s", "gracefulStop": "10s", "seed": 7,
                 "scenarios": [{"name": "idle", "pattern": "idle", "pingInterval": "30s",
                                "stages": [{"target": 6, "duration": "1500ms"}, {"target": 6, "duration": "500ms"}]}],
                 "chaos": [{"at": "1300ms", "action": "kill", "fraction": 0.5}, {"at": "1700ms", "action": "kill", "fraction": 0.25}]}
                """), onProgress: { progress in
                guard !progress.isStopping, blockedAt.value == nil else { return }
                blockedAt.value = progress.elapsed
                usleep(2_500_000)  // the coordinator's thread: nothing of the run's timetable can happen meanwhile
            }).run(target: RunTarget(url: try WebSocketURL(server.url), chaos: chaos))
        }
        let blocked = try #require(blockedAt.value)
        #expect(chaos.actions.withLock { $0 } == ["kill 50%", "kill 25%"])
        #expect(result.chaos.map(\.at) == [.milliseconds(1300), .milliseconds(1700)], "\(result.chaos)")
        for record in result.chaos {
            #expect(record.firedAt >= record.at, "\(record)")
            // Due during the block: fired by the wake after it, past the end of the duration.
            if record.at > blocked { #expect(record.firedAt >= blocked + .milliseconds(2500), "\(record), blocked at \(blocked)") }
        }
        #expect(result.scenarios[0].peakTarget == 6, "the ramp's top, due at 1.5 s, was followed")
        #expect(result.total.counter("ws.connect_attempts") <= 6)
        #expect(result.unfinishedConnections == 0 && result.invariantsHeld, "\(result.invariants)")
    }

    @Test("without a chaos controller (a URL target) the timeline is not applied and nothing is recorded")
    func noController() async throws {
        let result = try await withServer { server in
            try await LoadRun(profile: try profile("""
                {"version": 1, "name": "no-chaos", "target": "embedded", "duration": "600ms", "seed": 7,
                 "scenarios": [{"name": "idle", "pattern": "idle", "connections": 2, "pingInterval": "30s"}],
                 "chaos": [{"at": "100ms", "action": "kill"}]}
                """)).run(target: RunTarget(url: try WebSocketURL(server.url)))
        }
        #expect(result.chaos.isEmpty)
        #expect(result.total.counter("ws.connections_opened") == 2)
    }

    @Test("an embedded profile needs the host; the host starts the server, hands in its controller and stops it")
    func embeddedNeedsTheHost() async throws {
        let text = """
            {"version": 1, "name": "hosted", "target": "embedded", "duration": "30s", "seed": 7,
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 3, "messagesPerConnection": 4}],
             "chaos": [{"at": "20s", "action": "kill"}]}
            """
        await #expect(throws: LoadRunError.self) { try await LoadRun(profile: try profile(text)).run() }
        let result = try await LoadRun(profile: try profile(text)).hostedRun()
        #expect(result.total.counter("ws.messages_received") == 12)
        #expect(result.elapsed < .seconds(20), "the run ended when the budgets were spent, before the event")
        #expect(result.chaos.isEmpty && result.liveHandlesAfterStop == 0)
    }
}

import LoadEngine
import Profile
import Reporting
import RunHost
import Runtime
import Testing
@testable import WSLoadCLI

@Suite("The run summary lists the chaos timeline", .timeLimit(.minutes(2)))
struct ChaosSummaryTests {
    @Test("the summary lists each event with when it fired and the connections it hit; a reset's RSTs fail the clients' reads")
    func summaryListsEvents() async throws {
        let connections = 6
        // The run stops once both events fired and every connection is back (30 s is only the bound).
        let stop = GracefulShutdown()
        let result = try await RunHost(LoadRun(profile: try ProfileDecoder.decode(Array("""
            {"version": 1, "name": "summary-chaos", "target": "embedded", "duration": "30s", "seed": 3, "loops": 1,
             "scenarios": [{"name": "s", "pattern": "idle", "connections": \(connections), "pingInterval": "10s",
                            "reconnect": {"initial": "50ms", "max": "100ms", "jitter": "none", "maxAttempts": 50}}],
             "chaos": [{"at": "2s", "action": "reset", "fraction": 0.5}, {"at": "3s", "action": "kill"}]}
            """.utf8)), shutdown: stop, onProgress: { progress in
            let reconnected = progress.total.counter("ws.reconnects") >= UInt64(connections / 2 + connections)
            // A report at or past 3 s comes after the coordinator started both events.
            if !progress.isStopping && progress.elapsed >= .seconds(3) && progress.liveConnections >= connections
                && (reconnected || progress.elapsed >= .seconds(15)) {
                stop.request()
            }
        })).run()
        try #require(result.chaos.count == 2, "both events fired: \(result.chaos)")
        let reset = result.chaos[0]
        let kill = result.chaos[1]
        #expect(reset.action == "reset 50%" && kill.action == "kill 100%")
        #expect(reset.affected == connections / 2, "\(reset)")
        #expect(kill.affected >= 1, "\(kill)")
        // Clients hit by an RST see their read fail (a transport error); a kill's FIN ends an idle one cleanly.
        #expect((result.total.errors["transport"] ?? 0) >= UInt64(reset.affected), "\(result.total.errors)")

        let summary = RunSummary.text(result, colors: false)
        let line = try #require(summary.split(separator: "\n").first { $0.hasPrefix("chaos: ") }, "\(summary)")
        #expect(line == "chaos: " + result.chaos.map { "\($0.action) at \(formatDuration($0.firedAt)) (\($0.affected) connections)" }
            .joined(separator: "; "))
        #expect(line.contains("reset 50% at ") && line.contains("(\(connections / 2) connections)"), "\(line)")
    }
}

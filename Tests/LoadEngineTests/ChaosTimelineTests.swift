import EmbeddedServer
import Foundation
import JSON
import LoadEngine
import Reporting
import Runtime
import Testing
import TestSupport

@Suite("Chaos timelines", .serialized)
struct ChaosTimelineTests {
    @Test("kill all, a restart, closes with a code and a stall: every connection recovers, the oracle holds, the report lists the events")
    func timeline() async throws {
        let connections = 20
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "chaos", "target": "embedded", "duration": "6s", "seed": 4, "loops": 1,
             "scenarios": [{"name": "storm", "pattern": "echo", "connections": \(connections),
                            "schedule": {"model": "closed", "thinkTime": "20ms"}, "pingInterval": "200ms", "pingTimeout": "400ms",
                            "reconnect": {"initial": "50ms", "max": "400ms", "jitter": "equal", "maxAttempts": 20}}],
             "chaos": [{"at": "1s", "action": "kill"},
                       {"at": "2s", "action": "restart", "for": "500ms"},
                       {"at": "3500ms", "action": "close", "code": 1012, "fraction": 0.5},
                       {"at": "4500ms", "action": "stall", "for": "2s", "fraction": 0.25}]}
            """)).run()
        #expect(result.invariantsHeld, "\(result.invariants)")
        #expect(result.chaos.map(\.action) == ["kill 100%", "restart (down 0.5 seconds)", "close 1012 50%", "stall 2.0 seconds 25%"])
        // Every connection was up when the kill and the restart came (a late reconnect may still be on its way).
        #expect(result.chaos[0].affected == connections, "\(result.chaos)")
        #expect(result.chaos[2].affected == connections / 2, "\(result.chaos)")
        #expect(result.chaos[3].affected == connections / 4, "\(result.chaos)")
        let metrics = result.total
        #expect(metrics.disconnects[1012] == UInt64(connections / 2), "\(metrics.disconnects)")
        #expect((metrics.disconnects[1006] ?? 0) >= UInt64(connections), "kills, the restart and stalled pings end in 1006")
        #expect(metrics.counter("ws.reconnects") >= UInt64(2 * connections + connections / 2))
        #expect(metrics.histograms["ws.reconnect_recovery"]?.totalCount ?? 0 >= UInt64(2 * connections + connections / 2))
        #expect(metrics.counter("ws.messages_lost") == 0)
        let report = RunReport.json(result, toolVersion: "t", commit: nil)
        #expect(report["chaos"]?.arrayValue?.count == 4)
        #expect(report["chaos"]?.arrayValue?.first?["affected"]?.integerValue == connections)
    }

    @Test("storm peaks: without jitter a killed fleet reconnects in one burst at the drop peak; full jitter spreads it")
    func stormPeaks() async throws {
        func storm(jitter: String) async throws -> RunResult.ReconnectStorm? {
            try await LoadRun(profile: try profile("""
                {"version": 1, "name": "peaks", "target": "embedded", "duration": "3s", "seed": 9, "loops": 1,
                 "scenarios": [{"name": "s", "pattern": "idle", "connections": 40, "pingInterval": "1s",
                                "reconnect": {"initial": "1s", "max": "1s", "jitter": "\(jitter)", "maxAttempts": 5}}],
                 "chaos": [{"at": "1s", "action": "kill"}]}
                """)).run().reconnectStorm
        }
        let synchronized = try #require(try await storm(jitter: "none"))
        let spread = try #require(try await storm(jitter: "full"))
        #expect(synchronized.peakDropsPer100ms >= 20 && spread.peakDropsPer100ms >= 20)
        #expect(synchronized.peakReconnectsPer100ms >= 20, "\(synchronized)")
        #expect(spread.peakReconnectsPer100ms * 2 <= synchronized.peakReconnectsPer100ms, "\(spread) vs \(synchronized)")
    }

    @Test("chaos problems name their JSON path", arguments: [
        (#""target": "ws://127.0.0.1:1/", "chaos": [{"at": "1s", "action": "kill"}]"#, "chaos: a chaos timeline acts on the embedded server"),
        (#""target": "embedded", "chaos": [{"at": "1s", "action": "kil"}]"#, "chaos[0].action: \"kil\" is not kill, reset, close, stall or restart"),
        (#""target": "embedded", "chaos": [{"at": "1s", "action": "stall"}]"#, "chaos[0].for: is required for stall"),
        (#""target": "embedded", "chaos": [{"at": "9s", "action": "kill"}]"#, "chaos[0].at: 9.0s is not within the run's duration"),
        (#""target": "embedded", "chaos": [{"at": "1s", "action": "close", "code": 1006}]"#, "chaos[0].code: 1006 may not be sent"),
        (#""target": "embedded", "chaos": [{"at": "1s", "action": "restart", "for": "1s", "fraction": 0.5}]"#,
         "chaos[0].fraction: a restart drops every connection"),
        (#""target": "embedded", "chaos": [{"at": "1s", "action": "kill", "fraction": 2}]"#, "chaos[0].fraction"),
    ])
    func problems(fields: String, expected: String) {
        let text = """
            {"version": 1, "name": "c", \(fields), "duration": "5s",
             "scenarios": [{"name": "e", "pattern": "echo", "connections": 1}]}
            """
        do {
            _ = try ProfileDecoder.decode(Array(text.utf8))
            Issue.record("decoded")
        } catch {
            #expect(error.problems.contains { $0.description.hasPrefix(expected) }, "\(error.problems)")
        }
    }
}

/// Runs a storm profile against `url` while `disrupt` kills and restarts servers mid-run.
private func stormAgainst(_ url: String, connections: Int, disrupt: @escaping @Sendable () async throws -> Void) async throws -> RunResult {
    async let run = LoadRun(profile: try profile("""
        {"version": 1, "name": "python-storm", "target": "\(url)", "duration": "6s", "seed": 6, "loops": 1,
         "scenarios": [{"name": "storm", "pattern": "echo", "connections": \(connections),
                        "schedule": {"model": "closed", "thinkTime": "20ms"},
                        "reconnect": {"initial": "50ms", "max": "300ms", "jitter": "full", "maxAttempts": 100}}]}
        """)).run()
    try await disrupt()
    return try await run
}

@Suite("Storms against a third-party server", .serialized)
struct ThirdPartyStormTests {
    @Test("Python websockets killed and restarted mid-run, directly and through wsload proxy (which also kills and resets)")
    func pythonStorm() async throws {
        let connections = 20
        // Directly: the server process dies, a new one takes its port.
        let first = try PythonWebSocketServer()
        let port = first.port
        let restarted = RestartedServer()
        let direct = try await stormAgainst("ws://127.0.0.1:\(port)/", connections: connections) {
            try await Task.sleep(for: .milliseconds(1500))
            first.process.stop()
            try await Task.sleep(for: .milliseconds(700))
            restarted.server = try PythonWebSocketServer(arguments: ["--port", String(port)])
        }
        restarted.server?.process.stop()
        #expect(direct.invariantsHeld, "\(direct.invariants)")
        #expect(direct.total.counter("ws.reconnects") >= UInt64(connections), "\(direct.total.counters)")
        #expect((direct.total.histograms["ws.reconnect_recovery"]?.totalCount ?? 0) >= UInt64(connections))
        #expect(direct.total.counter("ws.connections_opened") >= UInt64(2 * connections))
        #expect((direct.total.errors["connect"] ?? 0) > 0, "connects were refused while the server was down: \(direct.total.errors)")
        #expect(direct.total.counter("ws.messages_lost") == 0)

        // Through the proxy: the proxy kills every connection, then the server behind it restarts, then it resets half.
        let upstream = try PythonWebSocketServer()
        let again = RestartedServer()
        let proxied = try await withLoopGroup(loopCount: 1) { group in
            let proxy = try await ProxyServer.bind(ProxyConfiguration(upstreamHost: "127.0.0.1", upstreamPort: upstream.port,
                                                                      delay: .milliseconds(2)), on: group)
            return try await withThrowingTaskGroup(of: RunResult?.self) { tasks in
                tasks.addTask(executorPreference: proxy.taskExecutor) {
                    await proxy.run()
                    return nil
                }
                let result = try await stormAgainst("ws://127.0.0.1:\(proxy.localAddress.port)/", connections: connections) {
                    try await Task.sleep(for: .milliseconds(1200))
                    let killed = await proxy.perform(.kill(fraction: 1))
                    #expect(killed == connections)
                    try await Task.sleep(for: .milliseconds(800))
                    upstream.process.stop()
                    try await Task.sleep(for: .milliseconds(600))
                    again.server = try PythonWebSocketServer(arguments: ["--port", String(upstream.port)])
                    try await Task.sleep(for: .milliseconds(1200))
                    _ = await proxy.perform(.reset(fraction: 0.5), seed: 3)
                }
                tasks.cancelAll()
                while try await tasks.next() != nil {}
                #expect(proxy.statistics.upstreamFailures.load(ordering: .relaxed) > 0)
                return result
            }
        }
        again.server?.process.stop()
        #expect(proxied.invariantsHeld, "\(proxied.invariants)")
        #expect(proxied.total.counter("ws.reconnects") >= UInt64(2 * connections + connections / 2), "\(proxied.total.counters)")
        #expect(proxied.total.counter("ws.messages_lost") == 0)
    }
}

private final class RestartedServer: @unchecked Sendable {
    var server: PythonWebSocketServer?
}

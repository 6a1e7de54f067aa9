import LoadEngine
import Profile
import Reporting
import Testing
import TestSupport

/// Servers that break the presets' contract late or slowly (Tests/Peers/socketio_server.py `--break late`,
/// graphql_server.py `--break slow`), and python-socketio's handshake with a sub-second heartbeat: the errors land
/// on the steps they break, by code, and nothing that arrives afterwards is a violation or a crash.
@Suite("Flow runs against late and slow servers", .serialized, .timeLimit(.minutes(3)))
struct FlowBrokenContractTests {
    @Test("socketio --break late: the echo ack comes after 3 s, the 1 s step counts ack_timeout, the late ack is harmless")
    func lateAck() async throws {
        let server = try startPythonPeer("socketio_server.py", arguments: ["--break", "late"])
        defer { server.process.stop() }
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "sio", "target": "ws://127.0.0.1:\(server.port)", "duration": "60s", "seed": 2,
             "scenarios": [{"name": "chat", "pattern": "flow", "protocol": "socketio", "connections": 2,
                            "socketio": {"timeout": "10s"}, "steps": [
               {"name": "echo", "emit": {"event": "echo", "args": [{"n": 1}], "ack": true, "within": "1s"}},
               {"name": "join", "emit": {"event": "join", "args": [{"room": "r"}], "ack": true, "within": "10s"}},
               {"think": "4s"}]}]}
            """)).run()
        let metrics = result.scenarios[0].metrics
        #expect(metrics.stepErrors("echo") == 2 && metrics.step("echo") == 0, "\(metrics.counters)")
        #expect(metrics.errors == ["ack_timeout": 2], "only the late step's code: \(metrics.errors)")
        // join goes out when echo gave up, while echo.s handler still sleeps: acked within its 10 s either way.
        #expect(metrics.step("join") == 2 && metrics.stepErrors("join") == 0)
        #expect(metrics.count("flow.completed") == 2 && metrics.disconnects[1000] == 2, "\(metrics.disconnects)")
        // The late acks arrived during the think: answered once, asked for once, so the oracle holds.
        #expect(result.invariantsHeld && checks(result, .flowAckAnsweredOnce) >= 6, "\(result.invariants)")
    }

    @Test("graphql --break slow: the subscription's 300 ms within is hit by step, the client ends it, the rest runs")
    func slowSubscription() async throws {
        let server = try startPythonPeer("graphql_server.py", arguments: ["--break", "slow"])
        defer { server.process.stop() }
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "gql", "target": "ws://127.0.0.1:\(server.port)", "duration": "60s", "seed": 2,
             "scenarios": [{"name": "subs", "pattern": "flow", "protocol": "graphql-ws", "path": "/graphql",
               "connections": 3, "graphql": {"timeout": "10s"}, "steps": [
                 {"name": "count", "subscribe": {"query": "subscription { count(to: 3, everyMs: 20) }", "within": "300ms"}},
                 {"name": "hello", "query": {"query": "query { hello }", "within": "10s"}},
                 {"think": "2500ms"}]}]}
            """)).run()
        let metrics = result.scenarios[0].metrics
        // The first value comes at once, the second 1 s later (20 ms x 50): past the step's within.
        #expect(metrics.histograms["flow.first_result.count"]?.totalCount == 3)
        #expect(metrics.stepErrors("count") == 3 && metrics.step("count") == 0, "\(metrics.counters)")
        #expect(metrics.errors == ["expect_timeout": 3], "no graphql_protocol for results crossing the client's complete: \(metrics.errors)")
        #expect(metrics.step("hello") == 3 && metrics.count("flow.completed") == 3)
        #expect(result.invariantsHeld && checks(result, .graphQLSubscriptionEndsOnce) > 0, "\(result.invariants)")
    }

    @Test("python-socketio pinging every 0.5 s (it advertises pingInterval 0): the handshake decodes, the heartbeat holds")
    func subSecondHeartbeat() async throws {
        let server = try startPythonPeer("socketio_server.py", arguments: ["--ping-interval", "0.5", "--ping-timeout", "1"])
        defer { server.process.stop() }
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "sio", "target": "ws://127.0.0.1:\(server.port)", "duration": "60s", "seed": 2,
             "scenarios": [{"name": "chat", "pattern": "flow", "protocol": "socketio", "connections": 2,
                            "socketio": {"timeout": "10s"}, "steps": [
               {"name": "welcome", "on": {"event": "welcome", "match": [{"path": "$[0].sid", "equals": "${sid}"}], "within": "10s"}},
               {"think": "3s"},
               {"name": "echo", "emit": {"event": "echo", "args": [{"n": 1}], "ack": true, "within": "10s"}}]}]}
            """)).run()
        let metrics = result.scenarios[0].metrics
        #expect(metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(metrics.step("welcome") == 2 && metrics.step("echo") == 2)
        // About 6 pings each over the think, every one answered.
        #expect(metrics.disconnects[1000] == 2 && result.invariantsHeld, "\(metrics.disconnects) \(result.invariants)")
        #expect(checks(result, .socketIOHeartbeatHeld) >= 2)
    }
}

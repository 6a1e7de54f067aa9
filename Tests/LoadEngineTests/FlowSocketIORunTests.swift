import LoadEngine
import Profile
import Reporting
import Foundation
import Testing
import TestSupport

/// socketio flows against python-socketio (Tests/Peers/socketio_server.py): the chat contract kept, and broken.
@Suite("Flow socketio runs", .serialized, .timeLimit(.minutes(3)))
struct FlowSocketIORunTests {
    static let steps = """
        [{"name": "welcome", "on": {"event": "welcome", "match": [{"path": "$[0].sid", "equals": "${sid}"}], "within": "10s"}},
         {"name": "echo", "emit": {"event": "echo", "args": [{"n": "${vu}"}], "ack": true, "within": "2s",
                                   "match": [{"path": "$[0].n", "equals": "${vu}"}]}},
         {"name": "join", "emit": {"event": "join", "args": [{"room": "r${vu}"}], "ack": true, "within": "10s",
                                   "match": [{"path": "$[0].joined", "equals": "r${vu}"}]}},
         {"loop": {"count": 3, "steps": [
           {"name": "say", "emit": {"event": "say", "args": [{"room": "r${vu}", "text": "hi ${iteration}"}], "ack": true,
                                    "within": "2s", "match": [{"path": "$[0].ok", "equals": true}]}},
           {"name": "said", "on": {"event": "said", "match": [{"path": "$[0].from", "equals": "${sid}"}],
                                   "capture": {"text": "$[0].text"}, "within": "2s"}}]}},
         {"think": "${THINK}"}]
        """

    /// `think`: how long the flow stays connected after its steps (across the server's heartbeat pings).
    func run(port: Int, connections: Int, think: String = "0ms") async throws -> RunResult {
        try await LoadRun(profile: try profile("""
            {"version": 1, "name": "sio", "target": "ws://127.0.0.1:\(port)", "duration": "60s", "seed": 2,
             "scenarios": [{"name": "chat", "pattern": "flow", "protocol": "socketio", "connections": \(connections),
                            "socketio": {"timeout": "10s"}, "steps": \(Self.steps.replacingOccurrences(of: "${THINK}", with: think))}]}
            """)).run()
    }

    @Test("a correct server: welcome, echo ack, join, say and its broadcast, every step timed, no errors")
    func chat() async throws {
        // Pings every second, a dead client after 1 s more: staying 3 s, the client must answer them.
        let server = try startPythonPeer("socketio_server.py", arguments: ["--ping-interval", "1", "--ping-timeout", "1"])
        defer { server.process.stop() }
        let result = try await run(port: server.port, connections: 5, think: "3s")
        let metrics = result.scenarios[0].metrics
        #expect(metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(metrics.step("welcome") == 5 && metrics.step("echo") == 5 && metrics.step("join") == 5)
        #expect(metrics.step("say") == 15 && metrics.step("said") == 15)
        #expect(metrics.count("flow.completed") == 5 && result.invariantsHeld, "\(result.invariants)")
        #expect(metrics.disconnects[1000] == 5, "closed by the flow's end, not by the server's heartbeat: \(metrics.disconnects)")
    }

    @Test("a server breaking the contract: the errors land on the steps it breaks", arguments: ["wrong-event", "no-ack"])
    func brokenContract(_ mode: String) async throws {
        let server = try startPythonPeer("socketio_server.py", arguments: ["--break", mode])
        defer { server.process.stop() }
        let result = try await run(port: server.port, connections: 2)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.step("welcome") == 2 && metrics.step("join") == 2)
        switch mode {
        case "wrong-event":
            #expect(metrics.stepErrors("said") == 6 && metrics.errors["expect_timeout"] == 6, "\(metrics.errors)")
            #expect(metrics.pushed("sad") == 6 && metrics.step("say") == 6, "\(metrics.counters)")
        default:
            #expect(metrics.stepErrors("say") == 6 && metrics.errors["ack_timeout"] == 6, "\(metrics.errors)")
            #expect(metrics.step("said") == 6)
        }
    }
}

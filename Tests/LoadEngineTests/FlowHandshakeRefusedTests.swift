import LoadEngine
import Profile
import Reporting
import Testing
import TestSupport

/// A preset handshake the server refuses ends the connection at once, closed on purpose — not held open (answering
/// the server's pings) until the run stops it and past its graceful stop.
@Suite("Flow preset handshake refused", .serialized, .timeLimit(.minutes(3)))
struct FlowHandshakeRefusedTests {
    @Test("socketio: a namespace the server does not serve closes each connection with 1000 and socketio_connect_error")
    func refusedNamespace() async throws {
        let server = try startPythonPeer("socketio_server.py")
        defer { server.process.stop() }
        // The run lasts far longer than the refusal takes: a connection held open would be stopped by the run's end.
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "sio", "target": "ws://127.0.0.1:\(server.port)", "duration": "30s", "gracefulStop": "3s",
             "seed": 3, "scenarios": [{"name": "nope", "pattern": "flow", "protocol": "socketio", "connections": 2,
               "socketio": {"namespace": "/nope", "timeout": "10s"},
               "steps": [{"name": "welcome", "on": {"event": "welcome", "within": "5s"}}]}]}
            """)).run()
        let metrics = result.scenarios[0].metrics
        #expect(metrics.errors["socketio_connect_error"] == 2, "\(metrics.errors)")
        #expect(metrics.disconnects == [1000: 2], "closed on purpose after the refusal: \(metrics.disconnects)")
        #expect(metrics.counter(Metric.unfinishedAtStop) == 0 && result.invariantsHeld, "\(result.invariants)")
        // Every connection ended by itself: the run's stop found none to stop.
        #expect(result.total.histograms[Metric.stopDuration.name]?.totalCount == nil, "connections the run had to stop")
    }
}

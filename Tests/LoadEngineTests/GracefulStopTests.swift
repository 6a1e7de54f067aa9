import LoadEngine
import Testing
import TestSupport

/// The run's stop reaches a connection whose one task is reading (a hook on its latch, no task waiting for it):
/// the close must still wait for the replies in flight, against a server that drops what is pending once it has
/// answered a close (Python `websockets` on `/slow/MS`).
@Suite("graceful stop with replies in flight", .serialized, .timeLimit(.minutes(2)))
struct GracefulStopTests {
    @Test("the close goes out once every request in flight is answered: nothing is lost at the stop",
          arguments: [#"{"model": "open", "rate": 10}"#, #"{"model": "closed"}"#, #"{"model": "closed", "thinkTime": "50ms"}"#])
    func closeWaitsForReplies(schedule: String) async throws {
        let server = try PythonWebSocketServer()
        defer { server.process.stop() }
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "stop", "target": "ws://127.0.0.1:\(server.port)/slow/300", "duration": "1s",
             "gracefulStop": "10s", "seed": 1,
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 20, "message": {"size": 64},
                            "schedule": \(schedule)}]}
            """)).run()
        let metrics = result.total
        #expect(metrics.count("ws.connections_opened") == 20)
        // A 300 ms echo and a 1 s run: every connection had a request in flight when the run stopped it.
        #expect(metrics.count("ws.messages_sent") >= 20)
        #expect(metrics.count("ws.messages_received") == metrics.count("ws.messages_sent"),
                "\(metrics.count("ws.messages_sent")) sent, \(metrics.count("ws.messages_received")) answered")
        #expect(metrics.counters["ws.messages_lost"] == nil)
        #expect(metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(metrics.disconnects == [1000: 20])
        #expect(result.liveHandlesAfterStop == 0)
    }
}

import Foundation
import JSON
import Reporting
import TestSupport
import Testing

/// `wsload run` (a child process) against the hostile WebSocket server kit (Tests/Peers/hostile_ws.py): the
/// run survives, writes its report, and counts each failure under its code.
@Suite("wsload run against a hostile WebSocket server", .serialized, .timeLimit(.minutes(3)))
struct HostileWebSocketRunTests {
    @Test("random bytes / a 2^63-1-byte frame after the 101: exit 3 (the errors threshold), report written, errors under `protocol`",
          arguments: [("random", "1002"), ("huge-63", "1009")])
    func hostileTarget(mode: String, closeCode: String) async throws {
        let (peer, port) = try startPythonPeer("hostile_ws.py")
        defer { peer.stop() }
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "hostile-\(mode)", "target": "ws://127.0.0.1:\(port)/\(mode)", "duration": "2s",
             "gracefulStop": "2s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 3,
                            "schedule": {"model": "closed", "thinkTime": "50ms"}}],
             "thresholds": ["errors count < 1"]}
            """)
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("report.json")])
        let status = try await child.waitForExit(within: .seconds(90))
        #expect(status == 3, "thresholds failed is the documented exit: \(child.errors)")
        // Read back the way report/compare/merge read it: the report must be wsload-readable, not just JSON.
        let metrics = try LoadedReport(contentsOf: scratch.path("report.json")).result.total
        #expect(metrics.errors["protocol"] == 3, "\(metrics.errors)")
        #expect(metrics.disconnects[UInt16(closeCode)!] == 3, "\(metrics.disconnects)")
        #expect(child.output.contains("errors: protocol 3"), "\(child.output)")
    }
}

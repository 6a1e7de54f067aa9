import Foundation
import HTTP1
import LoadEngine
import Profile
import Reporting
import Runtime
import Testing
import TestSupport


@Suite("Transfer scenarios against a hostile server", .serialized, .timeLimit(.minutes(3)))
struct HostileTransferRunTests {
    @Test("a 1xx flood: every download fails counted as http_protocol, the run ends and its report holds them")
    func interimFlood() async throws {
        let flood = Array(String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 2000).utf8)
        let result = try await withCannedHTTPServer(response: flood, linger: .seconds(15)) { port in
            try await withServer { server in
                try await LoadRun(profile: try profile("""
                    {"version": 1, "name": "hostile", "target": "\(server.url)", "duration": "30s", "gracefulStop": "10s", "seed": 3,
                     "scenarios": [{"name": "dl", "kind": "download", "connections": 2,
                       "transfer": {"url": "http://127.0.0.1:\(port)/f", "repeats": 2, "retry": {"maxAttempts": 1, "initial": "10ms"}}}]}
                    """)).run()
            }
        }
        let metrics = try #require(result.scenarios.first?.metrics)
        #expect(metrics.count("http.transfers_started") == 4)
        #expect(metrics.errors["http_protocol"] == 4, "\(metrics.errors)")
        let report = RunReport.json(result, toolVersion: "t", commit: nil)
        #expect(report["total"]?["metrics"]?["errors"]?["byCode"]?["http_protocol"]?.integerValue == 4)
    }
}

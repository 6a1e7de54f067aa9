import Foundation
import HTTP1
import LoadEngine
import Profile
import Reporting
import Runtime
import Testing
import TestSupport

/// A loopback server that answers every request on every connection with `response`, then holds the connection
/// for `linger` (at most 20 s in all) and closes it.
private func withFloodServer<T: Sendable>(
    response: [UInt8], linger: Duration, _ body: @Sendable (_ port: Int) async throws -> T
) async throws -> T {
    try await withLoopGroup(loopCount: 1) { group in
        let loop = group.loops[0]
        let listener = try await loop.submit { try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop) }
        let server = Task(executorPreference: loop.taskExecutor) {
            await withDiscardingTaskGroup { connections in
                while let tcp = try? await listener.accept() {
                    connections.addTask(executorPreference: loop.taskExecutor) {
                        let lifetime = ScheduledTimer(on: loop, after: .seconds(20)) { tcp.close() }
                        defer {
                            lifetime.cancel()
                            tcp.close()
                        }
                        var parser = HTTPHeadParser()
                        var buffer: [UInt8] = []
                        while let count = try? await tcp.read(into: &buffer), count > 0 {
                            guard (try? parser.parseRequest(buffer)) != nil else { continue }
                            try? await tcp.write(response)  // a client that left ends the script; nothing to report here
                            try? await loop.sleep(for: linger)  // cut short when the test ends; either way the connection closes
                            return
                        }
                    }
                }
            }
        }
        defer {
            listener.close()
            server.cancel()
        }
        let result = try await body(listener.localAddress.port)
        server.cancel()
        listener.close()
        await server.value
        return result
    }
}

@Suite("Transfer scenarios against a hostile server", .serialized, .timeLimit(.minutes(3)))
struct HostileTransferRunTests {
    @Test("a 1xx flood: every download fails counted as http_protocol, the run ends and its report holds them")
    func interimFlood() async throws {
        let flood = Array(String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 2000).utf8)
        let result = try await withFloodServer(response: flood, linger: .seconds(15)) { port in
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

import EmbeddedServer
import Foundation
import Histogram
import JSON
import LoadEngine
import Profile
import Reporting
import RunHost
import Runtime
import Testing
import TestSupport

/// Decodes a profile written inline (tests state every field they rely on).
func profile(_ text: String) throws -> Profile { try ProfileDecoder.decode(Array(text.utf8)) }

extension LoadRun {
    /// Runs as `wsload run` does: through ``RunHost``, which starts the embedded server for an `embedded` target.
    func hostedRun() async throws -> RunResult { try await RunHost(self).run() }
}

/// Runs an embedded server with `configuration` on its own loops for the body's duration.
func withServer<T: Sendable>(
    _ configuration: ServerConfiguration = ServerConfiguration(), _ body: (EmbeddedServer) async throws -> T
) async throws -> T {
    try await withLoopGroup(loopCount: 1) { group in
        let server = try await EmbeddedServer.bind(configuration, on: group)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask(executorPreference: server.taskExecutor) { await server.run() }
            defer { tasks.cancelAll() }
            return try await body(server)
        }
    }
}

extension MetricSet {
    func count(_ name: String) -> UInt64 { counter(name) }
    func samples(_ name: String) -> UInt64 { histograms[name]?.totalCount ?? 0 }
}

@Suite("Load runs", .serialized, .timeLimit(.minutes(3)))
struct RunTests {
    @Test("1,000 connections echo against the embedded server: counts, histograms, report, no leaks")
    func echoThousand() async throws {
        let run = LoadRun(profile: try profile("""
            {"version": 1, "name": "echo-test", "target": "embedded", "duration": "60s", "gracefulStop": "5s", "seed": 5,
             "headers": {"X-Api-Key": "secret-value", "X-Team": "load"},
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 1000, "messagesPerConnection": 3,
                            "message": {"size": 64}}],
             "thresholds": ["ws.message_rtt p99 < 10s", "errors count < 1", "ws.connections_opened count >= 1000"],
             "report": {"interval": "1s"}}
            """))
        let result = try await run.hostedRun()
        let metrics = result.scenarios[0].metrics
        #expect(metrics.count("ws.connections_opened") == 1000)
        #expect(metrics.count("ws.connect_attempts") == 1000)
        #expect(metrics.samples("ws.connect") == 1000 && metrics.samples("ws.upgrade") == 1000)
        // Each connection's budget of 3 ends it, and the run with the last: an exact count, whatever the box's speed.
        #expect(metrics.count("ws.messages_sent") == 3000)
        #expect(result.elapsed < .seconds(60), "the run ended when every connection had spent its budget")
        #expect(metrics.count("ws.messages_received") == metrics.count("ws.messages_sent"))
        #expect(metrics.samples("ws.message_rtt") == metrics.count("ws.messages_received"))
        #expect(metrics.count("ws.bytes_sent") == 64 * metrics.count("ws.messages_sent"))
        #expect(metrics.count("ws.bytes_received") == metrics.count("ws.bytes_sent"))
        #expect(metrics.counters["ws.messages_lost"] == nil)
        #expect(metrics.disconnects == [1000: 1000])
        #expect(metrics.errors.isEmpty)
        #expect(result.unfinishedConnections == 0 && result.liveHandlesAfterStop == 0 && result.waitingTasksAfterStop == 0)
        #expect(result.thresholdsPassed && result.interruptedBy == nil && result.abortedBy == nil)
        #expect(result.intervals.count >= 1)
        #expect(result.intervals.reduce(0) { $0 + $1.counts.count("ws.messages_received") } == metrics.count("ws.messages_received"))

        // The report: versioned, secrets gone, digest of what it embeds, histograms lossless.
        let report = RunReport.json(result, toolVersion: "test", commit: nil)
        let text = report.formatted()
        #expect(report["schema"]?.stringValue == "wsload.report/1")
        #expect(!text.contains("secret-value") && text.contains("<redacted>") && text.contains("\"load\""))
        let document = try #require(report["profile"]?["document"])
        let digest = await hexSHA256(document.formatted(pretty: false))
        #expect(report["profile"]?["digest"]?.stringValue == "sha256:" + digest)
        #expect(report["run"]?["seed"]?.stringValue == "5")
        #expect(report["scenarios"]?.arrayValue?.first?["model"]?.stringValue == "closed")
        #expect(report["scenarios"]?.arrayValue?.first?["latencyMeasuredFrom"]?.stringValue == "actual send")
        #expect(report["thresholds"]?.arrayValue?.count == 3 && report["thresholdsPassed"] == .bool(true))
        let decoded = try MetricSet(json: try #require(report["total"]?["metrics"]), path: "total.metrics")
        #expect(decoded.counters == result.total.counters)
        #expect(decoded.disconnects == result.total.disconnects)
        for (name, histogram) in result.total.histograms {
            #expect(decoded.histograms[name]?.totalCount == histogram.totalCount, "\(name)")
            #expect(decoded.histograms[name]?.value(atPercentile: 99.9) == histogram.value(atPercentile: 99.9), "\(name)")
        }
        let reparsed = try JSONValue(parsing: text)
        #expect(reparsed == report)
    }

    @Test("echo against Python websockets (a third-party server), text messages with think time")
    func pythonServer() async throws {
        let server = try PythonWebSocketServer()
        defer { server.process.stop() }
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "py", "target": "ws://127.0.0.1:\(server.port)/", "duration": "2s", "seed": 1,
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 50, "pingInterval": "300ms",
                            "message": {"size": {"min": 32, "max": 2000}, "format": "text"},
                            "schedule": {"model": "closed", "thinkTime": "20ms"}}]}
            """)).run()
        let metrics = result.total
        #expect(metrics.count("ws.connections_opened") == 50)
        // Every connection exchanged messages and pings; how many is the box's speed (Benchmarks/engine-figures.sh).
        #expect(metrics.count("ws.messages_sent") >= 50)
        #expect(metrics.count("ws.messages_received") == metrics.count("ws.messages_sent"))
        #expect(metrics.samples("ws.message_rtt") == metrics.count("ws.messages_received"))
        #expect(metrics.samples("ws.ping_rtt") >= 50)
        #expect(metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(metrics.disconnects == [1000: 50])
        #expect(result.liveHandlesAfterStop == 0)
    }

    @Test("receive: the embedded push stream, counted with its gaps and no losses")
    func receivePattern() async throws {
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "push", "target": "embedded", "duration": "2s",
             "scenarios": [{"name": "push", "pattern": "receive", "connections": 20, "path": "/push?interval=20ms&size=100"}]}
            """)).hostedRun()
        let metrics = result.total
        let received = metrics.count("ws.messages_received")
        // The server sleeps at least 20 ms between pushes, so a connection receives at most one per 20 ms of the
        // run as it recorded it (a starved coordinator stops late; the stop itself is bounded by gracefulStop); a
        // loaded box delivers fewer. The rate and the gaps' spread are benchmark figures
        // (Benchmarks/engine-figures.sh), not test assertions.
        let ceiling = 20 * (UInt64(result.elapsed / .milliseconds(20)) + 1)
        #expect(received >= 20 * 2 && received <= ceiling, "\(received) in \(result.elapsed)")
        #expect(metrics.count("ws.bytes_received") == 100 * received)
        let gaps = try #require(metrics.histograms["ws.message_gap"])
        #expect(gaps.totalCount == received - 20)
        #expect(metrics.counters["ws.messages_lost"] == nil)
        #expect(metrics.errors.isEmpty && metrics.disconnects == [1000: 20])
    }

    @Test("idle connections ping; typed requests on an open schedule are all answered")
    func idleAndTyped() async throws {
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "mix", "target": "embedded", "duration": "2s",
             "scenarios": [
               {"name": "idle", "pattern": "idle", "connections": 50, "pingInterval": "250ms", "pingTimeout": "1s"},
               {"name": "typed", "pattern": "typed", "connections": 20, "typeName": "order.create",
                "compression": true, "subprotocols": ["orders.v2"],
                "schedule": {"model": "open", "rate": 20}}]}
            """)).hostedRun()
        try #require(result.scenarios.count == 2)
        let idle = result.scenarios[0].metrics
        #expect(idle.count("ws.connections_opened") == 50 && idle.disconnects == [1000: 50])
        // Every connection pinged and was answered, more than once: each pong arms the next ping (250 ms on).
        #expect(idle.samples("ws.ping_rtt") >= 2 * 50)
        #expect(idle.count("ws.messages_received") == 0 && idle.errors.isEmpty)
        let typed = result.scenarios[1].metrics
        // The schedule falls due by the clock whether or not a loaded client keeps up: 20/s over ~2 s each.
        #expect(typed.count("ws.messages_scheduled") >= 20 * 20)
        #expect(typed.count("ws.messages_received") == typed.count("ws.messages_sent"))
        // Every due send went out, was dropped, or was still due when the run stopped (a lagging sender).
        #expect(typed.count("ws.messages_sent") + typed.count("ws.messages_dropped") + typed.count("ws.messages_missed")
            == typed.count("ws.messages_scheduled"))
        #expect(typed.count("ws.messages_dropped") == 0)
        #expect(typed.samples("ws.message_rtt") == typed.count("ws.messages_received"))
        #expect(typed.errors.isEmpty, "\(typed.errors)")
        let report = RunReport.json(result, toolVersion: "test", commit: nil)
        let typedReport = try #require(report["scenarios"]?.arrayValue?.last)
        #expect(typedReport["model"]?.stringValue == "open" && typedReport["latencyMeasuredFrom"]?.stringValue == "intended send time")
        // The delivered share is the benchmark's figure; here it must be what the counters say.
        let delivered = try #require(typedReport["scheduleDelivered"]?.numberValue)
        let expected = Double(typed.count("ws.messages_received")) / Double(typed.count("ws.messages_scheduled"))
        #expect(abs(delivered - expected) <= 0.00005 && delivered > 0, "\(delivered) vs \(expected)")
    }

    @Test("dropped connections reconnect with backoff; recovery is measured")
    func reconnects() async throws {
        try await withServer(ServerConfiguration(chaos: ChaosOptions(closeAfter: .milliseconds(300), closeMode: .drop))) { server in
            let result = try await LoadRun(profile: try profile("""
                {"version": 1, "name": "storm", "target": "\(server.url)", "duration": "2s", "seed": 3,
                 "scenarios": [{"name": "s", "pattern": "echo", "connections": 20, "schedule": {"model": "closed", "thinkTime": "10ms"},
                                "reconnect": {"initial": "20ms", "max": "200ms", "jitter": "full"}}]}
                """)).run()
            let metrics = result.total
            // Every connection was dropped and came back at least once; how often is the box's speed.
            #expect(metrics.count("ws.reconnects") >= 20)
            #expect(metrics.samples("ws.reconnect_recovery") == metrics.count("ws.reconnects"))
            #expect(metrics.count("ws.connections_opened") == 20 + metrics.count("ws.reconnects"))
            #expect((metrics.disconnects[1006] ?? 0) >= metrics.count("ws.reconnects"))
            // A drop can also surface as a failed send (the peer reset the connection): a transport error.
            #expect(Set(metrics.errors.keys).isSubset(of: ["transport"]), "\(metrics.errors)")
            #expect(result.liveHandlesAfterStop == 0)
        }
    }

    @Test("stages ramp up and down; a message budget ends connections early and the run with them")
    func rampAndBudget() async throws {
        // The ramp holds its top for 2 s. The ramp's own arithmetic is ScheduleTests'; here the run must follow
        // it exactly: as many connections as its top (a coordinator that woke late still follows every step due
        // before the end), every one closed cleanly, never more live than that.
        let ramp = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "ramp", "target": "embedded", "duration": "5s",
             "scenarios": [{"name": "r", "pattern": "echo", "schedule": {"model": "closed", "thinkTime": "50ms"},
               "stages": [{"target": 30, "duration": "1s"}, {"target": 30, "duration": "2s"}, {"target": 0, "duration": "1s"}]}],
             "report": {"interval": "500ms"}}
            """)).hostedRun()
        let top = try #require(ramp.scenarios.first).peakTarget
        #expect(top == 30, "\(top)")
        #expect(ramp.total.count("ws.connections_opened") == UInt64(top))
        #expect(ramp.total.disconnects == [1000: UInt64(top)])
        let last = try #require(ramp.intervals.last)
        #expect(last.liveConnections == 0)
        #expect((ramp.intervals.map(\.liveConnections).max() ?? 0) <= top)

        let budget = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "budget", "target": "embedded", "duration": "30s",
             "scenarios": [{"name": "b", "pattern": "echo", "connections": 10, "messagesPerConnection": 5}]}
            """)).hostedRun()
        #expect(budget.elapsed < .seconds(30))  // the run's own clock: it ended when the budgets were spent
        #expect(budget.total.count("ws.messages_sent") == 50 && budget.total.count("ws.messages_received") == 50)
        #expect(budget.total.disconnects == [1000: 10])
    }

    @Test("auth tokens come from the environment, reach the server, and never the report")
    func authentication() async throws {
        let seen = Lock<[String]>([])
        let configuration = ServerConfiguration(onHandshake: { request in
            seen.withLock { $0.append(request.headers["Authorization"] ?? "") }
        })
        try await withServer(configuration) { server in
            let text = """
                {"version": 1, "name": "auth", "target": "\(server.url)", "duration": "500ms",
                 "auth": {"type": "bearer", "tokenEnv": "WSLOAD_TEST_TOKEN"},
                 "scenarios": [{"name": "a", "pattern": "echo", "connections": 3}]}
                """
            await #expect(throws: LoadRunError.self) { try await LoadRun(profile: try profile(text), environment: [:]).run() }
            let result = try await LoadRun(profile: try profile(text), environment: ["WSLOAD_TEST_TOKEN": "tok-123"]).run()
            #expect(seen.withLock { $0 } == ["Bearer tok-123", "Bearer tok-123", "Bearer tok-123"])
            #expect(!RunReport.json(result, toolVersion: "t", commit: nil).formatted().contains("tok-123"))
        }
    }

    @Test("wss: verified against a CA file, TLS handshakes measured; unverifiable without it; insecure on request")
    func secure() async throws {
        // The chain comes from the openssl command (a CA and a leaf it signed), not from the product's own generator.
        let certificates = try TestCertificates.shared.get()
        let caFile = certificates.caFile
        let tls = try TLSContext(role: .server, configuration: TLSConfiguration(
            certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
        try await withServer(ServerConfiguration(tls: tls)) { server in
            let port = server.localAddress.port
            func run(_ tls: String) async throws -> MetricSet {
                try await LoadRun(profile: try profile("""
                    {"version": 1, "name": "tls", "target": "wss://127.0.0.1:\(port)/", "duration": "700ms", \(tls)
                     "scenarios": [{"name": "s", "pattern": "echo", "connections": 5, "schedule": {"model": "closed", "thinkTime": "50ms"}}]}
                    """)).run().total
            }
            let verified = try await run(#""tls": {"caFile": "\#(caFile)"},"#)
            #expect(verified.count("ws.connections_opened") == 5 && verified.samples("ws.tls_handshake") == 5)
            #expect(verified.count("ws.messages_received") > 0 && verified.errors.isEmpty)
            let unverified = try await run("")
            #expect(unverified.count("ws.connections_opened") == 0)
            #expect(unverified.errors["tls"] == 5, "\(unverified.errors)")
            let insecure = try await run(#""tls": {"insecure": true},"#)
            #expect(insecure.count("ws.connections_opened") == 5 && insecure.errors.isEmpty)
        }
    }

    @Test("an abort-on-fail threshold stops the run early")
    func abortOnFail() async throws {
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "abort", "target": "embedded", "duration": "30s",
             "scenarios": [{"name": "a", "pattern": "echo", "connections": 5}],
             "thresholds": [{"expression": "ws.message_rtt max < 1us", "abortOnFail": true}]}
            """)).hostedRun()
        #expect(result.elapsed < .seconds(30))  // the run's own clock: stopped long before its duration
        #expect(result.abortedBy == "ws.message_rtt max < 1us")
        #expect(!result.thresholdsPassed)
    }
}

/// SHA-256 by another implementation (coreutils), to check the report's digest independently.
private func hexSHA256(_ text: String) async -> String {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("digest-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    try? Data(text.utf8).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let output = (try? await TestProcess.runOffPool(["sha256sum", file.path]).output) ?? ""
    return String(output.prefix { $0 != " " })
}

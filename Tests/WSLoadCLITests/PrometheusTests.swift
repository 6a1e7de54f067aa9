import Foundation
import HTTP1
import JSON
import Profile
import Reporting
import Runtime
import Testing
import TestSupport
@testable import LiveView
@testable import WSLoadCLI

/// A plain HTTP/1.0 GET on loopback (the body ends with the connection, so no chunked decoding), within `limit`.
private func httpGet(port: Int, _ target: String, accept: String? = nil, limit: Duration = .seconds(20)) async throws
    -> (status: Int, headers: HTTPHeaders, body: String)
{
    let group = try EventLoopGroup(loopCount: 1)
    defer { group.shutdown() }
    let loop = group.loops[0]
    let bytes = try await Task(executorPreference: loop.taskExecutor) { () async throws -> [UInt8] in
        let tcp = try await TCPConnection.connect(to: try SocketAddress(ip: "127.0.0.1", port: port), on: loop)
        let deadline = ScheduledTimer(on: loop, after: limit) { tcp.close() }
        defer {
            deadline.cancel()
            tcp.close()
        }
        try await tcp.write(Array("GET \(target) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n\(accept.map { "Accept: \($0)\r\n" } ?? "")\r\n".utf8))
        return try await tcp.readAll()
    }.value
    var parser = HTTPHeadParser(maximumHeadSize: 64 * 1024)
    guard let (head, length) = try parser.parseResponse(bytes) else {
        throw TestProcess.Failure(description: "GET \(target) on port \(port): no response head in \(bytes.count) bytes")
    }
    return (head.status, head.headers, String(decoding: bytes[length...], as: UTF8.self))
}

/// Debian's Prometheus, started for one test with its own configuration scraping `target` every second, its data in
/// `directory`. Killed by ``stop()`` (call it in a `defer`: also on failure).
private final class PrometheusServer: @unchecked Sendable {
    let port: Int
    let process = SpawnedProcess()
    let log: URL

    init(directory: URL, target: String) throws {
        // A free port found by binding port 0 and closing it: another process could take it before Prometheus binds
        // it (then the readiness wait fails, naming the log), a race this loopback-only box makes rare.
        port = try freeTCPPort()
        let configuration = directory.appendingPathComponent("prometheus.yml")
        try Data("""
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: wsload
                static_configs:
                  - targets: ["\(target)"]

            """.utf8).write(to: configuration)
        log = directory.appendingPathComponent("prometheus.log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/prometheus")
        process.arguments = [
            "--config.file=\(configuration.path)", "--storage.tsdb.path=\(directory.appendingPathComponent("tsdb").path)",
            "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
        ]
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try TiedProcess.start(process)  // dies with the test process, even a killed one
    }

    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }  // no log yet: nothing to show

    /// Waits for `/-/ready` (the TSDB is open and the scrape loop runs).
    func waitUntilReady() async throws {
        try await Deadline.waitUntil("Prometheus on port \(port) to be ready; its log: \(logText)", timeout: .seconds(90),
                                     interval: .milliseconds(100)) {
            guard process.isRunning else { throw TestProcess.Failure(description: "Prometheus exited: \(logText)") }
            return (try? await httpGet(port: port, "/-/ready", limit: .seconds(2)).status) == 200  // not listening yet: retry
        }
    }

    /// An instant query at `time` (seconds since 1970, as Prometheus wrote it); the `data.result` array.
    func query(_ expression: String, at time: String? = nil) async throws -> [JSONValue] {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        let encoded = expression.utf8.map { allowed.contains($0) ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0) }.joined()
        let response = try await httpGet(port: port, "/api/v1/query?query=\(encoded)" + (time.map { "&time=\($0)" } ?? ""))
        let document = try JSONValue(parsing: response.body)
        guard response.status == 200, document["status"]?.stringValue == "success",
            let result = document["data"]?["result"]?.arrayValue
        else { throw TestProcess.Failure(description: "query \(expression): \(response.status) \(response.body)") }
        return result
    }

    /// The one value of an instant query's vector, as a number.
    func value(_ expression: String, at time: String) async throws -> Double {
        let result = try await query(expression, at: time)
        guard result.count == 1, let text = result[0]["value"]?.arrayValue?.last?.stringValue, let value = Double(text) else {
            throw TestProcess.Failure(description: "\(expression) at \(time): \(result)")
        }
        return value
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// Reads the address a run printed (`metrics: http://127.0.0.1:PORT/metrics`) from its captured stderr.
private func printedMetricsPort(_ captured: CapturedOutput) async throws -> Int {
    var port: Int?
    try await Deadline.waitUntil("the run to print its metrics address", timeout: .seconds(60), interval: .milliseconds(20)) {
        port = captured.error.split(separator: "\n").first { $0.hasPrefix("metrics: http://127.0.0.1:") }
            .flatMap { Int($0.dropFirst("metrics: http://127.0.0.1:".count).prefix { $0.isNumber }) }
        return port != nil
    }
    return port!
}

@Suite("wsload run --metrics", .serialized, .timeLimit(.minutes(4)))
struct PrometheusTests {
    @Test("a real Prometheus scrapes a run: its counters are the report's, up is 1, histogram_quantile finds the p99's bucket")
    func realPrometheus() async throws {
        let scratch = try RunScratch()
        // The endpoint's port, chosen before the run so Prometheus's configuration can name it (the same race as above).
        let metricsPort = try freeTCPPort()
        let prometheus = try PrometheusServer(directory: scratch.url, target: "127.0.0.1:\(metricsPort)")
        defer { prometheus.stop() }
        try await prometheus.waitUntilReady()
        let profile = try scratch.write("profile.json", """
            {"version": 1, "name": "scraped", "target": "embedded", "duration": "4s", "gracefulStop": "5s",
             "scenarios": [{"name": "a", "pattern": "echo", "connections": 4, "schedule": {"model": "closed", "thinkTime": "5ms"}},
                           {"name": "b", "pattern": "echo", "connections": 2, "schedule": {"model": "closed", "thinkTime": "2ms"}}]}
            """)
        // 5 s of linger: with a scrape a second, several scrapes see the final figures even on a busy box.
        let run = await runCLI("run", profile, "--metrics", "127.0.0.1:\(metricsPort)", "--linger", "5s", "--out", scratch.path("report.json"))
        #expect(run.code == .success, "\(run.error)")
        #expect(run.error.contains("metrics: http://127.0.0.1:\(metricsPort)/metrics"))
        let report = try LoadedReport(contentsOf: scratch.path("report.json")).result

        // The last scrape that saw the final figures (after the endpoint stopped, the series are stale).
        let finished = try await prometheus.query("wsload_run_finished[10m]")
        let samples = try #require(finished.first?["values"]?.arrayValue, "no wsload_run_finished samples; log: \(prometheus.logText)")
        let time = try #require(samples.last { $0.arrayValue?.last?.stringValue == "1" }?.arrayValue?.first,
                                "no scrape saw the run finished: \(samples)")
        let at = try #require(time.numberValue.map { String($0) })

        #expect(try await prometheus.value("up", at: at) == 1)
        let received = report.total.counter(Metric.messagesReceived)
        #expect(received > 100, "the run echoed something")
        #expect(try await prometheus.value("sum(wsload_ws_messages_received_total)", at: at) == Double(received))
        for scenario in report.scenarios {
            let scraped = try await prometheus.value(#"wsload_ws_messages_received_total{scenario="\#(scenario.scenario.name)"}"#, at: at)
            #expect(scraped == Double(scenario.metrics.counter(Metric.messagesReceived)), "scenario \(scenario.scenario.name)")
        }
        #expect(try await prometheus.value("sum(wsload_ws_message_rtt_seconds_count)", at: at) == Double(received))

        // The true p99 by Prometheus's rank (0.99 × count, not rounded down as HDR's percentile may round it) lies in
        // one bucket; histogram_quantile must answer within that bucket's bounds.
        let histogram = try #require(report.total.histograms[Metric.messageRoundTrip.name])
        let count = Double(histogram.totalCount)
        let rank = (0.99 * count).rounded(.up)
        let trueP99 = histogram.value(atPercentile: 100 * rank / count)
        let bounds = PrometheusExposition(bucketsPerDoubling: 4).latencyBounds
        let bucket = try #require(bounds.firstIndex { $0.limit >= trueP99 }, "p99 \(trueP99) µs past the last bound")
        let lower = bucket == 0 ? 0 : Double(bounds[bucket - 1].label)!
        let upper = Double(bounds[bucket].label)!
        let quantile = try await prometheus.value("histogram_quantile(0.99, sum by (le) (wsload_ws_message_rtt_seconds_bucket))", at: at)
        let reportP99 = histogram.value(atPercentile: 99)
        #expect(lower <= quantile && quantile <= upper,
                "histogram_quantile \(quantile) s outside the bucket (\(lower), \(upper)] of the p99 \(trueP99) µs (the report's: \(reportP99) µs)")
    }

    @Test("the live output passes promtool, the final scrape is the report's, and no token, header value or secret column shows")
    func lintedAndSecretFree() async throws {
        let scratch = try RunScratch()
        let token = "tok-\(UInt64.random(in: 1...UInt64.max))"
        let headerValue = "hdr-\(UInt64.random(in: 1...UInt64.max))"
        let secrets = (0..<3).map { _ in "sec-\(UInt64.random(in: 1...UInt64.max))" }
        let tokenFile = try scratch.write("token", token + "\n")
        let feeder = try scratch.write("users.csv", "user,password\n" + secrets.enumerated().map { "u\($0.offset),\($0.element)\n" }.joined())
        let profile = try scratch.write("profile.json", """
            {"version": 1, "name": "secretive", "target": "embedded", "duration": "3s", "gracefulStop": "5s",
             "headers": {"X-Api-Key": "\(headerValue)"}, "auth": {"type": "bearer", "tokenFile": "\(tokenFile)"},
             "data": {"users": {"file": "\(feeder)", "secret": ["password"]}},
             "scenarios": [
               {"name": "echo", "pattern": "echo", "connections": 2, "schedule": {"model": "closed", "thinkTime": "5ms"}},
               {"name": "flow", "pattern": "flow", "connections": 3, "steps": [
                 {"loop": {"for": "2s", "steps": [
                   {"send": {"text": "${users.password}"}},
                   {"name": "echoed", "expect": {"text": {"regex": "^sec-"}, "within": "2s"}},
                   {"think": "10ms"}]}}]}]}
            """)
        let captured = CapturedOutput()
        async let code = WSLoad.main(arguments: ["run", profile, "--metrics", "127.0.0.1:0", "--linger", "3s",
                                                 "--out", scratch.path("report.json")], output: captured.commandOutput)
        let port = try await printedMetricsPort(captured)
        var scrapes: [String] = []
        var final: String?
        // Scrape in both formats until a scrape shows the final figures (bounded by the deadline).
        try await Deadline.waitUntil("a scrape with the final figures", timeout: .seconds(60), interval: .milliseconds(200)) {
            let text = try await httpGet(port: port, "/metrics").body
            let openMetrics = try await httpGet(port: port, "/metrics", accept: "application/openmetrics-text").body
            scrapes += [text, openMetrics]
            if text.contains("\nwsload_run_finished 1\n") { final = text }
            return final != nil
        }
        #expect(await code == .success, "\(captured.error)")
        let report = try LoadedReport(contentsOf: scratch.path("report.json")).result
        let finalText = try #require(final)

        for scenario in report.scenarios {
            let name = scenario.scenario.name
            let line = #"wsload_ws_messages_received_total{scenario="\#(name)"} \#(scenario.metrics.counter(Metric.messagesReceived))"#
            #expect(finalText.contains(line + "\n"), "\(name)")
            #expect(finalText.contains(#"wsload_connections{scenario="\#(name)"} 0"#))
        }
        let steps = report.scenarios[1].metrics.histograms[MetricFamily.flowStep.name("echoed")]?.totalCount ?? 0
        #expect(steps > 0 && finalText.contains(#"wsload_flow_step_seconds_count{scenario="flow",step="echoed"} \#(steps)"#))
        #expect(finalText.contains(#"wsload_run_info{profile="secretive",run_id="\#(report.runID ?? "")",shard=""} 1"#))

        for (index, scrape) in scrapes.enumerated() {
            for secret in [token, headerValue] + secrets {
                #expect(!scrape.contains(secret), "scrape \(index) holds a secret")
            }
        }
        for text in [scrapes[0], finalText] {
            let lint = try await lint(text, in: scratch)
            #expect(lint.status == 0 && lint.output.isEmpty, "promtool check metrics: \(lint.output)")
        }
    }

    @Test("a bad --metrics address exits 64 naming it; an address in use exits 1 naming the option and the address")
    func badAddress() async throws {
        let bad = await runCLI("run", "profile.json", "--metrics", "localhost:99999")
        #expect(bad.code == .usage)
        #expect(bad.error.contains("--metrics: the port in \"localhost:99999\" is not a number from 0 to 65535"), "\(bad.error)")
        let named = await runCLI("run", "profile.json", "--metrics", "example.com:9464")
        #expect(named.code == .usage && named.error.contains("--metrics: \"example.com\" is not a numeric"), "\(named.error)")

        let scratch = try RunScratch()
        let profile = try scratch.write("profile.json", echoProfile(duration: "1s", connections: 1))
        let taken = try BoundLoopbackPort()
        defer { taken.close() }
        let busy = await runCLI("run", profile, "--metrics", "127.0.0.1:\(taken.port)", "--out", scratch.path("report.json"))
        #expect(busy.code == .failure)
        #expect(busy.error.contains("--metrics: cannot listen on 127.0.0.1:\(taken.port): address_in_use"), "\(busy.error)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("report.json")), "the run did not start")
    }

    @Test("only an address beyond loopback gets the warning line")
    func exposureWarning() throws {
        #expect(LiveOutputs.exposureWarning(option: "--metrics", address: try LiveAddress(parsing: "9464", option: "metrics")) == nil)
        #expect(LiveOutputs.exposureWarning(option: "--metrics", address: try LiveAddress(parsing: "[::1]:9464", option: "metrics")) == nil)
        #expect(LiveOutputs.exposureWarning(option: "--dashboard", address: try LiveAddress(parsing: "0.0.0.0:5665", option: "dashboard"))
            == "warning: --dashboard listens on 0.0.0.0:5665, beyond loopback: anyone who can reach this host on that port can read it")
    }

    /// `promtool check metrics` on `text`: its exit status and what it printed (lint problems; nothing when clean).
    private func lint(_ text: String, in scratch: RunScratch) async throws -> (status: Int32, output: String) {
        let file = try scratch.write("scrape-\(UInt32.random(in: 0...UInt32.max)).txt", text)
        let result = try await TestProcess.runWithStatusOffPool(["sh", "-c", "promtool check metrics < '\(file)' 2>&1"])
        return (result.status, result.output + result.errors)
    }
}

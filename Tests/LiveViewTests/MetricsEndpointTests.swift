import Histogram
import Profile
import Reporting
import Runtime
import Testing
import TestSupport
@testable import LiveView
@testable import LoadEngine

/// A progress report of one scenario `s` with `received` replies and `live` of `target` connections.
func progress(elapsed: Duration, received: UInt64, live: Int, target: Int, isStopping: Bool = false) -> RunProgress {
    var total = MetricSet()
    total.counters[Metric.messagesReceived.name] = received
    var rtt = Histogram()
    rtt.record(120, count: received)
    total.histograms[Metric.messageRoundTrip.name] = rtt
    var invariants = InvariantReport()
    invariants.checked["messages.in_sequence"] = received
    return RunProgress(
        elapsed: elapsed, duration: .seconds(30), liveConnections: live, targetConnections: target, recent: MetricSet(),
        recentSeconds: 1, total: total, isStopping: isStopping,
        scenarios: isStopping ? [] : [ScenarioProgress(name: "s", liveConnections: live, targetConnections: target, total: total)],
        invariants: invariants)
}

@Suite struct MetricsEndpointTests {
    @Test("/metrics answers in the text format, or OpenMetrics when asked; / links to it; anything else is 404")
    func routes() async throws {
        let endpoint = try await MetricsEndpoint.start(
            at: LiveAddress(host: "127.0.0.1", port: 0), configuration: .init(bucketsPerDoubling: 2), profileName: "quick",
            runID: "run-7", shard: Shard(index: 1, count: 3))
        do {
            try await withLoopGroup(loopCount: 1) { group in
                let loop = group.loops[0]
                try await onLoop(loop) {
                    var client = try await LiveTestClient.connect(to: endpoint.boundAddress, on: loop)
                    defer { client.close() }
                    try await client.request("/metrics")
                    let (head, body) = try await client.readResponse()
                    #expect(head.status == 200 && head.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8")
                    #expect(head.headers["Vary"] == "Accept")
                    #expect(body.contains(#"wsload_run_info{profile="quick",run_id="run-7",shard="2/3"} 1"#))
                    #expect(!body.contains("# EOF"))

                    try await client.request("/metrics", headers: ["Accept: application/openmetrics-text; version=1.0.0"])
                    let (openHead, openBody) = try await client.readResponse()
                    #expect(openHead.headers["Content-Type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8")
                    #expect(openBody.hasSuffix("\n# EOF\n") && openBody.contains("# TYPE wsload_run info\n"))

                    try await client.request("/metrics", method: "HEAD")
                    let (headOnly, empty) = try await client.readResponse(isHead: true)
                    #expect(headOnly.status == 200 && empty.isEmpty && headOnly.headers["Content-Length"] == String(body.utf8.count))

                    try await client.request("/")
                    let (index, page) = try await client.readResponse()
                    #expect(index.headers["Content-Type"] == "text/html; charset=utf-8" && page.contains(#"<a href="/metrics">"#))

                    try await client.request("/metrics/")
                    let (missing, missingBody) = try await client.readResponse()
                    #expect(missing.status == 404 && missingBody == "not found: the metrics are at /metrics\n")
                }
            }
        } catch {
            await endpoint.stop()
            throw error
        }
        await endpoint.stop()
    }

    @Test("a scrape shows the latest progress; while stopping the scenarios' last figures stay and the clock moves on")
    func updates() async throws {
        let endpoint = try await MetricsEndpoint.start(
            at: LiveAddress(host: "127.0.0.1", port: 0), configuration: .init(), profileName: "p", runID: "r", shard: nil)
        #expect(!endpoint.render(accept: nil).text.contains("wsload_connections"), "no scenario before the first progress")
        endpoint.update(progress(elapsed: .seconds(1), received: 10, live: 2, target: 4))
        var text = endpoint.render(accept: nil).text
        #expect(text.contains(#"wsload_ws_messages_received_total{scenario="s"} 10"#))
        #expect(text.contains(#"wsload_connections{scenario="s"} 2"#) && text.contains(#"wsload_connections_target{scenario="s"} 4"#))
        #expect(text.contains(#"wsload_ws_message_rtt_seconds_count{scenario="s"} 10"#))
        #expect(text.contains(#"wsload_invariant_checks_total{invariant="messages.in_sequence"} 10"#))
        #expect(text.contains("wsload_run_elapsed_seconds 1\n") && text.contains("wsload_run_duration_seconds 30\n"))
        #expect(text.contains("wsload_run_finished 0\n"))

        endpoint.update(progress(elapsed: .seconds(2), received: 25, live: 4, target: 4))
        endpoint.update(progress(elapsed: .milliseconds(30_500), received: 99, live: 1, target: 0, isStopping: true))
        text = endpoint.render(accept: nil).text
        #expect(text.contains(#"wsload_ws_messages_received_total{scenario="s"} 25"#))
        #expect(text.contains("wsload_run_elapsed_seconds 30.5\n"))
        await endpoint.stop()
    }
}

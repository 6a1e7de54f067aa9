import Foundation
import Histogram
import Profile
import Reporting
import Testing
import TestSupport
@testable import LiveView

/// A small run's figures with one of everything the exposition writes.
func sampleSnapshot() -> MetricsSnapshot {
    var snapshot = MetricsSnapshot(profileName: "echo \"demo\"", runID: "r-1", shard: "1/2")
    snapshot.elapsedSeconds = 12.5
    snapshot.durationSeconds = 30
    var rtt = Histogram()
    rtt.record(40, count: 2)
    rtt.record(100)
    rtt.record(250)
    rtt.record(2_000_000)
    var join = Histogram()
    join.record(150)
    var first = MetricSet()
    first.histograms[Metric.messageRoundTrip.name] = rtt
    first.histograms[MetricFamily.flowStep.name("join")] = join
    first.counters[Metric.messagesSent.name] = 5
    first.counters[Metric.messagesReceived.name] = 5
    first.counters[MetricFamily.flowPushed.name("other")] = 3
    first.counters[MetricFamily.httpStatus.name(200)] = 4
    first.disconnects = [1006: 1, 1000: 2]
    first.errors = ["connect": 1]
    var second = MetricSet()
    second.counters[Metric.messagesReceived.name] = 7
    snapshot.scenarios = [
        .init(name: "chat\nroom \\ \"a\"", liveConnections: 3, targetConnections: 4, total: first),
        .init(name: "b", liveConnections: 0, targetConnections: 2, total: second),
    ]
    snapshot.runOnly.counters[Metric.unfinishedAtStop.name] = 2
    snapshot.invariants.checked = ["messages.in_sequence": 10]
    snapshot.invariants.violations = ["events.none_after_disconnected": 1]
    return snapshot
}

/// ``sampleSnapshot()`` at one bucket per doubling in the Prometheus text format, as reviewed: bucket counts are
/// cumulative (40 µs twice ≤ 50 µs, 100 µs on its bound, 250 µs ≤ 0.4 ms, 2 s in the 3.28 s bucket), `_sum` is the
/// slot midpoints' sum (40 + 40 + 100 + 250 + 2,000,384 µs), label values escaped, the run-only counter unlabelled.
let expectedPrometheusText = #"""
# HELP wsload_run_info the run: its profile, run id and shard (1)
# TYPE wsload_run_info gauge
wsload_run_info{profile="echo \"demo\"",run_id="r-1",shard="1/2"} 1
# HELP wsload_run_elapsed_seconds seconds since the run started
# TYPE wsload_run_elapsed_seconds gauge
wsload_run_elapsed_seconds 12.5
# HELP wsload_run_duration_seconds the profile's duration in seconds
# TYPE wsload_run_duration_seconds gauge
wsload_run_duration_seconds 30
# HELP wsload_run_finished 1 once the run ended (the figures are the report's), else 0
# TYPE wsload_run_finished gauge
wsload_run_finished 0
# HELP wsload_connections connections open now, by scenario
# TYPE wsload_connections gauge
wsload_connections{scenario="chat\nroom \\ \"a\""} 3
wsload_connections{scenario="b"} 0
# HELP wsload_connections_target the connections the scenario's ramp asks for now
# TYPE wsload_connections_target gauge
wsload_connections_target{scenario="chat\nroom \\ \"a\""} 4
wsload_connections_target{scenario="b"} 2
# HELP wsload_ws_message_rtt_seconds request to reply: from the actual send (closed model) or the intended send time (open model)
# TYPE wsload_ws_message_rtt_seconds histogram
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.00005"} 2
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.0001"} 3
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.0002"} 3
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.0004"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.0008"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.0016"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.0032"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.0064"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.0128"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.0256"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.0512"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.102"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.205"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.41"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="0.819"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="1.64"} 4
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="3.28"} 5
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="6.55"} 5
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="13.1"} 5
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="26.2"} 5
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="52.4"} 5
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="105"} 5
wsload_ws_message_rtt_seconds_bucket{scenario="chat\nroom \\ \"a\"",le="+Inf"} 5
wsload_ws_message_rtt_seconds_sum{scenario="chat\nroom \\ \"a\""} 2.000814
wsload_ws_message_rtt_seconds_count{scenario="chat\nroom \\ \"a\""} 5
# HELP wsload_ws_messages_sent_total messages sent (requests)
# TYPE wsload_ws_messages_sent_total counter
wsload_ws_messages_sent_total{scenario="chat\nroom \\ \"a\""} 5
# HELP wsload_ws_messages_received_total messages received (replies; pushed messages)
# TYPE wsload_ws_messages_received_total counter
wsload_ws_messages_received_total{scenario="chat\nroom \\ \"a\""} 5
wsload_ws_messages_received_total{scenario="b"} 7
# HELP wsload_ws_unfinished_at_stop_total connections cancelled after gracefulStop
# TYPE wsload_ws_unfinished_at_stop_total counter
wsload_ws_unfinished_at_stop_total 2
# HELP wsload_ws_disconnects_total disconnects by the close code the client saw (1006: no closing handshake)
# TYPE wsload_ws_disconnects_total counter
wsload_ws_disconnects_total{scenario="chat\nroom \\ \"a\"",code="1000"} 2
wsload_ws_disconnects_total{scenario="chat\nroom \\ \"a\"",code="1006"} 1
# HELP wsload_errors_total errors by code; rate is errors per operation (connection attempts, messages sent, transfers started)
# TYPE wsload_errors_total counter
wsload_errors_total{scenario="chat\nroom \\ \"a\"",code="connect"} 1
# HELP wsload_http_status_total final HTTP responses by status (redirects included)
# TYPE wsload_http_status_total counter
wsload_http_status_total{scenario="chat\nroom \\ \"a\"",code="200"} 4
# HELP wsload_flow_step_seconds a flow step's latency: an expect or on from the preceding send (or its mark), an ack from its emit, a query's result, a subscription's end, a ping's pong, a group's whole block
# TYPE wsload_flow_step_seconds histogram
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.00005"} 0
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.0001"} 0
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.0002"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.0004"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.0008"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.0016"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.0032"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.0064"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.0128"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.0256"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.0512"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.102"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.205"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.41"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="0.819"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="1.64"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="3.28"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="6.55"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="13.1"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="26.2"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="52.4"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="105"} 1
wsload_flow_step_seconds_bucket{scenario="chat\nroom \\ \"a\"",step="join",le="+Inf"} 1
wsload_flow_step_seconds_sum{scenario="chat\nroom \\ \"a\"",step="join"} 0.00015
wsload_flow_step_seconds_count{scenario="chat\nroom \\ \"a\"",step="join"} 1
# HELP wsload_flow_pushed_total messages that arrived outside any expect, by the type classify names (other: none matched)
# TYPE wsload_flow_pushed_total counter
wsload_flow_pushed_total{scenario="chat\nroom \\ \"a\"",type="other"} 3
# HELP wsload_invariant_checks_total observations the correctness oracle checked, by invariant
# TYPE wsload_invariant_checks_total counter
wsload_invariant_checks_total{invariant="events.none_after_disconnected"} 0
wsload_invariant_checks_total{invariant="messages.in_sequence"} 10
# HELP wsload_invariant_violations_total observations that broke an invariant, by invariant
# TYPE wsload_invariant_violations_total counter
wsload_invariant_violations_total{invariant="events.none_after_disconnected"} 1
wsload_invariant_violations_total{invariant="messages.in_sequence"} 0
"""#

/// A finished one-scenario run in OpenMetrics at one bucket per doubling, as reviewed: counter and info families
/// named without `_total`/`_info` (their samples keep them), 1 ms in the 1.6 ms bucket, `# EOF` last.
let expectedOpenMetricsText = #"""
# HELP wsload_run the run: its profile, run id and shard (1)
# TYPE wsload_run info
wsload_run_info{profile="p",run_id="r",shard=""} 1
# HELP wsload_run_elapsed_seconds seconds since the run started
# TYPE wsload_run_elapsed_seconds gauge
wsload_run_elapsed_seconds 31.25
# HELP wsload_run_duration_seconds the profile's duration in seconds
# TYPE wsload_run_duration_seconds gauge
wsload_run_duration_seconds 30
# HELP wsload_run_finished 1 once the run ended (the figures are the report's), else 0
# TYPE wsload_run_finished gauge
wsload_run_finished 1
# HELP wsload_connections connections open now, by scenario
# TYPE wsload_connections gauge
wsload_connections{scenario="s"} 0
# HELP wsload_connections_target the connections the scenario's ramp asks for now
# TYPE wsload_connections_target gauge
wsload_connections_target{scenario="s"} 0
# HELP wsload_ws_message_rtt_seconds request to reply: from the actual send (closed model) or the intended send time (open model)
# TYPE wsload_ws_message_rtt_seconds histogram
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.00005"} 0
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.0001"} 0
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.0002"} 0
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.0004"} 0
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.0008"} 0
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.0016"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.0032"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.0064"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.0128"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.0256"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.0512"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.102"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.205"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.41"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="0.819"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="1.64"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="3.28"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="6.55"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="13.1"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="26.2"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="52.4"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="105"} 1
wsload_ws_message_rtt_seconds_bucket{scenario="s",le="+Inf"} 1
wsload_ws_message_rtt_seconds_sum{scenario="s"} 0.001
wsload_ws_message_rtt_seconds_count{scenario="s"} 1
# HELP wsload_ws_messages_received messages received (replies; pushed messages)
# TYPE wsload_ws_messages_received counter
wsload_ws_messages_received_total{scenario="s"} 3
# HELP wsload_errors errors by code; rate is errors per operation (connection attempts, messages sent, transfers started)
# TYPE wsload_errors counter
wsload_errors_total{scenario="s",code="timeout"} 1
# HELP wsload_invariant_checks observations the correctness oracle checked, by invariant
# TYPE wsload_invariant_checks counter
wsload_invariant_checks_total{invariant="messages.in_sequence"} 3
# HELP wsload_invariant_violations observations that broke an invariant, by invariant
# TYPE wsload_invariant_violations counter
wsload_invariant_violations_total{invariant="messages.in_sequence"} 0
# EOF
"""#

/// A finished one-scenario run: the OpenMetrics golden's input.
func finishedSnapshot() -> MetricsSnapshot {
    var snapshot = MetricsSnapshot(profileName: "p", runID: "r", shard: "")
    snapshot.elapsedSeconds = 31.25
    snapshot.durationSeconds = 30
    snapshot.isFinished = true
    var total = MetricSet()
    total.counters[Metric.messagesReceived.name] = 3
    total.errors = ["timeout": 1]
    var rtt = Histogram()
    rtt.record(1000)
    total.histograms[Metric.messageRoundTrip.name] = rtt
    snapshot.scenarios = [.init(name: "s", liveConnections: 0, targetConnections: 0, total: total)]
    snapshot.invariants.checked = ["messages.in_sequence": 3]
    return snapshot
}

@Suite struct PrometheusExpositionTests {
    @Test("a small run in the Prometheus text format, byte for byte (one bucket per doubling)")
    func prometheusText() {
        let text = PrometheusExposition(bucketsPerDoubling: 1).render(sampleSnapshot(), format: .prometheus)
        #expect(text == expectedPrometheusText + "\n")
    }

    @Test("a finished run in OpenMetrics, byte for byte; its samples are the text format's, with other family headers")
    func openMetricsText() {
        let exposition = PrometheusExposition(bucketsPerDoubling: 1)
        #expect(exposition.render(finishedSnapshot(), format: .openMetrics) == expectedOpenMetricsText + "\n")
        // The formats differ only in family headers and the end marker.
        for snapshot in [sampleSnapshot(), finishedSnapshot()] {
            let samples = { (text: String) in text.split(separator: "\n").filter { !$0.hasPrefix("#") } }
            #expect(samples(exposition.render(snapshot, format: .prometheus)) == samples(exposition.render(snapshot, format: .openMetrics)))
        }
    }

    @Test("before any progress only the run's own gauges are there")
    func empty() {
        let text = PrometheusExposition().render(MetricsSnapshot(profileName: "p", runID: "r", shard: ""), format: .prometheus)
        #expect(text.split(separator: "\n").filter { !$0.hasPrefix("#") } == [
            #"wsload_run_info{profile="p",run_id="r",shard=""} 1"#, "wsload_run_elapsed_seconds 0", "wsload_run_duration_seconds 0",
            "wsload_run_finished 0",
        ])
    }

    @Test("latency bounds run from 50 µs to the first at or past 100 s, throughput from 1 KiB/s to 100 GiB/s, 3 digits each")
    func bounds() {
        let four = PrometheusExposition(bucketsPerDoubling: 4)
        #expect(four.latencyBounds.prefix(9).map(\.label) == ["0.00005", "0.0000595", "0.0000707", "0.0000841", "0.0001", "0.000119",
                                                              "0.000141", "0.000168", "0.0002"])
        #expect(four.latencyBounds.prefix(9).map(\.limit) == [50, 59, 70, 84, 100, 119, 141, 168, 200])
        #expect(four.latencyBounds.count == 85)
        #expect(four.latencyBounds.last == .init(label: "105", limit: 105_000_000), "\(four.latencyBounds.suffix(2))")
        #expect(four.latencyBounds[four.latencyBounds.count - 2].limit < 100_000_000)
        #expect(four.throughputBounds.prefix(5).map(\.label) == ["1024", "1218.56", "1443.84", "1720.32", "2048"])
        #expect(four.throughputBounds.prefix(5).map(\.limit) == [1, 1, 1, 1, 2])
        let top = four.throughputBounds.last!
        #expect(top.limit >= 100 * 1024 * 1024 && four.throughputBounds[four.throughputBounds.count - 2].limit < 100 * 1024 * 1024)
        #expect(top.label == "115712000000", "113e6 KiB/s: 2^26.75 rounded to 3 digits")
        for perDoubling in 1...16 {
            let exposition = PrometheusExposition(bucketsPerDoubling: perDoubling)
            for bounds in [exposition.latencyBounds, exposition.throughputBounds] {
                let values = bounds.map { Double($0.label)! }
                #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 }, "\(perDoubling) per doubling: labels ascend")
                #expect(zip(bounds, bounds.dropFirst()).allSatisfy { $0.limit <= $1.limit })
            }
            // Every doubling holds `perDoubling` bounds (give or take the rounding to 3 digits at the ends).
            #expect(abs(exposition.latencyBounds.count - (21 * perDoubling + 1)) <= 1, "\(perDoubling): \(exposition.latencyBounds.count)")
        }
        #expect(PrometheusExposition(bucketsPerDoubling: 0).bucketsPerDoubling == 1)
        #expect(PrometheusExposition(bucketsPerDoubling: 99).bucketsPerDoubling == 16)
    }

    @Test("decimal labels are exact: no exponent, no trailing zeros")
    func decimalText() {
        #expect(PrometheusExposition.decimalText(595, exponent: -7) == "0.0000595")
        #expect(PrometheusExposition.decimalText(100, exponent: -6) == "0.0001")
        #expect(PrometheusExposition.decimalText(121856, exponent: -2) == "1218.56")
        #expect(PrometheusExposition.decimalText(105, exponent: 6) == "105000000")
        #expect(PrometheusExposition.decimalText(500, exponent: -1) == "50")
        #expect(PrometheusExposition.threeDigits(1000) == (100, 1))
        #expect(PrometheusExposition.threeDigits(59.46) == (595, -1))
        #expect(PrometheusExposition.threeDigits(0.001) == (100, -5))
    }

    @Test("bucket counts are the HDR slots wholly at or below each bound (cumulative, monotone); _sum the slots' middles")
    func bucketCounts() {
        var random = SystemRandomNumberGenerator()
        let exposition = PrometheusExposition(bucketsPerDoubling: 4)
        let limits = exposition.latencyBounds.map(\.limit)
        for round in 0..<20 {
            var histogram = Histogram()
            var values: [UInt64] = []
            for _ in 0..<(round * 50 + 1) {
                // Log-uniform from 1 µs to ~2 min: below the first bound, across all, past the last.
                let value = UInt64(exp(Double.random(in: 0...18.6, using: &random)))
                values.append(value)
                histogram.record(value)
            }
            values.append(contentsOf: limits.prefix(3))  // values exactly on bounds count in them
            for limit in limits.prefix(3) { histogram.record(limit) }
            let counts = histogram.cumulativeCounts(atOrBelow: limits)
            for (limit, count) in zip(limits, counts) {
                let expected = values.filter { histogram.highestEquivalentValue($0) <= limit }.count
                #expect(count == UInt64(expected), "bound \(limit)")
            }
            #expect(zip(counts, counts.dropFirst()).allSatisfy { $0 <= $1 })
            #expect(counts.last! <= histogram.totalCount)
            // _sum: every value taken as its slot's middle, as the HDR's mean takes it.
            let middles = values.reduce(0.0) { sum, value in
                sum + Double(histogram.lowestEquivalentValue(value) + histogram.sizeOfEquivalentRange(value) / 2)
            }
            #expect(histogram.midpointSum == middles)
            #expect(abs(histogram.midpointSum - histogram.mean * Double(histogram.totalCount)) <= 1e-9 * middles)
        }
        #expect(Histogram().cumulativeCounts(atOrBelow: [1, 2, 3]) == [0, 0, 0] && Histogram().midpointSum == 0)
    }

    @Test("label values escape backslash, quote and line feed; HELP escapes quotes only in OpenMetrics")
    func escaping() {
        #expect(ExpositionWriter.escapedLabelValue(#"a\b"c"# + "\nd") == #"a\\b\"c\nd"#)
        #expect(ExpositionWriter.escapedLabelValue("plain é") == "plain é")
        var prometheus = ExpositionWriter(format: .prometheus)
        prometheus.family("x", type: "gauge", help: "say \"hi\"\\\nbye")
        #expect(prometheus.text == "# HELP x say \"hi\"\\\\\\nbye\n# TYPE x gauge\n")
        var openMetrics = ExpositionWriter(format: .openMetrics)
        openMetrics.family("x", type: "gauge", help: "say \"hi\"")
        #expect(openMetrics.text == "# HELP x say \\\"hi\\\"\n# TYPE x gauge\n")
        #expect(ExpositionWriter.number(0.5) == "0.5" && ExpositionWriter.number(3) == "3" && ExpositionWriter.number(.infinity) == "+Inf")
        #expect(ExpositionWriter.number(.nan) == "NaN" && ExpositionWriter.number(1e300) == "1e+300")
    }

    @Test("every sample belongs to the family above it, every family is written once, OpenMetrics ends in # EOF")
    func structure() throws {
        var snapshot = sampleSnapshot()
        var throughput = Histogram()
        throughput.record(5000)
        snapshot.scenarios[1].total.histograms[Metric.throughput.name] = throughput
        snapshot.scenarios[1].total.histograms[MetricFamily.flowFirstResult.name("sub")] = throughput
        snapshot.scenarios[1].total.counters[MetricFamily.flowStepErrors.name("sub")] = 1
        for format in [PrometheusExposition.Format.prometheus, .openMetrics] {
            let text = PrometheusExposition(bucketsPerDoubling: 4).render(snapshot, format: format)
            var families: [String] = []
            var type = ""
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.removeLast() == "", "the text ends with a line feed")
            if format == .openMetrics { #expect(lines.removeLast() == "# EOF") }
            for (index, line) in lines.enumerated() {
                if line.hasPrefix("# HELP ") {
                    let name = String(line.dropFirst(7).prefix { $0 != " " })
                    #expect(!families.contains(name), "\(name) written twice")
                    families.append(name)
                    #expect(lines[index + 1].hasPrefix("# TYPE \(name) "))
                } else if line.hasPrefix("# TYPE ") {
                    type = String(line.split(separator: " ")[3])
                } else {
                    #expect(!line.hasPrefix("#"), "\(line)")
                    let name = String(line.prefix { $0 != "{" && $0 != " " })
                    let family = try #require(families.last)
                    let suffixes: [String] = switch (type, format) {
                    case ("histogram", _): ["_bucket", "_sum", "_count"]
                    case ("counter", .openMetrics): ["_total"]
                    case ("info", _): ["_info"]
                    default: [""]
                    }
                    #expect(suffixes.contains { family + $0 == name }, "\(name) under \(family) (\(type))")
                }
            }
            #expect(families.contains("wsload_http_throughput_bytes_per_second"))
            #expect(text.contains(#"wsload_http_throughput_bytes_per_second_bucket{scenario="b",le="4986880"} 0"#))
            #expect(text.contains(#"wsload_http_throughput_bytes_per_second_bucket{scenario="b",le="5928960"} 1"#))
            #expect(text.contains(#"wsload_http_throughput_bytes_per_second_sum{scenario="b"} 5122048"#), "5000 KiB/s: its slot's middle, 5002, × 1024")
            #expect(text.contains(#"wsload_flow_first_result_seconds_count{scenario="b",step="sub"} 1"#))
            #expect(text.contains(#"wsload_flow_step_errors_total{scenario="b",step="sub"} 1"#))
        }
    }

    @Test("docs/REPORT.md maps every metric of the catalogue to its Prometheus name")
    func documented() throws {
        let text = try String(contentsOf: SourceTree.root.appendingPathComponent("docs/REPORT.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## Prometheus metrics").dropFirst().first)
        for metric in MetricCatalog.all {
            let name = ExpositionName.of(metric) + (metric.kind.isHistogram ? "_bucket" : "")
            #expect(section.contains("| `\(metric.name)` | `\(name)`"), "\(metric.name) → \(name)")
        }
        for family in MetricCatalog.families {
            let name = ExpositionName.of(family) + (family.kind.isHistogram ? "_bucket" : "")
            #expect(section.contains("| `\(family.documentedName)` | `\(name)`"), "\(family.documentedName) → \(name)")
        }
        for name in [ExpositionName.runInfo, ExpositionName.runElapsed, ExpositionName.runDuration, ExpositionName.runFinished,
                     ExpositionName.connections, ExpositionName.connectionsTarget, ExpositionName.invariantChecks,
                     ExpositionName.invariantViolations] {
            #expect(section.contains("`\(name)`"), "\(name)")
        }
    }

    @Test("the run-wide part no scenario holds is what is left of the total")
    func runOnlyCounters() {
        var total = MetricSet()
        total.counters = [Metric.messagesReceived.name: 12, Metric.unfinishedAtStop.name: 2]
        var first = MetricSet()
        first.counters[Metric.messagesReceived.name] = 5
        var second = MetricSet()
        second.counters[Metric.messagesReceived.name] = 7
        let runOnly = MetricsState.runOnlyCounters(total: total, scenarios: [
            .init(name: "a", liveConnections: 0, targetConnections: 0, total: first),
            .init(name: "b", liveConnections: 0, targetConnections: 0, total: second),
        ])
        #expect(runOnly.counters == [Metric.unfinishedAtStop.name: 2])
    }

    @Test("OpenMetrics when Accept asks for it at least as much as for text; the text format otherwise")
    func negotiation() {
        let prometheusServer = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
            + "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        let cases: [(String?, PrometheusExposition.Format)] = [
            (nil, .prometheus), ("", .prometheus), ("*/*", .prometheus), ("text/plain", .prometheus),
            (prometheusServer, .openMetrics), ("application/openmetrics-text", .openMetrics),
            ("Application/OpenMetrics-Text; Version=1.0.0", .openMetrics),
            ("application/openmetrics-text;version=0.0.1", .prometheus),
            ("application/openmetrics-text;q=0", .prometheus),
            ("text/plain;q=0.9, application/openmetrics-text;q=0.5", .prometheus),
            ("text/plain;q=0.5, application/openmetrics-text;q=0.9", .openMetrics),
            ("application/openmetrics-text;q=nonsense", .prometheus),
            (";;,,=,application/openmetrics-text", .openMetrics),
        ]
        for (accept, format) in cases {
            #expect(MetricsState.format(accepting: accept) == format, "\(accept ?? "nil")")
        }
    }
}

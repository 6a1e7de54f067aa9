import Histogram
import JSON
@testable import LiveView
@testable import LoadEngine
import Profile
import Reporting
import Testing

/// A second of an echo run: 16 round trips (10 of 100 µs, 5 of 200 µs, one of 5 ms), a flow step, two connect
/// errors, a reconnect and a 1006; totals of the run so far; two invariants, one broken once.
func knownProgress(elapsed: Duration = .milliseconds(3_200), isStopping: Bool = false) -> RunProgress {
    var recent = MetricSet()
    var rtt = Histogram()
    rtt.record(100, count: 10)
    rtt.record(200, count: 5)
    rtt.record(5_000)
    recent[histogram: .messageRoundTrip] = rtt
    var step = Histogram()
    step.record(1_500, count: 2)
    recent.histograms[MetricFamily.flowStep.name("join")] = step
    recent[counter: .messagesSent] = 16
    recent[counter: .messagesReceived] = 16
    recent[counter: .reconnects] = 1
    recent.errors["connect"] = 2
    recent.disconnects[1006] = 1
    var total = recent
    total[counter: .messagesSent] = 48
    total[counter: .messagesReceived] = 47
    total[counter: .connectionsOpened] = 5
    total[counter: .reconnects] = 2
    total.errors["connect"] = 3
    total.errors["handshake"] = 1
    total.disconnects[1000] = 4
    var invariants = InvariantReport()
    invariants.checked = ["events.none_after_disconnected": 40, "messages.echo_sequence": 47]
    invariants.violations = ["messages.echo_sequence": 1]
    var progress = RunProgress(
        elapsed: elapsed, duration: .seconds(10), liveConnections: 4, targetConnections: 5, recent: isStopping ? MetricSet() : recent,
        recentSeconds: isStopping ? 0 : 1.0, total: total, isStopping: isStopping)
    if isStopping {
        progress.stopTimeLeft = .milliseconds(4_250)
        progress.targetConnections = 0
    } else {
        progress.scenarios = [ScenarioProgress(name: "chat \"room\"\n", liveConnections: 4, targetConnections: 5, total: total)]
    }
    progress.invariants = invariants
    return progress
}

@Suite("Dashboard frames", .timeLimit(.minutes(1)))
struct DashboardFrameTests {
    @Test("a known progress gives exactly this frame")
    func knownFrame() throws {
        let progress = knownProgress()
        let frame = DashboardFrames.json(progress, recent: progress.recent, seconds: 1.0, number: 7).formatted(pretty: false)
        #expect(frame == #"""
            {"n":7,"t":3.2,"duration":10,"stopping":false,"stopLeft":0,"live":4,"target":5,\#
            "scenarios":[{"name":"chat \"room\"\n","live":4,"target":5}],"seconds":1,"sent":16,"received":16,\#
            "reconnects":1,"disconnects":1,"errors":{"connect":2},\#
            "latency":{"ws.message_rtt":{"n":16,"p50":100,"p90":200,"p99":5003,"max":5003},\#
            "flow.step.join":{"n":2,"p50":1500,"p90":1500,"p99":1500,"max":1500}},\#
            "total":{"opened":5,"sent":48,"received":47,"reconnects":2,"errors":{"connect":3,"handshake":1},\#
            "disconnects":{"1000":4,"1006":1}},\#
            "invariants":{"checks":87,"violations":1,"byName":[\#
            {"name":"events.none_after_disconnected","checked":40,"violations":0},\#
            {"name":"messages.echo_sequence","checked":47,"violations":1}]}}
            """#)
        #expect(!frame.contains("\n"), "one line: an SSE data field")
    }

    @Test("while stopping a frame carries the countdown and no span")
    func stoppingFrame() {
        let progress = knownProgress(elapsed: .milliseconds(10_250), isStopping: true)
        let frame = DashboardFrames.json(progress, recent: progress.recent, seconds: 0, number: 11).formatted(pretty: false)
        #expect(frame.hasPrefix(#"{"n":11,"t":10.25,"duration":10,"stopping":true,"stopLeft":4.25,"live":4,"target":0,"scenarios":[],"#
            + #""seconds":0,"sent":0,"received":0,"reconnects":0,"disconnects":0,"errors":{},"latency":{},"total":{"opened":5,"#))
    }

    @Test("progress ten times a second makes one frame a second, summing what each brought")
    func summedToSeconds() throws {
        var frames = DashboardFrames()
        var made: [String] = []
        for tenth in 1...25 {
            var recent = MetricSet()
            recent[counter: .messagesSent] = 1
            var rtt = Histogram()
            rtt.record(UInt64(tenth))
            recent[histogram: .messageRoundTrip] = rtt
            var progress = RunProgress(
                elapsed: .milliseconds(tenth * 100), duration: .seconds(10), liveConnections: 1, targetConnections: 1,
                recent: recent, recentSeconds: 0.1, total: MetricSet(), isStopping: false)
            progress.invariants.checked = ["messages.in_sequence": UInt64(tenth)]
            if let frame = frames.add(progress) { made.append(frame) }
        }
        #expect(made.count == 2, "frames at 1 s and 2 s, none before the first second ended")
        let first = try JSONValue(parsing: made[0])
        #expect(first["n"]?.integerValue == 0 && first["t"]?.numberValue == 1 && first["seconds"]?.numberValue == 1)
        #expect(first["sent"]?.integerValue == 10)
        #expect(first["latency"]?[Metric.messageRoundTrip.name]?["n"]?.integerValue == 10)
        #expect(first["latency"]?[Metric.messageRoundTrip.name]?["max"]?.integerValue == 10)
        let second = try JSONValue(parsing: made[1])
        #expect(second["n"]?.integerValue == 1 && second["sent"]?.integerValue == 10)
        #expect(second["latency"]?[Metric.messageRoundTrip.name]?["p50"]?.integerValue == 15, "values 11...20 only")

        var stopping = knownProgress(elapsed: .milliseconds(2_600), isStopping: true)
        stopping.recent[counter: .messagesSent] = 3
        stopping.recentSeconds = 0.1
        stopping.invariants = InvariantReport()  // the coordinator's stopping progress carries none
        let made3 = frames.add(stopping)
        let stop = try #require(made3, "the stop's first progress is a frame at once")
        #expect(try JSONValue(parsing: stop)["sent"]?.integerValue == 8, "the five tenths after 2 s and the stop's three")
        #expect(try JSONValue(parsing: stop)["invariants"]?["checks"]?.integerValue == 25,
                "a stopping frame shows the last gather's invariants")
        #expect(frames.add(knownProgress(elapsed: .milliseconds(2_850), isStopping: true)) == nil)
        #expect(frames.add(knownProgress(elapsed: .milliseconds(3_100), isStopping: true)) != nil)
        #expect(frames.count == 4)
    }

    @Test("a frame holds a bounded number of latency series, the catalogue's first")
    func latencySeriesBounded() throws {
        var recent = MetricSet()
        var histogram = Histogram()
        histogram.record(10)
        for index in 0..<100 { recent.histograms[MetricFamily.flowStep.name("step\(index)")] = histogram }
        recent[histogram: .connect] = histogram
        recent[histogram: .throughput] = histogram
        let latency = try #require(DashboardFrames.latencies(recent).objectValue)
        #expect(latency.count == DashboardFrames.maximumLatencies)
        #expect(latency.keys.first == Metric.connect.name)
        #expect(!latency.keys.contains(Metric.throughput.name), "KiB/s is no latency")
    }
}

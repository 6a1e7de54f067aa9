import Histogram
import JSON
import LoadEngine
import Profile
import Reporting

/// The dashboard's `frame` events: one per second of the run, as one line of JSON (docs/REPORT.md, "Live dashboard
/// frames"). Progress arrives at every gather — ten times a second with a 100 ms report interval, every 250 ms while
/// stopping — so what each brings since the previous one is summed here until the run's second turns. Pure: the
/// same progress always gives the same bytes.
///
/// A frame holds names (scenarios, flow steps, invariants), error and close codes, and numbers: never message
/// contents, tokens, header values or feeder values.
package struct DashboardFrames: Sendable {
    /// The most latency series one frame holds (the catalogue's first, then flow steps by name): a profile with
    /// hundreds of named steps must not make every frame, and the backlog of 3,600 of them, grow with it.
    package static let maximumLatencies = 24
    /// The percentiles each latency series carries, per frame.
    static let percentiles: [(key: String, percentile: Double)] = [("p50", 50), ("p90", 90), ("p99", 99)]

    /// What arrived since the last frame.
    private var pending = MetricSet()
    private var pendingSeconds = 0.0
    /// The whole second of the run the last frame was in (the first frame comes at 1 s, or when the stop begins).
    private var lastSecond: Int64 = 0
    private var wasStopping = false
    /// The invariants of the last gather: a progress while stopping carries none, and a frame then shows these.
    private var invariants = InvariantReport()
    /// Frames made so far: the next frame's `n`.
    package private(set) var count = 0

    package init() {}

    /// Takes one progress; returns the next frame when the run entered a new second since the last one (or the stop
    /// began), nil while the second is still going.
    package mutating func add(_ progress: RunProgress) -> String? {
        do {
            try pending.add(progress.recent)
        } catch {
            // Every recorder of a run shares one layout; a mismatch would be a bug. Keep the newer figures whole.
            pending = progress.recent
        }
        pendingSeconds += max(progress.recentSeconds, 0)
        if !progress.isStopping { invariants = progress.invariants }
        let second = progress.elapsed.components.seconds
        let startsStop = progress.isStopping && !wasStopping
        guard second > lastSecond || startsStop else { return nil }
        lastSecond = second
        wasStopping = progress.isStopping
        var shown = progress
        if progress.isStopping && progress.invariants == InvariantReport() { shown.invariants = invariants }
        let frame = Self.json(shown, recent: pending, seconds: pendingSeconds, number: count)
        pending = MetricSet()
        pendingSeconds = 0
        count += 1
        return frame.formatted(pretty: false)
    }

    /// One frame: `progress`'s live figures and totals, with `recent` the span of `seconds` since the previous frame.
    package static func json(_ progress: RunProgress, recent: MetricSet, seconds: Double, number: Int) -> JSONValue {
        var frame: JSONObject = [
            "n": JSONValue(number), "t": .number(milliseconds(progress.elapsed.seconds)),
            "duration": .number(milliseconds(progress.duration.seconds)), "stopping": .bool(progress.isStopping),
            "stopLeft": .number(progress.isStopping ? milliseconds(max(progress.stopTimeLeft.seconds, 0)) : 0),
            "live": JSONValue(progress.liveConnections), "target": JSONValue(progress.targetConnections),
        ]
        frame["scenarios"] = .array(progress.scenarios.map { scenario in
            ["name": .string(scenario.name), "live": JSONValue(scenario.liveConnections),
             "target": JSONValue(scenario.targetConnections)]
        })
        frame["seconds"] = .number(milliseconds(seconds))
        frame["sent"] = JSONValue(recent.counter(.messagesSent))
        frame["received"] = JSONValue(recent.counter(.messagesReceived))
        frame["reconnects"] = JSONValue(recent.counter(.reconnects))
        frame["disconnects"] = JSONValue(recent.disconnectCount)
        frame["errors"] = codes(recent.errors)
        frame["latency"] = latencies(recent)
        frame["total"] = [
            "opened": JSONValue(progress.total.counter(.connectionsOpened)),
            "sent": JSONValue(progress.total.counter(.messagesSent)),
            "received": JSONValue(progress.total.counter(.messagesReceived)),
            "reconnects": JSONValue(progress.total.counter(.reconnects)),
            "errors": codes(progress.total.errors),
            "disconnects": codes(Dictionary(uniqueKeysWithValues: progress.total.disconnects.map { (String($0.key), $0.value) })),
        ]
        frame["invariants"] = invariants(progress.invariants)
        return .object(frame)
    }

    /// Counts by code, sorted by code.
    static func codes(_ counts: [String: UInt64]) -> JSONValue {
        var object = JSONObject()
        for code in counts.keys.sorted() { object[code] = JSONValue(counts[code]!) }
        return .object(object)
    }

    /// p50/p90/p99/max (µs) and the count of every latency histogram with samples: the catalogue's in its order, then
    /// the latency families' members by name, at most ``maximumLatencies``.
    static func latencies(_ metrics: MetricSet) -> JSONValue {
        let catalogued = MetricCatalog.latencies.map(\.name).filter { metrics.histograms[$0] != nil }
        let members = metrics.histograms.keys.filter { MetricCatalog.family(of: $0)?.kind == .latency }.sorted()
        var object = JSONObject()
        for name in (catalogued + members).prefix(maximumLatencies) {
            guard let histogram = metrics.histograms[name], histogram.totalCount > 0 else { continue }
            var entry: JSONObject = ["n": JSONValue(histogram.totalCount)]
            for (key, percentile) in percentiles { entry[key] = JSONValue(histogram.value(atPercentile: percentile)) }
            entry["max"] = JSONValue(histogram.maximum)
            object[name] = .object(entry)
        }
        return .object(object)
    }

    /// Checks and violations in all, and per invariant (sorted by name).
    static func invariants(_ report: InvariantReport) -> JSONValue {
        let names = Set(report.checked.keys).union(report.violations.keys).sorted()
        return [
            "checks": JSONValue(report.checked.values.reduce(0, saturatingSum)),
            "violations": JSONValue(report.violationCount),
            "byName": .array(names.map { name in
                ["name": .string(name), "checked": JSONValue(report.checked[name] ?? 0),
                 "violations": JSONValue(report.violations[name] ?? 0)]
            }),
        ]
    }

    /// Seconds to three decimals (the frame's times).
    static func milliseconds(_ seconds: Double) -> Double {
        guard seconds.isFinite else { return 0 }
        return (seconds * 1000).rounded() / 1000
    }
}

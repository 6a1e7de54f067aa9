import LoadEngine
import Profile
import Reporting
import Synchronization

/// `wsload run --metrics ADDR`: the run's figures as a Prometheus/OpenMetrics text endpoint at `/metrics`, rendered
/// on each scrape from the latest progress (about once a second) and, after the run, from its final totals.
///
/// ``update(_:)`` only stores the progress under a lock (its metric sets are copy-on-write: no copy is made); a scrape
/// takes the latest snapshot and renders it on the server's loop.
package final class MetricsEndpoint: Sendable {
    /// How histograms become Prometheus buckets.
    package struct Configuration: Sendable {
        /// Buckets per doubling of the value (1...16): bounds are log-spaced, derived from the HDR histogram's counts.
        package var bucketsPerDoubling: Int = 4
        package init(bucketsPerDoubling: Int = 4) { self.bucketsPerDoubling = bucketsPerDoubling }
    }

    package var boundAddress: LiveAddress { server.boundAddress }
    private let server: LiveServer
    private let state: MetricsState

    private init(server: LiveServer, state: MetricsState) {
        self.server = server
        self.state = state
    }

    /// - Parameters: `runID`, `profileName` and `shard` label `wsload_run_info`.
    package static func start(at address: LiveAddress, configuration: Configuration, profileName: String, runID: String,
                              shard: Shard?) async throws(LiveServerError) -> MetricsEndpoint {
        let state = MetricsState(
            exposition: PrometheusExposition(bucketsPerDoubling: configuration.bucketsPerDoubling),
            snapshot: MetricsSnapshot(profileName: profileName, runID: runID, shard: shard?.description ?? ""))
        let server = try await LiveServer.start(at: address, name: "--metrics") { request in state.respond(to: request) }
        return MetricsEndpoint(server: server, state: state)
    }

    /// The run's latest figures (called about once a second from the coordinator's progress).
    package func update(_ progress: RunProgress) { state.update(progress) }
    /// The run's final figures: scrapes from now on see exactly the report's totals.
    package func finish(_ result: RunResult) { state.finish(result) }
    package func stop() async { await server.stop() }

    /// What a scrape of `accept` would get now (the tests' and the benchmark's way in, without a socket).
    func render(accept: String?) -> (format: PrometheusExposition.Format, text: String) { state.render(accept: accept) }
}

/// The latest snapshot and how to render it; shared by the run's thread (updates) and the server's loop (scrapes).
/// A snapshot is rendered at most once per format: scrapes between two progress reports get the same bytes, so the
/// cost (a few ms for a wide run: it reads every histogram's counts) is paid about once a second however many
/// scrapers there are.
final class MetricsState: Sendable {
    let exposition: PrometheusExposition
    /// The snapshot and its generation (bumped by every change).
    private let latest: Mutex<(snapshot: MetricsSnapshot, generation: UInt64)>
    /// The last rendering per format, with the generation it shows.
    private let rendered = Mutex<[PrometheusExposition.Format: (generation: UInt64, bytes: [UInt8])]>([:])

    init(exposition: PrometheusExposition, snapshot: MetricsSnapshot) {
        self.exposition = exposition
        latest = Mutex((snapshot, 0))
    }

    func update(_ progress: RunProgress) {
        latest.withLock { latest in
            // The final figures stay once they are in; a late progress must not replace them.
            guard !latest.snapshot.isFinished else { return }
            latest.generation &+= 1
            latest.snapshot.elapsedSeconds = progress.elapsed.seconds
            latest.snapshot.durationSeconds = progress.duration.seconds
            // While stopping the progress carries no scenarios: the last per-scenario figures stay until the result.
            guard !progress.isStopping else { return }
            latest.snapshot.scenarios = progress.scenarios.map {
                MetricsSnapshot.Scenario(name: $0.name, liveConnections: $0.liveConnections, targetConnections: $0.targetConnections,
                                         total: $0.total)
            }
            latest.snapshot.invariants = progress.invariants
        }
    }

    func finish(_ result: RunResult) {
        let scenarios = result.scenarios.map {
            MetricsSnapshot.Scenario(name: $0.scenario.name, liveConnections: 0, targetConnections: 0, total: $0.metrics)
        }
        let runOnly = Self.runOnlyCounters(total: result.total, scenarios: scenarios)
        latest.withLock { latest in
            latest.generation &+= 1
            latest.snapshot.elapsedSeconds = result.elapsed.seconds
            latest.snapshot.durationSeconds = result.profile.duration.seconds
            latest.snapshot.isFinished = true
            latest.snapshot.scenarios = scenarios
            latest.snapshot.runOnly = runOnly
            latest.snapshot.invariants = result.invariants
        }
    }

    /// The part of each run-wide counter that no scenario holds (the run total is the scenarios' sum but for
    /// counts made of the run as a whole, such as connections cancelled at the stop).
    static func runOnlyCounters(total: MetricSet, scenarios: [MetricsSnapshot.Scenario]) -> MetricSet {
        var runOnly = MetricSet()
        for (name, count) in total.counters {
            let held = scenarios.reduce(UInt64(0)) { saturatingSum($0, $1.total.counter(name)) }
            if count > held { runOnly.counters[name] = count - held }
        }
        return runOnly
    }

    func render(accept: String?) -> (format: PrometheusExposition.Format, text: String) {
        let (format, bytes) = renderBytes(accept: accept)
        return (format, String(decoding: bytes, as: UTF8.self))
    }

    private func renderBytes(accept: String?) -> (format: PrometheusExposition.Format, bytes: [UInt8]) {
        let format = Self.format(accepting: accept)
        let (snapshot, generation) = latest.withLock { $0 }
        if let cached = rendered.withLock({ $0[format] }), cached.generation == generation { return (format, cached.bytes) }
        let bytes = exposition.renderBytes(snapshot, format: format)
        rendered.withLock { $0[format] = (generation, bytes) }
        return (format, bytes)
    }

    func respond(to request: LiveRequest) -> LiveResponse {
        switch request.path {
        case "/metrics":
            let (format, bytes) = renderBytes(accept: request.accept)
            return .content(status: 200, contentType: format.contentType, body: bytes, headers: [("Vary", "Accept")])
        case "/":
            return .content(status: 200, contentType: "text/html; charset=utf-8", body: Array(Self.indexPage.utf8),
                            headers: [("Content-Security-Policy", "default-src 'none'")])
        default:
            return .content(status: 404, contentType: "text/plain; charset=utf-8", body: Array("not found: the metrics are at /metrics\n".utf8))
        }
    }

    private static let indexPage = """
        <!doctype html>
        <html><head><meta charset="utf-8"><title>wsload metrics</title></head>
        <body><p>wsload: the run's figures for Prometheus are at <a href="/metrics">/metrics</a>.</p></body></html>

        """

    /// OpenMetrics when `accept` asks for it (version 1.0.0 or unversioned) at least as much as for the text format;
    /// otherwise the text format. Malformed parts are ignored; no Accept at all is the text format.
    static func format(accepting accept: String?) -> PrometheusExposition.Format {
        guard let accept else { return .prometheus }
        var openMetrics = 0.0
        var text = 0.0
        for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmedOfWhitespace().lowercased() }
            guard let type = parts.first else { continue }
            var quality = 1.0
            var version: String?
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmedOfWhitespace() }
                guard pair.count == 2 else { continue }
                if pair[0] == "q" { quality = Double(pair[1]).map { min(max($0, 0), 1) } ?? 0 }
                if pair[0] == "version" { version = pair[1] }
            }
            switch type {
            case "application/openmetrics-text" where version == nil || version == "1.0.0":
                openMetrics = max(openMetrics, quality)
            case "text/plain" where version == nil || version == "0.0.4", "text/*", "*/*":
                text = max(text, quality)
            default:
                continue
            }
        }
        return openMetrics > 0 && openMetrics >= text ? .openMetrics : .prometheus
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    fileprivate func trimmedOfWhitespace() -> String {
        let isWhitespace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isWhitespace($0) }), let end = lastIndex(where: { !isWhitespace($0) }) else { return "" }
        return String(self[start...end])
    }
}

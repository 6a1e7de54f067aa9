import Glibc
import Histogram
import LoadEngine
import Profile
import Reporting

/// What one scrape of `/metrics` shows: the run's latest figures, per scenario.
package struct MetricsSnapshot: Sendable {
    /// One scenario's figures: the progress's own (name, live and target connections, cumulative totals).
    package typealias Scenario = ScenarioProgress

    package var profileName: String
    package var runID: String
    /// `i/n`, or empty when the run is not a shard.
    package var shard: String
    package var elapsedSeconds: Double = 0
    package var durationSeconds: Double = 0
    package var isFinished = false
    package var scenarios: [Scenario] = []
    /// Counters the run counts as a whole and no scenario holds (`ws.unfinished_at_stop`): exported without a
    /// scenario label, so that summing a family over its series gives the report's total.
    package var runOnly = MetricSet()
    package var invariants = InvariantReport()

    package init(profileName: String, runID: String, shard: String) {
        self.profileName = profileName
        self.runID = runID
        self.shard = shard
    }
}

/// The Prometheus text format 0.0.4 and OpenMetrics 1.0.0 exposition of a ``MetricsSnapshot``: pure, so its bytes
/// are tested exactly.
///
/// Names are `wsload_` + the catalogue's name with `.` → `_`: counters `_total`, latencies (µs) as histograms in
/// seconds (`_seconds`), throughput (KiB/s) in bytes per second (`_bytes_per_second`), families with their tag as a
/// label. Histogram buckets are log-spaced (``bucketsPerDoubling`` per doubling, 3 significant digits) and counted
/// from the HDR histogram's slots: a bucket holds the slots wholly at or below its bound, so its count is exact at
/// the HDR's resolution; `_sum` is the HDR's mean × count (the sum of the values taken as their slots' middles).
package struct PrometheusExposition: Sendable {
    /// Which of the two text formats.
    package enum Format: Sendable, Hashable {
        case prometheus
        case openMetrics

        /// The `Content-Type` of a scrape in this format.
        package var contentType: String {
            switch self {
            case .prometheus: "text/plain; version=0.0.4; charset=utf-8"
            case .openMetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8"
            }
        }
    }

    /// One bucket bound: its `le` text (seconds, bytes per second) and the largest histogram value (µs, KiB/s,
    /// whole units) at or below it.
    package struct Bound: Sendable, Hashable {
        package var label: String
        package var limit: UInt64
    }

    package let bucketsPerDoubling: Int
    /// From 50 µs to the first bound at or past 100 s.
    package let latencyBounds: [Bound]
    /// From 1 KiB/s to the first bound at or past 100 GiB/s.
    package let throughputBounds: [Bound]
    // The bounds as a scrape uses them: limits for counting, labels as bytes.
    private let latencyLimits: [UInt64]
    private let latencyLabels: [[UInt8]]
    private let throughputLimits: [UInt64]
    private let throughputLabels: [[UInt8]]

    /// - Parameter bucketsPerDoubling: 1...16 (the CLI checks it); clamped to that range.
    package init(bucketsPerDoubling: Int = 4) {
        let perDoubling = min(max(bucketsPerDoubling, 1), 16)
        self.bucketsPerDoubling = perDoubling
        latencyBounds = Self.bounds(from: 50, upTo: 100_000_000, perDoubling: perDoubling, labelMultiplier: 1, labelShift: -6)
        throughputBounds = Self.bounds(from: 1, upTo: 100 * 1024 * 1024, perDoubling: perDoubling, labelMultiplier: 1024,
                                       labelShift: 0)
        latencyLimits = latencyBounds.map(\.limit)
        latencyLabels = latencyBounds.map { Array($0.label.utf8) }
        throughputLimits = throughputBounds.map(\.limit)
        throughputLabels = throughputBounds.map { Array($0.label.utf8) }
    }

    /// The exposition of `snapshot` in `format` (OpenMetrics ends with `# EOF`).
    package func render(_ snapshot: MetricsSnapshot, format: Format) -> String {
        String(decoding: renderBytes(snapshot, format: format), as: UTF8.self)
    }

    /// ``render(_:format:)`` as the UTF-8 bytes a scrape sends.
    package func renderBytes(_ snapshot: MetricsSnapshot, format: Format) -> [UInt8] {
        var writer = ExpositionWriter(format: format)
        writer.reserve(snapshot)
        writeRun(snapshot, to: &writer)
        for metric in MetricCatalog.all {
            switch metric.kind {
            case .latency, .throughput:
                writeHistograms(metric, snapshot, to: &writer)
            case .counter:
                let series = snapshot.scenarios.compactMap { scenario in
                    scenario.total.counters[metric.name].map { ([("scenario", scenario.name)], $0) }
                } + (snapshot.runOnly.counters[metric.name].map { [([(String, String)](), $0)] } ?? [])
                writer.counter(ExpositionName.of(metric), help: metric.summary, series: series)
            case .closeCodes:
                writer.counter(ExpositionName.of(metric), help: metric.summary, series: snapshot.scenarios.flatMap { scenario in
                    scenario.total.disconnects.sorted { $0.key < $1.key }.map { ([("scenario", scenario.name), ("code", String($0.key))], $0.value) }
                })
            case .errors:
                writer.counter(ExpositionName.of(metric), help: metric.summary, series: snapshot.scenarios.flatMap { scenario in
                    scenario.total.errors.sorted { $0.key < $1.key }.map { ([("scenario", scenario.name), ("code", $0.key)], $0.value) }
                })
            }
        }
        for family in MetricCatalog.families { writeFamily(family, snapshot, to: &writer) }
        let invariants = snapshot.invariants
        let names = Set(invariants.checked.keys).union(invariants.violations.keys).sorted()
        writer.counter(ExpositionName.invariantChecks, help: "observations the correctness oracle checked, by invariant",
                       series: names.map { ([("invariant", $0)], invariants.checked[$0] ?? 0) })
        writer.counter(ExpositionName.invariantViolations, help: "observations that broke an invariant, by invariant",
                       series: names.map { ([("invariant", $0)], invariants.violations[$0] ?? 0) })
        if format == .openMetrics { writer.bytes.append(contentsOf: "# EOF\n".utf8) }
        return writer.bytes
    }

    private func writeRun(_ snapshot: MetricsSnapshot, to writer: inout ExpositionWriter) {
        writer.info(ExpositionName.runInfo, help: "the run: its profile, run id and shard (1)",
                    labels: [("profile", snapshot.profileName), ("run_id", snapshot.runID), ("shard", snapshot.shard)])
        writer.gauge(ExpositionName.runElapsed, help: "seconds since the run started", series: [([], snapshot.elapsedSeconds)])
        writer.gauge(ExpositionName.runDuration, help: "the profile's duration in seconds", series: [([], snapshot.durationSeconds)])
        writer.gauge(ExpositionName.runFinished, help: "1 once the run ended (the figures are the report's), else 0",
                     series: [([], snapshot.isFinished ? 1 : 0)])
        writer.gauge(ExpositionName.connections, help: "connections open now, by scenario",
                     series: snapshot.scenarios.map { ([("scenario", $0.name)], Double($0.liveConnections)) })
        writer.gauge(ExpositionName.connectionsTarget, help: "the connections the scenario's ramp asks for now",
                     series: snapshot.scenarios.map { ([("scenario", $0.name)], Double($0.targetConnections)) })
    }

    private func writeHistograms(_ metric: Metric, _ snapshot: MetricsSnapshot, to writer: inout ExpositionWriter) {
        let series = snapshot.scenarios.compactMap { scenario in
            scenario.total.histograms[metric.name].map { ([("scenario", scenario.name)], $0) }
        }
        writeHistogram(ExpositionName.of(metric), kind: metric.kind, help: metric.summary, series: series, to: &writer)
    }

    private func writeFamily(_ family: MetricFamily, _ snapshot: MetricsSnapshot, to writer: inout ExpositionWriter) {
        let name = ExpositionName.of(family)
        switch family.kind {
        case .latency, .throughput:
            let series = snapshot.scenarios.flatMap { scenario in
                scenario.total.histograms.compactMap { key, histogram in
                    family.tag(of: key).map { ([("scenario", scenario.name), (family.tag, String($0))], histogram) }
                }.sorted { $0.0[1].1 < $1.0[1].1 }
            }
            writeHistogram(name, kind: family.kind, help: family.summary, series: series, to: &writer)
        case .counter, .closeCodes, .errors:
            let series = snapshot.scenarios.flatMap { scenario in
                scenario.total.counters.compactMap { key, count in
                    family.tag(of: key).map { ([("scenario", scenario.name), (family.tag, String($0))], count) }
                }.sorted { $0.0[1].1 < $1.0[1].1 }
            }
            writer.counter(name, help: family.summary, series: series)
        }
    }

    private func writeHistogram(_ name: String, kind: Metric.Kind, help: String, series: [([(String, String)], Histogram)],
                                to writer: inout ExpositionWriter) {
        guard !series.isEmpty else { return }
        let isThroughput = kind == .throughput
        let limits = isThroughput ? throughputLimits : latencyLimits
        let labels = isThroughput ? throughputLabels : latencyLabels
        writer.family(name, type: "histogram", help: help)
        for (seriesLabels, histogram) in series {
            // µs to seconds (a division: an exact sum of whole µs gives the nearest seconds); KiB to bytes.
            let sum = isThroughput ? histogram.midpointSum * 1024 : histogram.midpointSum / 1e6
            writer.histogram(name, seriesLabels, bounds: labels, cumulative: histogram.cumulativeCounts(atOrBelow: limits),
                             count: histogram.totalCount, sum: sum)
        }
    }

    // MARK: Bounds

    /// Log-spaced bounds `base · 2^(i/perDoubling)` in histogram units, rounded to 3 significant digits, up to the
    /// first at or past `top`; labels are the bound × `labelMultiplier` × 10^`labelShift`, written exactly.
    static func bounds(from base: Double, upTo top: Double, perDoubling: Int, labelMultiplier: Int, labelShift: Int) -> [Bound] {
        var bounds: [Bound] = []
        var step = 0
        while true {
            let (significand, exponent) = threeDigits(base * pow(2, Double(step) / Double(perDoubling)))
            let power = tenToThe(abs(exponent))
            let limit = exponent >= 0 ? UInt64(significand) * UInt64(power) : UInt64(significand) / UInt64(power)
            let label = decimalText(significand * labelMultiplier, exponent: exponent + labelShift)
            if bounds.last?.label != label { bounds.append(Bound(label: label, limit: limit)) }
            if Double(significand) * (exponent >= 0 ? Double(power) : 1 / Double(power)) >= top { return bounds }
            step += 1
        }
    }

    /// `value` as `significand × 10^exponent` with a significand of 100...999.
    static func threeDigits(_ value: Double) -> (significand: Int, exponent: Int) {
        var exponent = Int(floor(log10(value))) - 2
        func scaled(_ exponent: Int) -> Double {
            exponent >= 0 ? value / Double(tenToThe(exponent)) : value * Double(tenToThe(-exponent))
        }
        var significand = scaled(exponent).rounded()
        // log10 can land a hair off at exact powers of ten.
        if significand >= 1000 {
            exponent += 1
            significand = scaled(exponent).rounded()
        } else if significand < 100 {
            exponent -= 1
            significand = scaled(exponent).rounded()
        }
        return (Int(significand), exponent)
    }

    private static func tenToThe(_ exponent: Int) -> Int {
        (0..<exponent).reduce(1) { value, _ in value * 10 }
    }

    /// `significand × 10^exponent` in plain decimal, without trailing zeros after the point: `0.0000595`, `1218.56`.
    static func decimalText(_ significand: Int, exponent: Int) -> String {
        var digits = String(significand)
        var exponent = exponent
        while exponent < 0, digits.count > 1, digits.hasSuffix("0") {
            digits.removeLast()
            exponent += 1
        }
        if exponent >= 0 { return digits + String(repeating: "0", count: exponent) }
        let places = -exponent
        if digits.count > places { return digits.prefix(digits.count - places) + "." + digits.suffix(places) }
        return "0." + String(repeating: "0", count: places - digits.count) + digits
    }
}

/// The exposition's own names, declared once; metric names come from the catalogue through ``of(_:)``.
enum ExpositionName {
    static let prefix = "wsload_"
    static let runInfo = "wsload_run_info"
    static let runElapsed = "wsload_run_elapsed_seconds"
    static let runDuration = "wsload_run_duration_seconds"
    static let runFinished = "wsload_run_finished"
    static let connections = "wsload_connections"
    static let connectionsTarget = "wsload_connections_target"
    static let invariantChecks = "wsload_invariant_checks_total"
    static let invariantViolations = "wsload_invariant_violations_total"

    /// `ws.message_rtt` → `wsload_ws_message_rtt_seconds`; counters end in `_total`.
    static func of(_ metric: Metric) -> String { name(metric.name, kind: metric.kind) }

    /// `flow.step.<step>` → `wsload_flow_step_seconds`, `http.status.<code>` → `wsload_http_status_total`.
    static func of(_ family: MetricFamily) -> String { name(family.stem, kind: family.kind) }

    private static func name(_ catalogueName: String, kind: Metric.Kind) -> String {
        let base = prefix + catalogueName.replacingDots()
        switch kind {
        case .latency: return base + "_seconds"
        case .throughput: return base + "_bytes_per_second"
        case .counter, .closeCodes, .errors: return base + "_total"
        }
    }
}

extension String {
    fileprivate func replacingDots() -> String { String(map { $0 == "." ? "_" : $0 }) }
}

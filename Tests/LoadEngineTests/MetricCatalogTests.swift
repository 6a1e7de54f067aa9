import EmbeddedServer
import Foundation
import JSON
import LoadEngine
import Profile
import Reporting
import Runtime
import Testing
import TestSupport

private let repositoryRoot = SourceTree.root

/// The report keys of every `metrics` object in a report: the total, each scenario's, each interval's.
private func metricObjects(_ report: JSONValue) -> [(place: String, metrics: JSONObject)] {
    var objects: [(String, JSONObject)] = []
    if let total = report["total"]?["metrics"]?.objectValue { objects.append(("total", total)) }
    for (index, scenario) in (report["scenarios"]?.arrayValue ?? []).enumerated() {
        if let metrics = scenario["metrics"]?.objectValue { objects.append(("scenarios[\(index)]", metrics)) }
    }
    for (index, interval) in (report["intervals"]?.arrayValue ?? []).enumerated() {
        if let metrics = interval["metrics"]?.objectValue { objects.append(("intervals[\(index)]", metrics)) }
    }
    return objects
}

@Suite("The metric catalogue", .timeLimit(.minutes(3)))
struct MetricCatalogTests {
    @Test("names are unique, and each kind has its unit and report shape")
    func wellFormed() {
        #expect(Set(MetricCatalog.all.map(\.name)).count == MetricCatalog.all.count)
        for metric in MetricCatalog.all {
            #expect(!metric.summary.isEmpty, "\(metric)")
            #expect(metric.condition.map { !$0.isEmpty } ?? true, "\(metric)")
            switch metric.kind {
            case .latency: #expect(metric.unit == .microseconds, "\(metric)")
            case .throughput: #expect(metric.unit == .kibibytesPerSecond, "\(metric)")
            case .counter, .closeCodes, .errors: #expect(metric.unit == .count || metric.unit == .bytes, "\(metric)")
            }
            #expect(MetricCatalog.metric(named: metric.name) == metric)
            #expect(MetricCatalog.family(of: metric.name) == nil, "\(metric) is also a family member")
        }
        #expect(MetricCatalog.family(of: MetricFamily.httpStatus.name(404)) == .httpStatus)
        #expect(MetricFamily.httpStatus.tag(of: MetricFamily.httpStatus.name(404)) == "404")
        #expect(MetricCatalog.family(of: MetricFamily.httpStatus.prefix) == nil, "a family member has a tag")
        #expect(MetricCatalog.latencies.allSatisfy { $0.kind == .latency })
        #expect(!MetricCatalog.isCatalogued("ws.not_a_metric"))
    }

    @Test("a run exercising every area writes only catalogued names, every unconditional metric of each scenario, and each conditional one it provoked")
    func runCoverage() async throws {
        // The server ends every session after a second, so clients with a reconnect policy reconnect; downloads
        // are cut once and resumed. The run stops as soon as the total holds everything provoked (or at 60 s).
        let provoked: [Metric] = [
            .connect, .upgrade, .messageRoundTrip, .pingRoundTrip, .reconnectRecovery, .messageGap, .timeToFirstByte,
            .transferDuration, .throughput, .connectAttempts, .connectionsOpened, .messagesSent, .messagesReceived,
            .bytesSent, .bytesReceived, .reconnects, .messagesScheduled, .transfersStarted, .transfersCompleted,
            .transferResumes, .transferBytesReceived, .transferBytesSent,
        ]
        let result = try await withServer(ServerConfiguration(chaos: ChaosOptions(closeAfter: .seconds(1)))) { server in
            let stop = GracefulShutdown()
            return try await LoadRun(profile: try profile("""
                {"version": 1, "name": "catalogue", "target": "\(server.url)", "duration": "60s", "gracefulStop": "10s",
                 "seed": 9, "loops": 1,
                 "scenarios": [
                   {"name": "echo", "pattern": "echo", "connections": 2, "pingInterval": "100ms",
                    "schedule": {"model": "closed", "thinkTime": "20ms"},
                    "reconnect": {"initial": "50ms", "max": "200ms", "jitter": "equal"}},
                   {"name": "open", "pattern": "echo", "connections": 1, "schedule": {"model": "open", "rate": 20},
                    "reconnect": {"initial": "50ms", "max": "200ms", "jitter": "equal"}},
                   {"name": "push", "pattern": "receive", "connections": 1, "path": "/push?interval=20ms&size=100",
                    "reconnect": {"initial": "50ms", "max": "200ms", "jitter": "equal"}},
                   {"name": "dl", "kind": "download", "connections": 1, "transfer": {"size": "256KiB", "interrupt": 1, "repeats": 2}},
                   {"name": "up", "kind": "upload", "connections": 1, "transfer": {"size": "64KiB", "repeats": 2}}]}
                """), shutdown: stop, onProgress: { progress in
                let total = progress.total
                let hasAll = provoked.allSatisfy { total.count(of: $0) > 0 }
                    && total.counter(.transfersCompleted) >= 4
                    && total.counters.keys.contains { MetricFamily.httpStatus.tag(of: $0) != nil }
                if !progress.isStopping && hasAll { stop.request() }
            }).run()
        }
        let report = RunReport.json(result, toolVersion: "t", commit: nil)

        for (place, metrics) in metricObjects(report) {
            for (name, _) in metrics.members {
                #expect(MetricCatalog.isCatalogued(name), "\(place): \(name) is not in the catalogue")
            }
        }
        let total = try #require(report["total"]?["metrics"]?.objectValue)
        for metric in provoked {
            #expect(total[metric.name] != nil, "the run provoked \(metric) but the report has none")
        }
        #expect(total[Metric.stopDuration.name] != nil, "the run stopped clients still running")
        // Every metric the run did not show is documented as conditional.
        for metric in MetricCatalog.all where total[metric.name] == nil {
            #expect(metric.condition != nil, "\(metric) is unconditional but missing from the report")
        }
        #expect(total.keys.contains { MetricFamily.httpStatus.tag(of: $0) != nil })

        // Each scenario writes every unconditional metric of its area, in the shape its kind has.
        let scenarios = try #require(report["scenarios"]?.arrayValue)
        for scenario in scenarios {
            let name = scenario["name"]?.stringValue ?? "?"
            let metrics = try #require(scenario["metrics"]?.objectValue)
            let area: Metric.Area = scenario["transfer"] == nil ? .websocket : .transfer
            for metric in MetricCatalog.all where metric.condition == nil && (metric.area == area || metric.area == .run) {
                #expect(metrics[metric.name] != nil, "scenario \(name) has no \(metric)")
            }
            for family in MetricCatalog.families where family.condition == nil && family.area == area {
                #expect(metrics.keys.contains { family.tag(of: $0) != nil }, "scenario \(name) has no \(family.documentedName)")
            }
            for (key, entry) in metrics.members {
                guard let metric = MetricCatalog.metric(named: key) else { continue }
                let fields = Set(entry.objectValue?.keys ?? [String]())
                switch metric.kind {
                case .latency, .throughput:
                    #expect(fields.isSuperset(of: ["unit", "count", "p99", "histogram"] as Set<String>), "\(name): \(key)")
                    #expect(entry["unit"]?.stringValue == metric.unit.rawValue, "\(name): \(key)")
                case .counter: #expect(fields == Set(["count", "perSecond"]), "\(name): \(key)")
                case .closeCodes: #expect(fields == Set(["count", "byCode"]), "\(name): \(key)")
                case .errors: #expect(fields == Set(["count", "perSecond", "rate", "byCode"]), "\(name): \(key)")
                }
            }
        }
        #expect(result.invariantsHeld, "\(result.invariants)")
    }

    @Test("thresholds accept every thresholdable metric and refuse the others with the threshold's JSON path")
    func thresholds() throws {
        func decode(_ expressions: [String]) -> [String] {
            let list = expressions.map { "\"\($0)\"" }.joined(separator: ", ")
            let text = """
                {"version": 1, "name": "t", "target": "embedded", "duration": "5s",
                 "scenarios": [{"name": "s", "pattern": "echo", "connections": 1}], "thresholds": [\(list)]}
                """
            do {
                _ = try ProfileDecoder.decode(Array(text.utf8))
                return []
            } catch {
                return error.problems.map(\.description)
            }
        }
        var accepted: [String] = []
        for metric in MetricCatalog.thresholdable {
            accepted.append("\(metric.name) count >= 0")
            accepted.append("\(metric.name){scenario=s} count >= 0")
            switch metric.kind {
            case .latency: accepted.append("\(metric.name) p99 < 50ms")
            case .throughput: accepted.append("\(metric.name) p10 > 1MiB/s")
            case .counter, .closeCodes: accepted.append("\(metric.name) per_second > 1")
            case .errors: accepted.append("\(metric.name) rate < 0.1%")
            }
        }
        #expect(decode(accepted) == [])
        let parsed = accepted.compactMap { try? Threshold.parse($0).get() }  // every one parsed: checked just above
        #expect(parsed.count == accepted.count)
        #expect(Set(parsed.map(\.metric)) == Set(MetricCatalog.thresholdable))

        let refusedMetrics = MetricCatalog.all.filter { !$0.isThresholdable }
        #expect(refusedMetrics == [.unfinishedAtStop])
        let refused = refusedMetrics.map { "\($0.name) count < 1" } + [MetricFamily.httpStatus.name(500) + " count < 1", "ws.bogus count < 1"]
        let problems = decode(refused)
        try #require(problems.count == refused.count, "\(problems)")
        #expect(problems[0].hasPrefix("thresholds[0]: ws.unfinished_at_stop cannot be a threshold: "), "\(problems[0])")
        #expect(problems[1].hasPrefix("thresholds[1]: http.status.500 cannot be a threshold: "), "\(problems[1])")
        #expect(problems[2].hasPrefix("thresholds[2]: unknown metric \"ws.bogus\""), "\(problems[2])")
        // Statistics a kind does not have are refused too.
        #expect(decode(["\(Metric.messagesSent.name) p99 < 5ms", "\(Metric.messageRoundTrip.name) rate < 1%"]).count == 2)
    }

    @Test("docs/REPORT.md's metric list is the catalogue")
    func documented() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/REPORT.md"), encoding: .utf8)
        let start = try #require(text.range(of: "\n## Metrics\n"))
        let end = try #require(text.range(of: "\n## ", range: start.upperBound..<text.endIndex))
        let section = text[start.upperBound..<end.lowerBound]
        // Every `ws.…`, `http.…` and `errors` the section names in backticks, outside its JSON examples.
        var isInExample = false
        var prose = ""
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { isInExample.toggle() } else if !isInExample { prose += line + "\n" }
        }
        let quoted = try NSRegularExpression(pattern: "`([a-z0-9_.<>]+)`")
        var documented: Set<String> = []
        for match in quoted.matches(in: prose, range: NSRange(prose.startIndex..., in: prose)) {
            guard let range = Range(match.range(at: 1), in: prose) else { continue }
            let word = String(prose[range])
            if word.hasPrefix("ws.") || word.hasPrefix("http.") || word.hasPrefix("flow.") || word == Metric.errors.name {
                documented.insert(word)
            }
        }
        let catalogued = Set(MetricCatalog.all.map(\.name) + MetricCatalog.families.map(\.documentedName))
        #expect(documented.subtracting(catalogued).sorted() == [], "documented but not in the catalogue")
        #expect(catalogued.subtracting(documented).sorted() == [], "in the catalogue but not documented")
        // The engine's own error codes are listed where the report's `errors` are described.
        for code in EngineErrorCode.allCases {
            #expect(section.contains("`\(code.rawValue)`"), "\(code.rawValue) is not documented")
        }
    }
}

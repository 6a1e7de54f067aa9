import Crypto
import Foundation
import Glibc
import Histogram
import JSON
import LoadEngine
import Profile
import Reporting
import Testing
import TestSupport
import WSLoadCLI

/// Reports with chosen figures, so `merge` and `compare` can be tested on known inputs without depending on
/// the box's speed. A minimal document goes through the real reader (`LoadedReport`) and is written again
/// by the real writer (`RunReport.json`), so every report here has exactly the shape a run writes.
enum SyntheticReport {
    /// The profile every synthetic report ran (unless told otherwise): 10 s, one echo scenario.
    static let profileText = """
        {"version": 1, "name": "synthetic", "target": "embedded", "duration": "10s", "seed": 1,
         "scenarios": [{"name": "s", "pattern": "echo", "connections": 10}]}
        """

    /// A report whose total is `total` (or the sum of `intervals`), with `intervals` as its series (each one
    /// second long; none makes a report without a series), read back as `merge` and `compare` read files.
    static func loaded(
        total: MetricSet? = nil, intervals: [MetricSet] = [], shard: Shard? = nil, profile: String = profileText,
        source: String = "synthetic.json"
    ) throws -> LoadedReport {
        var sum = MetricSet()
        for interval in intervals { try sum.add(interval) }
        let metrics = total ?? sum
        let seconds = 10.0
        let operations = metrics.counter("ws.connect_attempts") + metrics.counter("ws.messages_sent")
        // A shard's seed and connections as its run derives them from the profile's (merge checks both).
        var seed: UInt64 = 1
        var scenario: JSONObject = ["name": "s", "metrics": metrics.json(seconds: seconds, operations: operations)]
        if let shard, let decoded = try? ProfileDecoder.decode(Array(profile.utf8)) {
            let slice = shard.slice(decoded, seed: seed)
            seed = slice.seed
            if let connections = slice.profile.scenarios.first(where: { $0.name == "s" })?.websocket.connections {
                scenario["connections"] = JSONValue(connections)
            }
        }
        var run: JSONObject = [
            "start": "2026-01-01T00:00:00.000Z", "end": "2026-01-01T00:00:10.000Z", "elapsedSeconds": .number(seconds),
            "seed": .string(String(seed)),
        ]
        if let shard { run["shard"] = .string(shard.description) }
        let document: JSONValue = [
            "schema": .string(RunReport.schema),
            "tool": ["version": "test"],
            "profile": ["digest": "sha256:unchecked", "document": try JSONValue(parsing: Array(profile.utf8))],
            "run": .object(run),
            "scenarios": [.object(scenario)],
            "total": ["metrics": metrics.json(seconds: seconds, operations: operations)],
            "intervals": .array(intervals.enumerated().map { index, interval in
                [
                    "start": .number(Double(index)), "end": .number(Double(index + 1)), "connections": 10,
                    "metrics": interval.json(seconds: 1, operations: 0),
                ]
            }),
        ]
        let first = try LoadedReport(document: document, source: source)
        // Written by the real writer (which computes the profile's digest) and read back again.
        return try LoadedReport(document: RunReport.json(first.result, toolVersion: "test", commit: nil), source: source)
    }

    /// Writes `report` where `compare`, `merge` and `report` can read it.
    static func write(_ report: LoadedReport, to path: String) throws {
        let text = RunReport.json(report.result, toolVersion: "test", commit: nil).formatted() + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// `count` message round trips spread log-normally (σ = 0.3) around `median` µs, with as many messages
    /// sent and received.
    static func echoMetrics(median: Double, count: Int, random: inout SeededRandomNumberGenerator) -> MetricSet {
        var histogram = Histogram()
        for _ in 0..<count {
            // Box–Muller: a standard normal from two uniforms.
            let u1 = Double(random.next() >> 11) / Double(1 << 53) + 1e-12, u2 = Double(random.next() >> 11) / Double(1 << 53)
            let normal = (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
            histogram.record(UInt64(max(1, median * exp(0.3 * normal))))
        }
        var metrics = MetricSet()
        metrics.histograms["ws.message_rtt"] = histogram
        metrics.counters["ws.messages_sent"] = UInt64(count)
        metrics.counters["ws.messages_received"] = UInt64(count)
        return metrics
    }

    /// A single run's interval series: `intervals` one-second intervals of `perInterval` echoes each, every
    /// interval's median `median` moved by a few percent (the within-run variation the block bootstrap weighs).
    static func series(median: Double, intervals: Int = 10, perInterval: Int = 400, seed: UInt64) -> [MetricSet] {
        var random = SeededRandomNumberGenerator(seed: seed)
        return (0..<intervals).map { _ in
            let drift = 1 + (Double(random.next() % 1000) / 1000 - 0.5) * 0.1
            return echoMetrics(median: median * drift, count: perInterval, random: &random)
        }
    }
}

/// A scratch directory, removed by the caller.
func scratchDirectory(_ name: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("wsload-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Runs the command line in process, capturing what it writes.
func wsload(_ arguments: [String]) async -> (code: ExitCode, output: String, error: String) {
    let captured = Captured()
    let code = await WSLoad.main(arguments: arguments, output: CommandOutput(
        writeOutput: { text in captured.append(output: text) }, writeError: { text in captured.append(error: text) }))
    return (code, captured.output, captured.error)
}

/// The built `wsload` executable (beside the test bundle) run as a process, under `timeout`: for commands
/// that compute for a while (`compare`'s bootstraps), which in process would hold one of the cooperative
/// pool's threads that other suites' tasks need.
func wsloadProcess(_ arguments: [String]) async throws -> (code: ExitCode, output: String, error: String) {
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("wsload").path
    let result = try await offPool { try TestProcess.runWithStatus(["timeout", "-k", "5", "120", executable] + arguments) }
    return (ExitCode(rawValue: result.status), result.output, result.errors)
}

/// Runs `body` on a thread of its own (not the cooperative pool) and returns what it returned.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

private final class Captured: @unchecked Sendable {
    private let lock = NSLock()
    private var outputText = ""
    private var errorText = ""
    var output: String { lock.withLock { outputText } }
    var error: String { lock.withLock { errorText } }
    func append(output text: String) { lock.withLock { outputText += text } }
    func append(error text: String) { lock.withLock { errorText += text } }
}

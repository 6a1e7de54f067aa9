import Foundation
import JSON
import Profile

/// A report read back from its JSON: enough to merge, compare and re-render it.
package struct LoadedReport: Sendable {
    /// Where it came from (a path), for messages.
    package var source: String
    package var result: RunResult
    /// `sha256:…` of the profile document.
    package var profileDigest: String
    package var toolVersion: String
    package var commit: String?
    package var document: JSONValue

    /// The largest report read (bounds memory on untrusted input; a 2-hour run at 5-second intervals is
    /// a few MB).
    package static let maximumSize = 512 << 20

    /// Reads a report file. - Throws: ``ReportFormatError`` with the JSON path (or `file`) at fault.
    package init(contentsOf path: String) throws(ReportFormatError) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ReportFormatError(path: path, reason: FileManager.default.fileExists(atPath: path) ? "cannot be read" : "no such file")
        }
        defer { try? handle.close() }  // read-only: closing cannot lose data
        let data: Data
        do {
            data = try handle.read(upToCount: Self.maximumSize + 1) ?? Data()
        } catch {
            throw ReportFormatError(path: path, reason: "cannot be read (\(error.localizedDescription))")
        }
        guard data.count <= Self.maximumSize else {
            throw ReportFormatError(path: path, reason: "larger than \(Self.maximumSize >> 20) MiB")
        }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: Array(data))
        } catch {
            throw ReportFormatError(path: path, reason: "not valid JSON: \(error)")
        }
        try self.init(document: document, source: path)
    }

    package init(document: JSONValue, source: String) throws(ReportFormatError) {
        let reader = FieldReader(source: source)
        guard let schema = document["schema"]?.stringValue else {
            throw reader.error("schema", "missing: is this a wsload report?")
        }
        guard schema == RunReport.schema else {
            throw reader.error("schema", "\"\(schema)\" is not \(RunReport.schema), the report format this build reads")
        }
        self.source = source
        self.document = document
        toolVersion = try reader.string(document, "tool.version")
        commit = document["tool"]?["commit"]?.stringValue
        profileDigest = try reader.string(document, "profile.digest")
        let profileDocument = try reader.value(document, "profile.document")
        var profile: Profile
        do {
            profile = try ProfileDecoder.decode(Array(profileDocument.formatted(pretty: false).utf8))
        } catch {
            throw reader.error("profile.document", "not a valid profile: \(error.problems.first?.description ?? "")")
        }
        let run = try reader.value(document, "run")
        guard let started = parseTimestamp(try reader.string(run, "start", at: "run")),
            let ended = parseTimestamp(try reader.string(run, "end", at: "run"))
        else { throw reader.error("run.start", "not an ISO 8601 time") }
        let elapsed = try reader.number(run, "elapsedSeconds", at: "run")
        guard let seed = UInt64(try reader.string(run, "seed", at: "run")) else { throw reader.error("run.seed", "not a seed") }
        var shard: Shard?
        if let text = run["shard"]?.stringValue {
            guard let parsed = Shard(parsing: text) else { throw reader.error("run.shard", "\"\(text)\" is not i/n") }
            shard = parsed
        }
        // The profile as this process ran it: a shard's scenarios hold its share of the connections.
        let scenarioList = try reader.array(document, "scenarios")
        var scenarios: [RunResult.ScenarioResult] = []
        for (index, entry) in scenarioList.enumerated() {
            let path = "scenarios[\(index)]"
            let name = try reader.string(entry, "name", at: path)
            guard let position = profile.scenarios.firstIndex(where: { $0.name == name }) else {
                throw reader.error(path + ".name", "\"\(name)\" is not a scenario of the embedded profile")
            }
            if let connections = entry["connections"]?.integerValue {
                profile.scenarios[position].websocket.connections = connections
            }
            let metrics = try reader.metrics(try reader.value(entry, "metrics", at: path), at: path + ".metrics")
            scenarios.append(.init(scenario: profile.scenarios[position], metrics: metrics))
        }
        let total = try reader.metrics(try reader.value(document, "total.metrics"), at: "total.metrics")
        var intervals: [RunResult.Interval] = []
        for (index, entry) in try reader.array(document, "intervals").enumerated() {
            let path = "intervals[\(index)]"
            intervals.append(.init(
                start: .milliseconds(Int64((try reader.number(entry, "start", at: path) * 1000).rounded())),
                end: .milliseconds(Int64((try reader.number(entry, "end", at: path) * 1000).rounded())),
                liveConnections: entry["connections"]?.integerValue ?? 0,
                metrics: try reader.metrics(try reader.value(entry, "metrics", at: path), at: path + ".metrics")))
        }
        var invariants = InvariantReport()
        if let json = document["invariants"] {
            do {
                invariants = try InvariantReport(json: json, path: "invariants")
            } catch {
                throw reader.error(error.path, error.reason)
            }
        }
        // Optional extras: read when well-formed (they do not change any figure a merge computes).
        var chaos: [RunResult.ChaosRecord] = []
        for entry in document["chaos"]?.arrayValue ?? [] {
            guard let at = entry["at"]?.numberValue, let firedAt = entry["firedAt"]?.numberValue,
                let action = entry["action"]?.stringValue, let affected = entry["affected"]?.integerValue
            else { continue }
            chaos.append(.init(at: .milliseconds(Int64((at * 1000).rounded())),
                               firedAt: .milliseconds(Int64((firedAt * 1000).rounded())), action: action, affected: affected))
        }
        var reconnectStorm: RunResult.ReconnectStorm?
        if let storm = run["reconnectStorm"], let reconnects = storm["peakReconnectsPer100ms"]?.integerValue,
            let drops = storm["peakDropsPer100ms"]?.integerValue
        {
            reconnectStorm = .init(peakReconnectsPer100ms: UInt64(reconnects), peakDropsPer100ms: UInt64(drops))
        }
        result = RunResult(
            profile: profile, seed: seed, loops: document["host"]?["loops"]?.integerValue ?? 0, startedAt: started,
            endedAt: ended, elapsed: .milliseconds(Int64((elapsed * 1000).rounded())),
            interruptedBy: run["interruptedBy"]?.stringValue, abortedBy: run["abortedBy"]?.stringValue,
            scenarios: scenarios, total: total, intervals: intervals,
            unfinishedConnections: run["unfinishedConnections"]?.integerValue ?? 0,
            liveHandlesAfterStop: run["liveHandlesAfterStop"]?.integerValue ?? 0,
            waitingTasksAfterStop: run["waitingTasksAfterStop"]?.integerValue ?? 0, shard: shard,
            mergedFrom: run["mergedFrom"]?.arrayValue?.compactMap(\.stringValue) ?? [], invariants: invariants,
            chaos: chaos, reconnectStorm: reconnectStorm)
        if run["incomplete"]?.boolValue == true { result.recoveredFrom = run["recoveredFrom"]?.stringValue ?? "a run journal" }
    }
}

private func parseTimestamp(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)
}

/// Reads fields by dotted path and fails with the path that is missing or of the wrong kind.
private struct FieldReader {
    let source: String

    func error(_ path: String, _ reason: String) -> ReportFormatError {
        ReportFormatError(path: "\(source): \(path)", reason: reason)
    }

    func value(_ root: JSONValue, _ path: String, at prefix: String? = nil) throws(ReportFormatError) -> JSONValue {
        var current = root
        for key in path.split(separator: ".") {
            guard let next = current[String(key)] else {
                throw error((prefix.map { $0 + "." } ?? "") + path, "missing")
            }
            current = next
        }
        return current
    }

    func string(_ root: JSONValue, _ path: String, at prefix: String? = nil) throws(ReportFormatError) -> String {
        guard let text = try value(root, path, at: prefix).stringValue else {
            throw error((prefix.map { $0 + "." } ?? "") + path, "expected a string")
        }
        return text
    }

    func number(_ root: JSONValue, _ path: String, at prefix: String? = nil) throws(ReportFormatError) -> Double {
        guard let number = try value(root, path, at: prefix).numberValue else {
            throw error((prefix.map { $0 + "." } ?? "") + path, "expected a number")
        }
        return number
    }

    func array(_ root: JSONValue, _ path: String) throws(ReportFormatError) -> [JSONValue] {
        guard let elements = try value(root, path).arrayValue else { throw error(path, "expected an array") }
        return elements
    }

    func metrics(_ value: JSONValue, at path: String) throws(ReportFormatError) -> MetricSet {
        do {
            return try MetricSet(json: value, path: path)
        } catch {
            throw ReportFormatError(path: "\(source): \(error.path)", reason: error.reason)
        }
    }
}

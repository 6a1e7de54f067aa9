import Crypto
import FileInput
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

    /// Reads a report file with a decode budget of its own (a command that reads one file).
    /// - Throws: ``ReportFormatError`` with the JSON path (or `file`) at fault.
    package init(contentsOf path: String) throws(ReportFormatError) {
        var budget = HistogramDecodeBudget()
        try self.init(contentsOf: path, budget: &budget)
    }

    /// Reads a report file, taking its histograms from `budget`: a command that reads several files passes one
    /// budget to every read, so many crafted files cannot add up to more than one budget's memory.
    /// - Throws: ``ReportFormatError`` with the JSON path (or `file`) at fault.
    package init(contentsOf path: String, budget: inout HistogramDecodeBudget) throws(ReportFormatError) {
        let bytes: [UInt8]
        do throws(UntrustedFile.Failure) {
            bytes = try UntrustedFile.read(path, cap: Self.maximumSize)
        } catch {
            // Too large is bad content; anything else (missing, a FIFO, a directory) is an unreadable file.
            throw ReportFormatError(path: path, reason: error.isTooLarge ? "larger than \(Self.maximumSize >> 20) MiB" : error.reason,
                                    isUnreadable: !error.isTooLarge)
        }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes)
        } catch {
            throw ReportFormatError(path: path, reason: "not valid JSON: \(error)")
        }
        try self.init(document: document, source: path, budget: &budget)
    }

    /// Reads a parsed report with a decode budget of its own.
    package init(document: JSONValue, source: String) throws(ReportFormatError) {
        var budget = HistogramDecodeBudget()
        try self.init(document: document, source: source, budget: &budget)
    }

    /// Reads a parsed report, taking its histograms' counts from `budget` before they are allocated.
    package init(document: JSONValue, source: String, budget: inout HistogramDecodeBudget) throws(ReportFormatError) {
        var reader = FieldReader(source: source, budget: budget)
        // What this report spent stays spent, whether it is read or refused.
        defer { budget = reader.budget }
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
        let elapsed = try reader.duration(try reader.number(run, "elapsedSeconds", at: "run"), at: "run.elapsedSeconds")
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
            if let connections = try reader.optionalCount(entry, "connections", at: path) {
                profile.scenarios[position].websocket.connections = connections
            }
            let metrics = try reader.metrics(try reader.value(entry, "metrics", at: path), at: path + ".metrics")
            scenarios.append(.init(scenario: profile.scenarios[position], metrics: metrics))
        }
        let total = try reader.metrics(try reader.value(document, "total.metrics"), at: "total.metrics")
        var intervals: [RunResult.Interval] = []
        for (index, entry) in try reader.array(document, "intervals").enumerated() {
            // Kept at rest: each blob's layout is checked (and charged to the budget), its counts decoded only when
            // the interval is used (HTML, --hlog, merge, compare).
            let path = "intervals[\(index)]"
            let start = try reader.duration(try reader.number(entry, "start", at: path), at: path + ".start")
            let end = try reader.duration(try reader.number(entry, "end", at: path), at: path + ".end")
            let live = try reader.optionalCount(entry, "connections", at: path) ?? 0
            let (counts, histograms) = try reader.intervalMetrics(try reader.value(entry, "metrics", at: path), at: path + ".metrics")
            intervals.append(.init(start: start, end: end, liveConnections: live, counts: counts, compressed: histograms,
                                   origin: "\(source): \(path)"))
        }
        let intervalLog = try reader.intervalSeries(document["intervalSeries"], entries: intervals.count)
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
        // Well-formed but out of range (NaN, negative, 1e300 seconds) is refused like any other bad number.
        for (index, entry) in (document["chaos"]?.arrayValue ?? []).enumerated() {
            guard let at = entry["at"]?.numberValue, let firedAt = entry["firedAt"]?.numberValue,
                let action = entry["action"]?.stringValue, entry["affected"]?.integerValue != nil
            else { continue }
            let path = "chaos[\(index)]"
            chaos.append(.init(
                at: try reader.duration(at, at: path + ".at"), firedAt: try reader.duration(firedAt, at: path + ".firedAt"),
                action: action, affected: try reader.optionalCount(entry, "affected", at: path) ?? 0))
        }
        var reconnectStorm: RunResult.ReconnectStorm?
        if let storm = run["reconnectStorm"], storm["peakReconnectsPer100ms"]?.integerValue != nil,
            storm["peakDropsPer100ms"]?.integerValue != nil
        {
            let path = "run.reconnectStorm"
            let reconnects = try reader.optionalCount(storm, "peakReconnectsPer100ms", at: path) ?? 0
            let drops = try reader.optionalCount(storm, "peakDropsPer100ms", at: path) ?? 0
            reconnectStorm = .init(peakReconnectsPer100ms: UInt64(reconnects), peakDropsPer100ms: UInt64(drops))
        }
        let loops = try reader.optionalCount(document["host"] ?? .null, "loops", at: "host") ?? 0
        let runID = try reader.optionalRunID(run)
        let (scheduledStart, startSkew) = try Self.start(in: run, source: source)
        var mergedRunIDs: [String] = []
        for (index, id) in (run["mergedRunIds"]?.arrayValue ?? []).enumerated() {
            guard let text = id.stringValue, !text.isEmpty, text.utf8.count <= 100 else {
                throw reader.error("run.mergedRunIds[\(index)]", "expected a run id")
            }
            mergedRunIDs.append(text)
        }
        result = RunResult(
            profile: profile, seed: seed, loops: loops, startedAt: started, endedAt: ended, elapsed: elapsed,
            interruptedBy: run["interruptedBy"]?.stringValue, abortedBy: run["abortedBy"]?.stringValue,
            scenarios: scenarios, total: total, intervals: intervals, intervalLog: intervalLog,
            unfinishedConnections: try reader.optionalCount(run, "unfinishedConnections", at: "run") ?? 0,
            liveHandlesAfterStop: try reader.optionalCount(run, "liveHandlesAfterStop", at: "run") ?? 0,
            waitingTasksAfterStop: try reader.optionalCount(run, "waitingTasksAfterStop", at: "run") ?? 0, shard: shard,
            mergedFrom: run["mergedFrom"]?.arrayValue?.compactMap(\.stringValue) ?? [], invariants: invariants,
            chaos: chaos, reconnectStorm: reconnectStorm, scheduledStart: scheduledStart)
        result.startSkew = startSkew
        if run["incomplete"]?.boolValue == true { result.recoveredFrom = run["recoveredFrom"]?.stringValue ?? "a run journal" }
        result.runID = runID
        result.mergedRunIDs = mergedRunIDs
        for (index, entry) in (run["missingShards"]?.arrayValue ?? []).enumerated() {
            guard let text = entry.stringValue, let missing = Shard(parsing: text) else {
                throw reader.error("run.missingShards[\(index)]", "expected a shard such as 2/4")
            }
            result.missingShards.append(missing)
        }
    }

    /// The runs this report counts, for merge's duplicate check: its merged ids, else its own id, else
    /// (a report from before run ids) `sha256:` of its document, so the same old file given twice is caught.
    package var runIdentities: [String] {
        if !result.mergedRunIDs.isEmpty { return result.mergedRunIDs }
        if let id = result.runID { return [id] }
        return ["sha256:" + Crypto.hex(Crypto.sha256(Array(document.formatted(pretty: false).utf8)))]
    }
}

/// A report's or journal's time (`RunReport.timestamp`'s form, with or without fractional seconds).
func parseTimestamp(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)
}

/// Reads fields by dotted path and fails with the path that is missing or of the wrong kind.
private struct FieldReader {
    let source: String
    /// The histogram slots the command may still allocate (see ``HistogramDecodeBudget``).
    var budget: HistogramDecodeBudget

    /// The most seconds a time in a report may be (about 31 years): beyond it, milliseconds stop being exact
    /// and `Int64(seconds * 1000)` would trap.
    static let maximumSeconds = 1e9

    /// A report time in seconds as a duration; NaN, ±inf, negative and over ``maximumSeconds`` are refused.
    func duration(_ seconds: Double, at path: String) throws(ReportFormatError) -> Duration {
        guard seconds.isFinite, seconds >= 0, seconds <= Self.maximumSeconds else {
            throw error(path, "\(seconds) is not a time in seconds (0 to \(Int(Self.maximumSeconds)))")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// `run.id`: nil when absent (a report from before run ids); otherwise a non-empty string of at most 100 bytes.
    func optionalRunID(_ run: JSONValue) throws(ReportFormatError) -> String? {
        guard let value = run["id"], value != .null else { return nil }
        guard let text = value.stringValue, !text.isEmpty, text.utf8.count <= 100 else {
            throw error("run.id", "expected a run id (a string)")
        }
        return text
    }

    /// `intervalSeries`, checked as untrusted input (nil when absent: a report from before series, read as factor 1):
    /// `baseSeconds` a time above 0, `factor` a power of two ≥ 1, `count` at least the report's `entries` and at most
    /// `entries × factor`, `file` null or a plain file name (no `/`, no `..`, no control characters: `report --hlog`
    /// opens it beside the report, and it must not name anything elsewhere).
    func intervalSeries(_ value: JSONValue?, entries: Int) throws(ReportFormatError) -> RunResult.IntervalLog? {
        guard let value, value != .null else { return nil }
        let path = "intervalSeries"
        guard value.objectValue != nil else { throw error(path, "expected an object") }
        guard let base = value["baseSeconds"]?.numberValue, base.isFinite, base > 0, base <= Self.maximumSeconds else {
            throw error(path + ".baseSeconds", "expected a time in seconds above 0 and at most \(Int(Self.maximumSeconds))")
        }
        guard let factor = value["factor"]?.integerValue, factor >= 1, factor & (factor - 1) == 0 else {
            throw error(path + ".factor", "expected a power of two ≥ 1 (base intervals per entry)")
        }
        guard let count = value["count"]?.integerValue, count >= entries else {
            throw error(path + ".count", "expected a count of base intervals, at least the \(entries) entries of intervals")
        }
        let (most, overflow) = entries.multipliedReportingOverflow(by: factor)
        guard overflow || count <= most else {
            throw error(path + ".count", "\(count) base intervals do not fit in \(entries) entries of \(factor) each")
        }
        var file: String?
        switch value["file"] {
        case nil, .null?: break
        case .string(let name)?:
            let bytes = name.utf8
            guard !bytes.isEmpty, bytes.count <= 255, !name.contains("/"), !name.contains("\\"), !name.contains(".."),
                !bytes.contains(where: { $0 < 0x20 || $0 == 0x7f })
            else {
                throw error(path + ".file", "expected a plain file name beside the report (no '/', no '..', no control "
                    + "characters, at most 255 bytes)")
            }
            file = name
        default:
            throw error(path + ".file", "expected a file name or null")
        }
        var log = RunResult.IntervalLog(file: file, count: count, baseSeconds: base, factor: factor)
        log.fileMissing = value["fileMissing"]?.stringValue  // shown, never opened
        return log
    }

    /// An optional non-negative integer (nil when absent or not an integer, as before); a negative one is refused.
    func optionalCount(_ root: JSONValue, _ key: String, at prefix: String) throws(ReportFormatError) -> Int? {
        guard let value = root[key]?.integerValue else { return nil }
        guard value >= 0 else { throw error(prefix + "." + key, "\(value) is negative, not a count") }
        return value
    }

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

    /// An interval's metrics: its counters read as ``metrics(_:at:)`` reads them, its histograms kept at rest.
    mutating func intervalMetrics(_ value: JSONValue, at path: String) throws(ReportFormatError)
        -> (counts: MetricSet, histograms: [String: CompressedHistogram])
    {
        guard let object = value.objectValue else { throw error(path, "expected an object") }
        var rest = JSONObject()
        var histograms: [String: CompressedHistogram] = [:]
        for (name, entry) in object.members {
            guard let blob = entry["histogram"] else {
                rest[name] = entry
                continue
            }
            guard let text = blob.stringValue else { throw error(path + "." + name + ".histogram", "expected a string") }
            histograms[name] = try CompressedHistogram(reading: text, at: "\(source): \(path).\(name).histogram", budget: &budget)
        }
        return (try metrics(.object(rest), at: path), histograms)
    }

    mutating func metrics(_ value: JSONValue, at path: String) throws(ReportFormatError) -> MetricSet {
        do {
            return try MetricSet(json: value, path: path, budget: &budget)
        } catch {
            throw ReportFormatError(path: "\(source): \(error.path)", reason: error.reason)
        }
    }
}

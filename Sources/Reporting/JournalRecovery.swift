import Foundation
import JSON
import Profile

/// Why a run journal could not be recovered: the journal, the line and byte offset at fault when there is one,
/// and the reason. Unreadable (a missing file, a directory) exits 66; anything else is bad data (65).
package struct JournalFormatError: Error, Sendable, CustomStringConvertible {
    package var source: String
    /// 1-based, with the byte offset of the line's first byte; nil for the file as a whole.
    package var line: Int?
    package var offset: Int?
    package var reason: String
    package var isUnreadable = false

    package var description: String {
        guard let line, let offset else { return "\(source): \(reason)" }
        return "\(source): line \(line) (byte offset \(offset)): \(reason)"
    }
}

/// A run journal (`wsload.journal/1`, written by ``RunJournal``) read back as the report of its run, marked
/// incomplete: every interval the journal holds, and totals (run-wide and per scenario) that are the exact sum of
/// those intervals (histograms merged slot by slot). A torn last line — the run was killed while writing it — is
/// ignored with a warning naming its byte offset; any other bad line is an error naming its line and offset.
package struct JournalRecovery: Sendable {
    package var result: RunResult
    package var toolVersion: String
    package var commit: String?
    /// What was ignored (a torn last record), for the user.
    package var warnings: [String] = []

    /// Reads the journal at `path` with a decode budget of its own, one for the whole journal.
    /// - Throws: ``JournalFormatError``.
    package init(contentsOf path: String) throws(JournalFormatError) {
        var budget = HistogramDecodeBudget()
        try self.init(contentsOf: path, budget: &budget)
    }

    /// Reads the journal at `path`, every record's histograms taken from `budget`. - Throws: ``JournalFormatError``.
    package init(contentsOf path: String, budget: inout HistogramDecodeBudget) throws(JournalFormatError) {
        let name = URL(fileURLWithPath: path).lastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
            let handle = FileHandle(forReadingAtPath: path)
        else {
            throw JournalFormatError(source: path, reason: isDirectory.boolValue ? "is a directory" : "no such file or not readable",
                                     isUnreadable: true)
        }
        defer { try? handle.close() }  // read-only: closing cannot lose data
        // Refuse an oversized journal by its size, before reading (or allocating) any of it.
        var status = stat()
        if fstat(handle.fileDescriptor, &status) == 0, status.st_size > RunJournal.maximumSize {
            throw JournalFormatError(source: path, reason: "\(status.st_size) bytes: larger than the journal cap of "
                + "\(RunJournal.maximumSize >> 20) MiB")
        }
        let data: Data
        do {
            data = try handle.read(upToCount: RunJournal.maximumSize + 1) ?? Data()
        } catch {
            throw JournalFormatError(source: path, reason: "cannot be read (\(error.localizedDescription))", isUnreadable: true)
        }
        guard data.count <= RunJournal.maximumSize else {
            throw JournalFormatError(source: path, reason: "larger than the journal cap of \(RunJournal.maximumSize >> 20) MiB")
        }
        try self.init(bytes: Array(data), source: path, name: name, budget: &budget)
    }

    /// Reads a journal's bytes with a decode budget of its own, one for the whole journal.
    package init(bytes: [UInt8], source: String, name: String) throws(JournalFormatError) {
        var budget = HistogramDecodeBudget()
        try self.init(bytes: bytes, source: source, name: name, budget: &budget)
    }

    /// Reads a journal's bytes; `source` names it in errors, `name` is what the report's `recoveredFrom` says.
    /// Every record's histograms are taken from `budget`: a journal of many tiny blobs declaring huge layouts is
    /// refused once their slots add up to it, not allowed to allocate per record without bound.
    package init(bytes: [UInt8], source: String, name: String, budget: inout HistogramDecodeBudget) throws(JournalFormatError) {
        var header: Header?
        var intervals: [RunResult.Interval] = []
        var scenarioTotals: [MetricSet] = []
        var total = MetricSet()
        var invariants = InvariantReport()
        var warnings: [String] = []
        var lineStart = 0
        var lineNumber = 1
        while lineStart < bytes.count {
            guard let lineEnd = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\n")) else {
                warnings.append("\(source): ignored a torn last record at byte offset \(lineStart) "
                    + "(\(bytes.count - lineStart) bytes without a line end: the run was killed while writing it)")
                break
            }
            let place = (line: lineNumber, offset: lineStart)
            func fail(_ reason: String) -> JournalFormatError {
                JournalFormatError(source: source, line: place.line, offset: place.offset, reason: reason)
            }
            let record: JSONValue
            do {
                record = try JSONValue(parsing: bytes[lineStart..<lineEnd])
            } catch {
                throw fail("not a JSON record: \(error)")
            }
            if let known = header {
                let interval = try Self.interval(record, index: intervals.count, header: known,
                                                 previousEnd: intervals.last?.end ?? .zero, budget: &budget, fail: fail)
                do {
                    try Self.checkedAdd(interval.total.metrics, to: &total)
                    for index in scenarioTotals.indices { try Self.checkedAdd(interval.scenarios[index], to: &scenarioTotals[index]) }
                    try Self.checkedAdd(interval.invariants, to: &invariants)
                } catch {
                    throw fail("its counts overflow the sum of the intervals before it (\(error.reason))")
                }
                intervals.append(interval.total)
            } else {
                let parsed = try Self.header(record, fail: fail)
                header = parsed
                scenarioTotals = Array(repeating: MetricSet(), count: parsed.profile.scenarios.count)
            }
            lineStart = lineEnd + 1
            lineNumber += 1
        }
        guard let header else {
            throw JournalFormatError(source: source, line: 1, offset: 0, reason: "no complete header record: not a wsload run journal")
        }
        let elapsed = intervals.last?.end ?? .zero
        result = RunResult(
            profile: header.profile, seed: header.seed, loops: header.loops, startedAt: header.startedAt,
            endedAt: header.startedAt.addingTimeInterval(elapsed.seconds), elapsed: elapsed, interruptedBy: nil,
            abortedBy: nil,
            scenarios: header.profile.scenarios.indices.map { .init(scenario: header.profile.scenarios[$0], metrics: scenarioTotals[$0]) },
            total: total, intervals: intervals, unfinishedConnections: 0, liveHandlesAfterStop: 0, waitingTasksAfterStop: 0,
            shard: header.shard, mergedFrom: [], invariants: invariants, chaos: [], reconnectStorm: nil, scheduledStart: nil)
        result.recoveredFrom = name
        if let id = header.runID { result.runID = id }  // the run's own id: merge refuses it beside the run's report
        toolVersion = header.toolVersion
        commit = header.commit
        self.warnings = warnings
    }

    private struct Header {
        var profile: Profile
        var seed: UInt64
        var shard: Shard?
        var loops: Int
        var startedAt: Date
        var toolVersion: String
        var commit: String?
        var runID: String?
    }

    private struct IntervalRecord {
        var total: RunResult.Interval
        var scenarios: [MetricSet]
        var invariants: InvariantReport
    }

    private static func header(_ record: JSONValue, fail: (String) -> JournalFormatError) throws(JournalFormatError) -> Header {
        guard record["record"]?.stringValue == "header" else { throw fail("the first record is not the journal's header") }
        guard let schema = record["schema"]?.stringValue else { throw fail("schema: missing: is this a wsload run journal?") }
        guard schema == RunJournal.schema else {
            throw fail("schema: \"\(schema)\" is not \(RunJournal.schema), the journal format this build reads")
        }
        guard let toolVersion = record["tool"]?["version"]?.stringValue else { throw fail("tool.version: expected a string") }
        guard let document = record["profile"]?["document"] else { throw fail("profile.document: missing") }
        var profile: Profile
        do {
            profile = try ProfileDecoder.decode(Array(document.formatted(pretty: false).utf8))
        } catch {
            throw fail("profile.document: not a valid profile: \(error.problems.first?.description ?? "")")
        }
        guard let run = record["run"] else { throw fail("run: missing") }
        guard let start = run["start"]?.stringValue, let startedAt = parseTimestamp(start) else {
            throw fail("run.start: not an ISO 8601 time")
        }
        guard let seedText = run["seed"]?.stringValue, let seed = UInt64(seedText) else { throw fail("run.seed: not a seed") }
        guard let loops = run["loops"]?.integerValue, loops >= 0, loops <= 1 << 16 else { throw fail("run.loops: expected a count") }
        var shard: Shard?
        if let text = run["shard"]?.stringValue {
            guard let parsed = Shard(parsing: text) else { throw fail("run.shard: \"\(text)\" is not i/n") }
            shard = parsed
        }
        // The scenarios as this process ran them (a shard's share of the connections), in the profile's order.
        guard let scenarios = record["scenarios"]?.arrayValue, scenarios.count == profile.scenarios.count else {
            throw fail("scenarios: expected one entry per scenario of the profile (\(profile.scenarios.count))")
        }
        for (index, entry) in scenarios.enumerated() {
            guard entry["name"]?.stringValue == profile.scenarios[index].name else {
                throw fail("scenarios[\(index)].name: expected \"\(profile.scenarios[index].name)\"")
            }
            guard let connections = entry["connections"]?.integerValue, connections >= 0 else {
                throw fail("scenarios[\(index)].connections: expected a count")
            }
            profile.scenarios[index].websocket.connections = connections
        }
        var runID: String?
        if let id = run["id"] {
            guard let text = id.stringValue, !text.isEmpty, text.utf8.count <= 100 else { throw fail("run.id: expected a run id") }
            runID = text
        }
        return Header(profile: profile, seed: seed, shard: shard, loops: loops, startedAt: startedAt, toolVersion: toolVersion,
                      commit: record["tool"]?["commit"]?.stringValue, runID: runID)
    }

    /// The longest span an interval bound may name (about 31 years): keeps every conversion to milliseconds exact.
    private static let maximumSeconds = 1e9

    private static func interval(_ record: JSONValue, index: Int, header: Header, previousEnd: Duration,
                                 budget: inout HistogramDecodeBudget,
                                 fail: (String) -> JournalFormatError) throws(JournalFormatError) -> IntervalRecord {
        guard record["record"]?.stringValue == "interval" else {
            throw fail("record: expected \"interval\" (the header comes once, first)")
        }
        guard record["index"]?.integerValue == index else { throw fail("index: expected \(index) (intervals are journaled in order)") }
        func bound(_ key: String) throws(JournalFormatError) -> Duration {
            guard let seconds = record[key]?.numberValue, seconds.isFinite, seconds >= 0, seconds <= maximumSeconds else {
                throw fail("\(key): expected seconds from 0 to \(Int(maximumSeconds))")
            }
            return .milliseconds(Int64((seconds * 1000).rounded()))
        }
        let start = try bound("start")
        let end = try bound("end")
        guard start == previousEnd else {
            throw fail("start: \(start.seconds) s is not where the interval before ended (\(previousEnd.seconds) s)")
        }
        guard end >= start else { throw fail("end: before the interval's start") }
        guard let connections = record["connections"]?.integerValue, connections >= 0 else {
            throw fail("connections: expected a count")
        }
        func metrics(_ value: JSONValue?, at path: String) throws(JournalFormatError) -> MetricSet {
            guard let value else { throw fail("\(path): missing") }
            do {
                return try MetricSet(json: value, path: path, budget: &budget)
            } catch {
                throw fail(error.description)
            }
        }
        let total = try metrics(record["metrics"], at: "metrics")
        let names = header.profile.scenarios.map(\.name)
        guard let scenarios = record["scenarios"]?.arrayValue, scenarios.count == names.count else {
            throw fail("scenarios: expected one entry per scenario (\(names.count))")
        }
        var perScenario: [MetricSet] = []
        for (position, entry) in scenarios.enumerated() {
            guard entry["name"]?.stringValue == names[position] else {
                throw fail("scenarios[\(position)].name: expected \"\(names[position])\"")
            }
            perScenario.append(try metrics(entry["metrics"], at: "scenarios[\(position)].metrics"))
        }
        let invariants: InvariantReport
        do {
            invariants = try InvariantReport(json: record["invariants"] ?? .object(JSONObject()), path: "invariants")
        } catch {
            throw fail(error.description)
        }
        return IntervalRecord(
            total: .init(start: start, end: end, liveConnections: connections, metrics: total), scenarios: perScenario,
            invariants: invariants)
    }

    /// Adds `other` into `sum`, refusing (instead of wrapping) a count that would pass 2^64 − 1.
    static func checkedAdd(_ other: MetricSet, to sum: inout MetricSet) throws(ReportFormatError) {
        func check<Key>(_ mine: [Key: UInt64], _ theirs: [Key: UInt64], _ what: String) throws(ReportFormatError) {
            for (key, value) in theirs where (mine[key] ?? 0).addingReportingOverflow(value).overflow {
                throw ReportFormatError(path: "\(what) \(key)", reason: "overflows")
            }
        }
        try check(sum.counters, other.counters, "counter")
        try check(sum.errors, other.errors, "error count")
        try check(sum.disconnects, other.disconnects, "disconnect count")
        for (name, histogram) in other.histograms
        where (sum.histograms[name]?.totalCount ?? 0).addingReportingOverflow(histogram.totalCount).overflow {
            throw ReportFormatError(path: "histogram \(name)", reason: "overflows")
        }
        var next = sum
        do {
            try next.add(other)
        } catch {
            throw ReportFormatError(path: "histograms", reason: error.description)
        }
        // The report sums these over codes (errors, disconnects) and over counters (operations): keep those sums
        // within range too.
        if overflows(next.errors.values) { throw ReportFormatError(path: "errors", reason: "their sum overflows") }
        if overflows(next.disconnects.values) { throw ReportFormatError(path: "disconnects", reason: "their sum overflows") }
        if overflows(next.counters.values) { throw ReportFormatError(path: "counters", reason: "their sum overflows") }
        sum = next
    }

    static func checkedAdd(_ other: InvariantReport, to sum: inout InvariantReport) throws(ReportFormatError) {
        for (name, value) in other.checked where (sum.checked[name] ?? 0).addingReportingOverflow(value).overflow {
            throw ReportFormatError(path: "invariant \(name)", reason: "checked count overflows")
        }
        for (name, value) in other.violations where (sum.violations[name] ?? 0).addingReportingOverflow(value).overflow {
            throw ReportFormatError(path: "invariant \(name)", reason: "violation count overflows")
        }
        var next = sum
        next.add(other)
        if overflows(next.violations.values) { throw ReportFormatError(path: "invariants", reason: "violation counts overflow") }
        sum = next
    }

    /// Whether `values` sum past 2^64 − 1.
    private static func overflows(_ values: some Sequence<UInt64>) -> Bool {
        var total: UInt64 = 0
        for value in values {
            let (next, overflow) = total.addingReportingOverflow(value)
            if overflow { return true }
            total = next
        }
        return false
    }
}

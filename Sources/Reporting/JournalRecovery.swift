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

/// A run journal (`wsload.journal/1`, written by ``RunJournal``) read back as the report of its run: complete when the
/// journal ends with its end record (``JournalEndRecord``: the run completed; its totals, invariants and end are the
/// report's), otherwise marked incomplete. Either way a bounded series of the journal's intervals (``IntervalSeries``, `report.maxIntervals` of the journaled
/// profile: downsampled when the journal holds more), and totals (run-wide and per scenario) that are the exact sum of
/// every interval (histograms merged slot by slot). The journal streams through ``JournalReader``, one record at a
/// time: memory is the series and the totals, whatever the journal's size. A torn last line — the run was killed while
/// writing it — is ignored with a warning naming its byte offset; any other bad line is an error naming its line and
/// offset. The interval log a completed run keeps (`<stem>.intervals.jsonl`) is the same format and reads the same.
package struct JournalRecovery: Sendable {
    package var result: RunResult
    package var toolVersion: String
    package var commit: String?
    /// What was ignored (a torn last record), for the user.
    package var warnings: [String] = []

    /// The histogram slots a journal of `size` bytes may have its reader decode: the command's budget, or 256 slots per
    /// byte of the journal when that is more. A journal streams, so what it decodes is not what it holds (that is
    /// bounded apart: see ``maximumHeldSlots``); the budget bounds the work a small crafted journal can cause, while an
    /// honest journal of days (wsload's histograms cost at most about 100 slots per byte of their JSON) reads whole.
    package static func decodeBudget(forJournalOf size: Int) -> HistogramDecodeBudget {
        let (scaled, overflow) = size.multipliedReportingOverflow(by: 256)
        return HistogramDecodeBudget(slots: max(HistogramDecodeBudget.commandSlots, overflow ? .max : scaled))
    }

    /// The most histogram slots a recovery holds at once (the series and the totals): 2^28 (2 GiB), the budget of one
    /// command. A crafted journal of huge layouts under distinct names is refused when it passes this.
    package static let maximumHeldSlots = HistogramDecodeBudget.commandSlots

    /// Reads the journal at `path` with a decode budget sized for it (``decodeBudget(forJournalOf:)``).
    /// - Throws: ``JournalFormatError``.
    package init(contentsOf path: String) throws(JournalFormatError) {
        var reader = try JournalReader(contentsOf: path)
        defer { reader.close() }
        var budget = Self.decodeBudget(forJournalOf: reader.size)
        try self.init(reading: &reader, name: URL(fileURLWithPath: path).lastPathComponent, budget: &budget)
    }

    /// Reads the journal at `path`, every record's histograms taken from `budget`. - Throws: ``JournalFormatError``.
    package init(contentsOf path: String, budget: inout HistogramDecodeBudget) throws(JournalFormatError) {
        var reader = try JournalReader(contentsOf: path)
        defer { reader.close() }
        try self.init(reading: &reader, name: URL(fileURLWithPath: path).lastPathComponent, budget: &budget)
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
        var reader = JournalReader(bytes: bytes, source: source)
        try self.init(reading: &reader, name: name, budget: &budget)
    }

    /// Reads every record `reader` has left into totals and a bounded series.
    package init(reading reader: inout JournalReader, name: String, budget: inout HistogramDecodeBudget)
        throws(JournalFormatError)
    {
        let header = try reader.readHeader()
        var series = IntervalSeries(maximumCount: header.profile.report.maxIntervals)
        var scenarioTotals = Array(repeating: MetricSet(), count: header.profile.scenarios.count)
        var total = MetricSet()
        var invariants = InvariantReport()
        let source = reader.source
        while let next = try reader.nextInterval(budget: &budget) {
            let (interval, place) = next
            func fail(_ reason: String) -> JournalFormatError {
                JournalFormatError(source: source, line: place.line, offset: place.offset, reason: reason)
            }
            do {
                try Self.checkedAdd(interval.total.metrics, to: &total)
                for index in scenarioTotals.indices { try Self.checkedAdd(interval.scenarios[index], to: &scenarioTotals[index]) }
                try Self.checkedAdd(interval.invariants, to: &invariants)
            } catch {
                throw fail("its counts overflow the sum of the intervals before it (\(error.reason))")
            }
            do {
                try series.append(interval.total)
            } catch {
                throw fail("metrics: \(error.description)")
            }
            let held = series.histogramSlots + scenarioTotals.reduce(IntervalSeries.slots(total)) { $0 + IntervalSeries.slots($1) }
            guard held <= Self.maximumHeldSlots else {
                throw fail("the intervals so far hold \(held) histogram slots, more than the \(Self.maximumHeldSlots) a "
                    + "recovery may hold at once")
            }
        }
        let elapsed = series.entries.last?.end ?? .zero
        // A journal with its end record is a run that completed: its report, whole. Without, what the intervals hold.
        let end = reader.end
        if let end {
            total = end.total
            scenarioTotals = end.scenarios
            invariants = end.invariants
        }
        // The interval log is not named here: it is a file beside the report the recovery writes (the CLI keeps it
        // there and names it, ``RunResult/IntervalLog/file``), not the journal's name wherever that is.
        result = RunResult(
            profile: header.profile, seed: header.seed, loops: header.loops, startedAt: header.startedAt,
            endedAt: end?.endedAt ?? header.startedAt.addingTimeInterval(elapsed.seconds), elapsed: end?.elapsed ?? elapsed,
            interruptedBy: end?.interruptedBy, abortedBy: end?.abortedBy,
            scenarios: header.profile.scenarios.indices.map { .init(scenario: header.profile.scenarios[$0], metrics: scenarioTotals[$0]) },
            total: total, intervals: series.entries,
            intervalLog: series.log(baseSeconds: header.profile.report.interval.seconds, file: nil),
            unfinishedConnections: end?.unfinishedConnections ?? 0, liveHandlesAfterStop: end?.liveHandlesAfterStop ?? 0,
            waitingTasksAfterStop: end?.waitingTasksAfterStop ?? 0,
            shard: header.shard, mergedFrom: [], invariants: invariants, chaos: end?.chaos ?? [],
            reconnectStorm: end?.reconnectStorm, scheduledStart: header.scheduledStart)
        if end == nil { result.recoveredFrom = name }
        if let id = header.runID { result.runID = id }  // the run's own id: merge refuses it beside the run's report
        toolVersion = header.toolVersion
        commit = header.commit
        warnings = reader.warnings
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

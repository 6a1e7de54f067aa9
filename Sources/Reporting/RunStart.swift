import Foundation
import JSON

extension RunResult {
    /// The start a run was given (`wsload run --start-at`) and how close to it the run started: `run.startAt` and
    /// `run.lateBy` in the report.
    package struct ScheduledStart: Sendable, Equatable {
        /// The wall-clock instant asked for.
        package var at: Date
        /// Seconds from ``at`` to the run's actual start (``RunResult/startedAt``, the coordinator's first wall-clock
        /// reading): the wake-up's latency for a run that waited, how long ago the time had passed for one that
        /// started at once. Negative only when this host's wall clock was adjusted during the wait (the wait is on
        /// the monotonic clock). For a merged result, the latest shard's.
        package var lateBy: Double

        package init(at: Date, lateBy: Double) {
            self.at = at
            self.lateBy = lateBy
        }
    }
}

extension RunReport {
    /// The `run` section's start fields: `startAt` (RFC 3339, ms), `lateBy` and `startSkew` (seconds, ms precision),
    /// each only when the result has it.
    static func startFields(of result: RunResult) -> [(key: String, value: JSONValue)] {
        startFields(scheduledStart: result.scheduledStart, startSkew: result.startSkew)
    }

    /// The start fields of a report's `run` section or a run journal's header.
    static func startFields(scheduledStart: RunResult.ScheduledStart?, startSkew: Double?) -> [(key: String, value: JSONValue)] {
        var fields: [(key: String, value: JSONValue)] = []
        if let start = scheduledStart {
            fields.append(("startAt", .string(timestamp(start.at))))
            fields.append(("lateBy", .number(millisecondPrecision(start.lateBy))))
        }
        if let skew = startSkew { fields.append(("startSkew", .number(millisecondPrecision(skew)))) }
        return fields
    }

    static func millisecondPrecision(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }
}

extension LoadedReport {
    /// The most seconds a `run.lateBy` or `run.startSkew` may hold (about 317 years): past it, a number is not a time.
    static let maximumStartSeconds = 1e10

    /// `run.startAt` with `run.lateBy`, and `run.startSkew`, from a report's `run` section (each optional; a present
    /// one must be well-formed: merge compares them, so a damaged one is refused rather than ignored).
    static func start(in run: JSONValue, source: String) throws(ReportFormatError) -> (RunResult.ScheduledStart?, Double?) {
        func fail(_ key: String, _ reason: String) -> ReportFormatError {
            ReportFormatError(path: "\(source): run.\(key)", reason: reason)
        }
        func seconds(_ key: String, allowsNegative: Bool) throws(ReportFormatError) -> Double? {
            guard let value = run[key], value != .null else { return nil }
            guard let number = value.numberValue, number.isFinite, abs(number) <= maximumStartSeconds,
                allowsNegative || number >= 0
            else {
                throw fail(key, "expected \(allowsNegative ? "" : "a non-negative ")number of seconds")
            }
            return number
        }
        var scheduled: RunResult.ScheduledStart?
        if let value = run["startAt"], value != .null {
            guard let text = value.stringValue, let at = parseTimestamp(text) else {
                throw fail("startAt", "expected an RFC 3339 time")
            }
            guard let lateBy = try seconds("lateBy", allowsNegative: true) else { throw fail("lateBy", "missing (run.startAt is set)") }
            scheduled = .init(at: at, lateBy: lateBy)
        }
        return (scheduled, try seconds("startSkew", allowsNegative: false))
    }
}

extension ReportMerger {
    /// Refuses reports that were given different start times (`run.startAt`, compared as the report writes it, to
    /// the millisecond; none at all is a start of its own), naming both, unless `allowsDifferentStarts`.
    static func checkStarts(_ reports: [LoadedReport], allowsDifferentStarts: Bool) throws(MergeError) {
        guard !allowsDifferentStarts, let first = reports.first else { return }
        func shown(_ report: LoadedReport) -> String {
            report.result.scheduledStart.map { "starts at \(RunReport.timestamp($0.at))" } ?? "has no start time (run.startAt)"
        }
        let key = first.result.scheduledStart.map { RunReport.timestamp($0.at) }
        for report in reports.dropFirst() where report.result.scheduledStart.map({ RunReport.timestamp($0.at) }) != key {
            throw MergeError(description: "\(report.source) \(shown(report)) but \(first.source) \(shown(first)); the shards "
                + "of one run share --start-at (--allow-different-starts merges them anyway)")
        }
    }

    /// The merged start: one `startAt` when every input has the same (the latest `lateBy` with it), none otherwise;
    /// and the skew, from the earliest actual start to the latest (an input that is itself a merge starts at its
    /// `startedAt` and ends its starts `startSkew` later).
    static func mergedStart(of reports: [LoadedReport]) -> (RunResult.ScheduledStart?, skew: Double) {
        let starts = reports.map(\.result.startedAt)
        let earliest = starts.min() ?? Date(timeIntervalSince1970: 0)
        let latest = reports.map { $0.result.startedAt.addingTimeInterval($0.result.startSkew ?? 0) }.max() ?? earliest
        let skew = max(0, latest.timeIntervalSince(earliest))
        let scheduled = reports.map(\.result.scheduledStart)
        guard let first = scheduled.first ?? nil,
            scheduled.allSatisfy({ $0.map { RunReport.timestamp($0.at) } == RunReport.timestamp(first.at) })
        else { return (nil, skew) }
        return (.init(at: first.at, lateBy: scheduled.compactMap { $0?.lateBy }.max() ?? first.lateBy), skew)
    }
}

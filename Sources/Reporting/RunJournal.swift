import Crypto
import Foundation
import JSON
import Profile
import Synchronization

/// The run journal (`wsload.journal/1`, docs/REPORT.md "The run journal"): while a run goes, its header and every
/// closed interval are appended to `<report path>.partial`, one JSON record per line, each written with one
/// write(2) and fsync'd, so a run killed at any moment leaves every interval it had closed on disk. It is the run's
/// full-resolution interval log, on disk rather than in memory: a completed run whose report series was downsampled
/// keeps it beside the report as `<report stem>.intervals.jsonl` (``keepAsIntervalLog(ofReport:)``), and otherwise
/// removes it once the report is written (``remove()``); `wsload report --recover` turns a journal left behind (or a
/// kept interval log) into a report marked incomplete (``JournalRecovery``).
///
/// The journal is created with `O_CREAT | O_EXCL | O_NOFOLLOW`: it never replaces a file, never follows a symlink,
/// and sits only where the report would be written. A journal that cannot be written never stops the run: the
/// first problem is kept (``problem``) and journaling stops.
package final class RunJournal: Sendable {
    /// The `schema` of the header record.
    package static let schema = "wsload.journal/1"
    /// What is appended to the report's path to name its journal.
    package static let suffix = ".partial"
    /// The largest journal written or read: 16 GiB, on disk and streamed both ways (never held in memory), so days
    /// fit — a one-scenario echo run journals about 1.5 KB per interval (measured): some 130 MB a day at 1-second
    /// intervals, 1.3 GB a day at 100 ms.
    package static let maximumSize = 16 << 30
    /// The longest record (line) written or read: 64 MiB, what a reader holds at once.
    package static let maximumRecordSize = 64 << 20
    /// ``maximumSize`` for messages.
    package static let capDescription = "\(maximumSize >> 30) GiB"
    /// What replaces `.json` (or is appended to a report name without it) to name the interval log kept beside it.
    package static let intervalLogSuffix = ".intervals.jsonl"

    private struct State {
        var descriptor: Int32 = -1
        var path: String?
        var problem: String?
        var intervalCount = 0
        var size = 0
        var isClosed = false
        var isFinished = false
    }

    private let state = Mutex(State())
    private let toolVersion: String
    private let commit: String?
    /// The start the run was given (`--start-at`), written in the header with how late the run began.
    private let startAt: Date?
    private let reportPath: @Sendable (Date) -> String
    /// The run's id, chosen before it starts: written in the header, so the report of the finished run and a report
    /// recovered from its journal carry the same `run.id` (merge then refuses both together).
    package let runID = RunResult.newRunID()
    /// Told the first problem as it happens (a long run should not learn at its end that nothing was journaled).
    private let onProblem: (@Sendable (String) -> Void)?

    /// - Parameters:
    ///   - reportPath: where the run's report will be written, given the run's start time (the default report name
    ///     holds it); the journal is that path + ``suffix``.
    ///   - startAt: the start the run was given (`--start-at`), if any: the header records it as `run.startAt`.
    ///   - onProblem: called once, outside the journal's lock, with the first problem (journaling then stops).
    package init(toolVersion: String, commit: String?, startAt: Date? = nil, reportPath: @escaping @Sendable (Date) -> String,
                 onProblem: (@Sendable (String) -> Void)? = nil) {
        self.toolVersion = toolVersion
        self.commit = commit
        self.startAt = startAt
        self.reportPath = reportPath
        self.onProblem = onProblem
    }

    /// Runs `body` under the lock and reports a problem it caused (the first one) to ``onProblem``.
    private func locked(_ body: (inout State) -> Void) {
        let problem: String? = state.withLock { state in
            let before = state.problem
            body(&state)
            return before == nil ? state.problem : nil
        }
        if let problem { onProblem?(problem) }
    }

    /// The journal's path once ``begin(profile:seed:shard:loops:startedAt:)`` created it.
    package var path: String? { state.withLock { $0.path } }
    /// The first thing that went wrong (the journal then stopped); nil while every record was written.
    package var problem: String? { state.withLock { $0.problem } }
    /// The intervals journaled so far.
    package var intervalCount: Int { state.withLock { $0.intervalCount } }

    /// The journal path of the report at `reportPath`.
    package static func path(forReport reportPath: String) -> String { reportPath + suffix }

    /// Creates the journal beside the report and writes the run's header record.
    package func begin(profile: Profile, seed: UInt64, shard: Shard?, loops: Int, startedAt: Date) {
        let report = reportPath(startedAt)
        let path = Self.path(forReport: report)
        let header = Self.headerRecord(
            profile: profile, seed: seed, shard: shard, loops: loops, startedAt: startedAt, report: report,
            toolVersion: toolVersion, commit: commit, runID: runID,
            scheduledStart: startAt.map { .init(at: $0, lateBy: startedAt.timeIntervalSince($0)) })
        locked { state in
            guard state.descriptor < 0, !state.isClosed else { return }
            do {
                try FileManager.default.createDirectory(
                    at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
            } catch {
                state.problem = "cannot create the directory of \(path): \(error.localizedDescription)"
                return
            }
            let descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0o644)
            guard descriptor >= 0 else {
                state.problem = "cannot create \(path): \(String(cString: strerror(errno)))"
                return
            }
            state.descriptor = descriptor
            state.path = path
            Self.write(header, into: &state)
        }
    }

    /// Appends one closed interval: its span, the connections live at its end, its metrics (run-wide and per
    /// scenario, histograms lossless) and the invariant checks made during it.
    package func append(_ interval: RunResult.Interval, scenarios: [(name: String, metrics: MetricSet)], invariants: InvariantReport) {
        locked { state in
            guard state.descriptor >= 0, !state.isFinished else { return }
            let record = Self.intervalRecord(interval, index: state.intervalCount, scenarios: scenarios, invariants: invariants)
            if Self.write(record, into: &state) { state.intervalCount += 1 }
        }
    }

    /// Appends the end record of a run that completed (its report is about to be written): what the report holds
    /// that no interval does — the end, the totals with what was counted after the last interval, the invariants
    /// with the checks after the stop, the leak counts, the chaos records and the reconnect storm. A journal with it
    /// is whole: recovered, it is the run's complete report (``JournalRecovery``). Nothing is appended after it.
    package func finish(_ result: RunResult) {
        locked { state in
            guard state.descriptor >= 0 else { return }
            if Self.write(JournalEndRecord.json(result, intervals: state.intervalCount), into: &state) { state.isFinished = true }
        }
    }

    /// Whether the end record was written (``finish(_:)``).
    package var isFinished: Bool { state.withLock { $0.isFinished } }

    /// Closes the journal and keeps it (the report could not be written: the journal is all there is).
    package func close() {
        state.withLock { state in
            if state.descriptor >= 0 { _ = Glibc.close(state.descriptor) }
            state.descriptor = -1
            state.isClosed = true
        }
    }

    /// The interval log's name beside the report at `reportPath`: `r.json` → `r.intervals.jsonl`.
    package static func intervalLogPath(forReport reportPath: String) -> String {
        (reportPath.hasSuffix(".json") ? String(reportPath.dropLast(5)) : reportPath) + intervalLogSuffix
    }

    /// Closes the journal and keeps it beside the report as its interval log (``intervalLogPath(forReport:)``), for a
    /// completed run whose report holds a downsampled series. The new name never replaces a file: it is made with
    /// link(2), which fails with EEXIST instead (O_EXCL semantics, atomically), and the journal's name is removed
    /// only after; when the name is taken, `<stem>-2` … `<stem>-9` are tried (`r-2.intervals.jsonl`). Returns the path it has now
    /// and, when that is still the journal's own (no free name, a file system without hard links), why: it stays
    /// recoverable where it is. nil when no journal was created.
    package func keepAsIntervalLog(ofReport reportPath: String) -> (path: String, problem: String?)? {
        state.withLock { state in
            if state.descriptor >= 0 { _ = Glibc.close(state.descriptor) }
            state.descriptor = -1
            state.isClosed = true
            guard let path = state.path else { return nil }
            let candidates = Self.intervalLogCandidates(forReport: reportPath)
            for candidate in candidates {
                if link(path, candidate) == 0 {
                    _ = unlink(path)
                    state.path = candidate
                    return (candidate, nil)
                }
                guard errno == EEXIST else { return (path, "cannot link \(candidate): \(String(cString: strerror(errno)))") }
            }
            return (path, "\(candidates[0]) and the \(candidates.count - 1) names after it exist")
        }
    }

    /// Closes and removes the journal: call once the run's report is in place.
    package func remove() {
        state.withLock { state in
            if state.descriptor >= 0 { _ = Glibc.close(state.descriptor) }
            state.descriptor = -1
            state.isClosed = true
            if let path = state.path { _ = unlink(path) }
        }
    }

    /// Writes one record as one line with one write(2) (a kill mid-write leaves a torn last line, which recovery
    /// ignores), then fsyncs. On failure keeps the problem and stops journaling. Returns whether it was written.
    @discardableResult
    private static func write(_ record: JSONValue, into state: inout State) -> Bool {
        let bytes = Array((record.formatted(pretty: false) + "\n").utf8)
        guard bytes.count - 1 <= maximumRecordSize else {
            stop(&state, "a record of \(bytes.count) bytes passes the cap of \(maximumRecordSize >> 20) MiB a record may have; "
                + "later intervals are not journaled")
            return false
        }
        let (newSize, overflow) = state.size.addingReportingOverflow(bytes.count)
        guard !overflow, newSize <= maximumSize else {
            stop(&state, "the journal reached its cap of \(capDescription); later intervals are not journaled")
            return false
        }
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                Glibc.write(state.descriptor, buffer.baseAddress! + written, buffer.count - written)
            }
            if result < 0 {
                if errno == EINTR { continue }
                stop(&state, "cannot write \(state.path ?? "the journal"): \(String(cString: strerror(errno)))")
                return false
            }
            written += result
        }
        state.size = newSize
        guard fsync(state.descriptor) == 0 else {
            stop(&state, "cannot flush \(state.path ?? "the journal"): \(String(cString: strerror(errno)))")
            return false
        }
        return true
    }

    private static func stop(_ state: inout State, _ problem: String) {
        if state.problem == nil { state.problem = problem }
        _ = Glibc.close(state.descriptor)
        state.descriptor = -1
    }

    /// The first line: everything a report holds that is not an interval's.
    static func headerRecord(profile: Profile, seed: UInt64, shard: Shard?, loops: Int, startedAt: Date, report: String,
                             toolVersion: String, commit: String?, runID: String,
                             scheduledStart: RunResult.ScheduledStart? = nil) -> JSONValue {
        let document = RunReport.sanitizedProfile(profile.document)
        let digest = Crypto.hex(Crypto.sha256(Array(document.formatted(pretty: false).utf8)))
        var run: JSONObject = [
            "start": .string(RunReport.timestamp(startedAt)), "plannedSeconds": .number(profile.duration.seconds),
            "seed": .string(String(seed)), "loops": JSONValue(loops), "id": .string(runID),
        ]
        if let shard { run["shard"] = .string(shard.description) }
        for field in RunReport.startFields(scheduledStart: scheduledStart, startSkew: nil) { run[field.key] = field.value }
        return [
            "record": "header", "schema": .string(schema),
            "tool": ["name": "wsload", "version": .string(toolVersion), "commit": JSONValue(commit)],
            "report": ["file": .string(URL(fileURLWithPath: report).lastPathComponent),
                       "intervalSeconds": .number(profile.report.interval.seconds)],
            "profile": ["name": .string(profile.name), "digest": .string("sha256:" + digest), "document": document],
            "run": .object(run),
            "scenarios": .array(profile.scenarios.map {
                ["name": .string($0.name), "connections": JSONValue($0.websocket.connections)]
            }),
        ]
    }

    /// One line per closed interval.
    static func intervalRecord(_ interval: RunResult.Interval, index: Int, scenarios: [(name: String, metrics: MetricSet)],
                               invariants: InvariantReport) -> JSONValue {
        let span = (interval.end - interval.start).seconds
        return [
            "record": "interval", "index": JSONValue(index),
            "start": .number(RunReport.roundedSeconds(interval.start)), "end": .number(RunReport.roundedSeconds(interval.end)),
            "connections": JSONValue(interval.liveConnections),
            "metrics": interval.metricsJSON(seconds: span),
            "scenarios": .array(scenarios.map {
                ["name": .string($0.name), "metrics": $0.metrics.json(seconds: span, operations: $0.metrics.operations)]
            }),
            "invariants": invariants.json(),
        ]
    }
}

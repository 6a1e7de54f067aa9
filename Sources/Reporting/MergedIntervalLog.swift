import Foundation
import JSON
import Profile

/// The full-resolution interval log of a merged report (`wsload merge`): the inputs' interval logs added base interval by
/// base interval, streamed — one record of each input held at a time (``JournalReader``), one merged record written at a
/// time — so merging logs of days costs what one record costs. The result is a run journal (`wsload.journal/1`): the
/// merged run's header (its id, so `--hlog` accepts it), the merged base intervals, and the end record of the merged
/// result, so `report --recover` reads it back as the merged report.
///
/// Base intervals add by index, as the merged report's entries add by position: shard `i`'s base interval `k` covers
/// the same part of the run as every other shard's when the shards share their start (`run.startAt`, which merge
/// already requires unless `--allow-different-starts`) and their base interval. Otherwise no log is merged
/// (``alignmentProblem(_:)``). Merged interval `k` starts where `k − 1` ended and ends at the latest of the inputs'
/// ends (an input that has no interval `k` any more adds nothing); connections, metrics (histograms exactly), per
/// scenario metrics and invariant checks add.
package enum MergedIntervalLog {
    /// Why the inputs' base intervals do not align (no merged log is written), or nil when they do.
    package static func alignmentProblem(_ reports: [LoadedReport]) -> String? {
        guard let first = reports.first else { return "nothing to merge" }
        let base = first.result.intervalLog?.baseSeconds ?? first.result.profile.report.interval.seconds
        let start = first.result.scheduledStart.map { RunReport.timestamp($0.at) }
        for report in reports.dropFirst() {
            if (report.result.intervalLog?.baseSeconds ?? report.result.profile.report.interval.seconds) != base {
                return "\(report.source) has another base interval than \(first.source): their base intervals do not align"
            }
            if report.result.scheduledStart.map({ RunReport.timestamp($0.at) }) != start {
                return "\(report.source) and \(first.source) were given different start times (run.startAt): their base "
                    + "intervals do not align"
            }
        }
        return nil
    }

    /// Writes the merged log of `logs` (each input report's interval log, in the reports' order) for `merged`, the
    /// report to be written at `report`, to the new file `path` (created with `O_EXCL`: never replacing one; removed
    /// again when anything fails).
    /// - Throws: ``JournalFormatError`` for an input log that is unreadable, damaged or not its report's, or the write's
    ///   failure as a `JournalFormatError` naming `path`.
    package static func write(logs: [(report: LoadedReport, path: String)], merged: RunResult, report: String, to path: String,
                              toolVersion: String, commit: String?) throws(JournalFormatError) {
        var readers: [JournalReader] = []
        defer { for index in readers.indices { readers[index].close() } }
        var budgets: [HistogramDecodeBudget] = []
        for (report, log) in logs {
            var reader = try JournalReader(contentsOf: log)
            do throws(JournalFormatError) {
                let header = try reader.readHeader()
                if let id = header.runID, let expected = report.result.runID, id != expected {
                    throw JournalFormatError(source: log, reason: "the interval log of another run (run.id \(id), not \(report.source)'s)")
                }
                guard header.profile.scenarios.map(\.name) == merged.profile.scenarios.map(\.name) else {
                    throw JournalFormatError(source: log, reason: "its scenarios are not the merged profile's")
                }
            } catch {
                reader.close()
                throw error
            }
            readers.append(reader)
            budgets.append(JournalRecovery.decodeBudget(forJournalOf: reader.size))
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw JournalFormatError(source: path, reason: "cannot create it: \(String(cString: strerror(errno)))", isUnreadable: true)
        }
        var isWritten = false
        defer {
            _ = Glibc.close(descriptor)
            if !isWritten { _ = unlink(path) }
        }
        func emit(_ record: JSONValue) throws(JournalFormatError) {
            let bytes = Array((record.formatted(pretty: false) + "\n").utf8)
            var written = 0
            while written < bytes.count {
                let result = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else {
                    throw JournalFormatError(source: path, reason: "cannot write it: \(String(cString: strerror(result < 0 ? errno : EIO)))")
                }
                written += result
            }
        }
        try emit(RunJournal.headerRecord(
            profile: merged.profile, seed: merged.seed, shard: nil, loops: merged.loops, startedAt: merged.startedAt,
            report: report, toolVersion: toolVersion, commit: commit, runID: merged.runID ?? RunResult.newRunID(),
            scheduledStart: merged.scheduledStart))
        var index = 0
        var end = Duration.zero
        while true {
            var sum: JournalReader.IntervalRecord?
            var latest = end
            for position in readers.indices {
                guard let (record, place) = try readers[position].nextInterval(budget: &budgets[position]) else { continue }
                latest = max(latest, record.total.end)
                guard var total = sum else {
                    sum = record
                    continue
                }
                do {
                    // A journal's records are fresh intervals: their metrics come as they are, nothing decoded.
                    var metrics = try total.total.metrics
                    try JournalRecovery.checkedAdd(record.total.metrics, to: &metrics)
                    total.total = RunResult.Interval(start: total.total.start, end: total.total.end,
                                                     liveConnections: total.total.liveConnections, metrics: metrics)
                    for scenario in total.scenarios.indices {
                        try JournalRecovery.checkedAdd(record.scenarios[scenario], to: &total.scenarios[scenario])
                    }
                    try JournalRecovery.checkedAdd(record.invariants, to: &total.invariants)
                } catch {
                    throw JournalFormatError(source: readers[position].source, line: place.line, offset: place.offset,
                                             reason: "does not add to the other logs' interval \(index): \(error.description)")
                }
                let (connections, overflow) = total.total.liveConnections.addingReportingOverflow(record.total.liveConnections)
                total.total.liveConnections = overflow ? .max : connections
                sum = total
            }
            guard var interval = sum else { break }
            interval.total.start = end
            interval.total.end = latest
            try emit(RunJournal.intervalRecord(
                interval.total, index: index,
                scenarios: zip(merged.profile.scenarios, interval.scenarios).map { ($0.0.name, $0.1) },
                invariants: interval.invariants))
            end = latest
            index += 1
        }
        try emit(JournalEndRecord.json(merged, intervals: index))
        guard fsync(descriptor) == 0 else {
            throw JournalFormatError(source: path, reason: "cannot flush it: \(String(cString: strerror(errno)))")
        }
        isWritten = true
    }
}

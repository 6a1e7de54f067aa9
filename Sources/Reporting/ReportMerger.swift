import Foundation
import Histogram
import Profile

/// Why reports cannot be merged.
package struct MergeError: Error, Sendable, CustomStringConvertible {
    package var description: String
}

/// Merges reports of one profile — the shards of a run, or runs made side by side — exactly: histograms
/// add slot by slot and counters add, so the merged percentiles are those of all samples together
/// (never an average of percentiles). Thresholds are evaluated again on the merged figures.
package enum ReportMerger {
    /// - Parameter allowsDifferentStarts: merge reports given different start times (`run.startAt`) too; the merged
    ///   report then has no `startAt`.
    package static func merge(_ reports: [LoadedReport], allowsDifferentStarts: Bool = false) throws(MergeError) -> RunResult {
        guard let first = reports.first else { throw MergeError(description: "nothing to merge") }
        for report in reports.dropFirst() where report.profileDigest != first.profileDigest {
            throw MergeError(description: "\(report.source) ran a different profile than \(first.source) "
                + "(\(report.profileDigest) vs \(first.profileDigest)); only reports of one profile merge")
        }
        let shards = reports.compactMap(\.result.shard)
        if !shards.isEmpty {
            let listing = reports.map { "\($0.source) (\($0.result.shard?.description ?? "whole run"))" }.joined(separator: ", ")
            guard shards.count == reports.count else {
                throw MergeError(description: "a mix of shards and whole runs: \(listing); merge the shards of one split")
            }
            guard Set(shards.map(\.count)).count == 1 else {
                throw MergeError(description: "shards of different splits: \(listing); only the shards of one split merge")
            }
            var seen: [Int: String] = [:]
            for report in reports {
                let shard = report.result.shard!
                if let other = seen[shard.index] {
                    throw MergeError(description: "\(report.source) and \(other) are both shard \(shard)")
                }
                seen[shard.index] = report.source
            }
            try checkSlices(reports)
        }
        try checkStarts(reports, allowsDifferentStarts: allowsDifferentStarts)
        // One run given twice (the same file, a copy, or a merge of it) would count every sample twice.
        var seenRuns: [String: String] = [:]
        for report in reports {
            for id in report.runIdentities {
                if let other = seenRuns[id] {
                    throw MergeError(description: "\(report.source) and \(other) hold the same run (id \(id)); "
                        + "each run merges once")
                }
                seenRuns[id] = report.source
            }
        }
        var merged = first.result
        // Interval series of different factors (one shard's run downsampled further than another's) are coarsened to
        // the largest before they add by position, so every entry adds the same base intervals of every input.
        let factor = reports.map(\.result.intervalFactor).max() ?? 1
        merged.intervals = try coarsened(first, to: factor)
        if reports.contains(where: { $0.result.intervalLog != nil }) {
            merged.intervalLog = RunResult.IntervalLog(
                file: nil, count: reports.map { $0.result.intervalLog?.count ?? $0.result.intervals.count }.max() ?? 0,
                baseSeconds: first.result.intervalLog?.baseSeconds ?? first.result.profile.report.interval.seconds,
                factor: factor)
        }
        merged.shard = nil
        merged.runID = RunResult.newRunID()
        merged.mergedRunIDs = reports.flatMap(\.runIdentities)
        merged.mergedFrom = reports.map { report in
            report.result.shard.map { "\(report.source) (shard \($0))" } ?? report.source
        }
        for report in reports.dropFirst() {
            let other = report.result
            try add(other.total, to: &merged.total, at: "total", of: report, into: first)
            for scenario in other.scenarios {
                guard let index = merged.scenarios.firstIndex(where: { $0.scenario.name == scenario.scenario.name }) else {
                    merged.scenarios.append(scenario)
                    continue
                }
                try add(scenario.metrics, to: &merged.scenarios[index].metrics, at: "scenario \(scenario.scenario.name)",
                        of: report, into: first)
                accumulate(&merged.scenarios[index].scenario.websocket.connections, scenario.scenario.websocket.connections)
            }
            for (index, interval) in try coarsened(report, to: factor).enumerated() {
                if index < merged.intervals.count {
                    // One entry of each decoded at a time, the sum put at rest again.
                    let entry = merged.intervals[index]
                    var sum = try decoded(entry)
                    try add(try decoded(interval), to: &sum, at: "interval \(index + 1)", of: report, into: first)
                    var live = entry.liveConnections
                    accumulate(&live, interval.liveConnections)
                    merged.intervals[index] = RunResult.Interval(
                        start: entry.start, end: max(entry.end, interval.end), liveConnections: live, metrics: sum)
                    merged.intervals[index].compress()
                } else {
                    merged.intervals.append(interval)
                }
            }
            merged.invariants.add(other.invariants)
            accumulate(&merged.loops, other.loops)
            merged.startedAt = min(merged.startedAt, other.startedAt)
            merged.endedAt = max(merged.endedAt, other.endedAt)
            merged.elapsed = max(merged.elapsed, other.elapsed)
            merged.interruptedBy = merged.interruptedBy ?? other.interruptedBy
            merged.abortedBy = merged.abortedBy ?? other.abortedBy
            accumulate(&merged.unfinishedConnections, other.unfinishedConnections)
            // Each shard has its own server: the same timeline hit each shard's connections.
            for (index, record) in other.chaos.enumerated() {
                if index < merged.chaos.count && merged.chaos[index].action == record.action {
                    accumulate(&merged.chaos[index].affected, record.affected)
                    merged.chaos[index].firedAt = max(merged.chaos[index].firedAt, record.firedAt)
                } else {
                    merged.chaos.append(record)
                }
            }
            // Peaks from different processes cannot be added exactly (their 100 ms slots differ); the sums
            // bound the combined peaks from above.
            if let storm = other.reconnectStorm {
                let before = merged.reconnectStorm ?? .init(peakReconnectsPer100ms: 0, peakDropsPer100ms: 0)
                merged.reconnectStorm = .init(
                    peakReconnectsPer100ms: saturatingSum(before.peakReconnectsPer100ms, storm.peakReconnectsPer100ms),
                    peakDropsPer100ms: saturatingSum(before.peakDropsPer100ms, storm.peakDropsPer100ms))
            }
            accumulate(&merged.liveHandlesAfterStop, other.liveHandlesAfterStop)
            accumulate(&merged.waitingTasksAfterStop, other.waitingTasksAfterStop)
        }
        for (index, scenario) in merged.scenarios.enumerated() {
            if let position = merged.profile.scenarios.firstIndex(where: { $0.name == scenario.scenario.name }) {
                merged.profile.scenarios[position] = merged.scenarios[index].scenario
            }
        }
        // An entry no other report added to is still as its file had it: decoded once here, so a blob that does not
        // decode is told now, by its place, and the merged report is written with every entry's figures.
        for index in merged.intervals.indices { merged.intervals[index] = try withFigures(merged.intervals[index]) }
        (merged.scheduledStart, merged.startSkew) = mergedStart(of: reports)
        merged.evaluateThresholds()
        return merged
    }

    /// `report`'s intervals at `factor` base intervals per entry (its own factor divides it: both are powers of two).
    private static func coarsened(_ report: LoadedReport, to factor: Int) throws(MergeError) -> [RunResult.Interval] {
        do {
            return try IntervalSeries.coarsened(report.result.intervals, by: factor / report.result.intervalFactor)
        } catch {
            throw MergeError(description: error.description)  // its path names the report and the interval
        }
    }

    /// An entry's metrics, decoded. - Throws: a blob that does not decode, by its place.
    private static func decoded(_ interval: RunResult.Interval) throws(MergeError) -> MetricSet {
        do {
            return try interval.metrics
        } catch {
            throw MergeError(description: error.description)
        }
    }

    /// ``RunResult/Interval/withFigures()``, failing as a merge.
    private static func withFigures(_ interval: RunResult.Interval) throws(MergeError) -> RunResult.Interval {
        do {
            return try interval.withFigures()
        } catch {
            throw MergeError(description: error.description)
        }
    }

    /// Adds `other` (of `report`) into `metrics`, refusing histograms of another layout (range or
    /// precision): their slots do not line up, so no sum of them is exact.
    private static func add(
        _ other: MetricSet, to metrics: inout MetricSet, at place: String, of report: LoadedReport, into first: LoadedReport
    ) throws(MergeError) {
        for (name, histogram) in other.histograms.sorted(by: { $0.key < $1.key }) {
            guard let mine = metrics.histograms[name], !mine.hasSameLayout(as: histogram) else { continue }
            throw MergeError(description: "\(report.source): \(place) \(name) has another histogram layout than in "
                + "\(first.source) (\(layout(histogram)) vs \(layout(mine))); only histograms of one layout add exactly")
        }
        do {
            try metrics.add(other)
        } catch {
            throw MergeError(description: "\(report.source): \(place): \(error.description)")
        }
    }

    /// `total += value` for counts read from reports (non-negative, up to 2^53 each): saturates at `Int.max`.
    private static func accumulate(_ total: inout Int, _ value: Int) {
        let (sum, overflow) = total.addingReportingOverflow(value)
        total = overflow ? .max : sum
    }

    private static func layout(_ histogram: Histogram) -> String {
        "\(histogram.lowestDiscernibleValue)...\(histogram.highestTrackableValue) µs, \(histogram.significantDigits) digits"
    }
}

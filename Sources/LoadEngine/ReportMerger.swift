import Foundation
import Reporting

/// Why reports cannot be merged.
public struct MergeError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// Merges reports of one profile — the shards of a run, or runs made side by side — exactly: histograms
/// add slot by slot and counters add, so the merged percentiles are those of all samples together
/// (never an average of percentiles). Thresholds are evaluated again on the merged figures.
public enum ReportMerger {
    public static func merge(_ reports: [LoadedReport]) throws(MergeError) -> RunResult {
        guard let first = reports.first else { throw MergeError(description: "nothing to merge") }
        for report in reports.dropFirst() where report.profileDigest != first.profileDigest {
            throw MergeError(description: "\(report.source) ran a different profile than \(first.source) "
                + "(\(report.profileDigest) vs \(first.profileDigest)); only reports of one profile merge")
        }
        let shards = reports.compactMap(\.result.shard)
        if !shards.isEmpty {
            guard shards.count == reports.count, Set(shards.map(\.count)).count == 1 else {
                throw MergeError(description: "mix of shards of different splits and whole runs: "
                    + reports.map { "\($0.source) (\($0.result.shard?.description ?? "whole"))" }.joined(separator: ", "))
            }
            var seen: [Int: String] = [:]
            for report in reports {
                let shard = report.result.shard!
                if let other = seen[shard.index] {
                    throw MergeError(description: "\(report.source) and \(other) are both shard \(shard)")
                }
                seen[shard.index] = report.source
            }
        }
        var merged = first.result
        merged.shard = nil
        merged.mergedFrom = reports.map { report in
            report.result.shard.map { "\(report.source) (shard \($0))" } ?? report.source
        }
        for report in reports.dropFirst() {
            let other = report.result
            do {
                try merged.total.add(other.total)
                for scenario in other.scenarios {
                    guard let index = merged.scenarios.firstIndex(where: { $0.scenario.name == scenario.scenario.name }) else {
                        merged.scenarios.append(scenario)
                        continue
                    }
                    try merged.scenarios[index].metrics.add(scenario.metrics)
                    merged.scenarios[index].scenario.websocket.connections += scenario.scenario.websocket.connections
                }
                for (index, interval) in other.intervals.enumerated() {
                    if index < merged.intervals.count {
                        try merged.intervals[index].metrics.add(interval.metrics)
                        merged.intervals[index].liveConnections += interval.liveConnections
                        merged.intervals[index].end = max(merged.intervals[index].end, interval.end)
                    } else {
                        merged.intervals.append(interval)
                    }
                }
            } catch {
                throw MergeError(description: "\(report.source): \(error.description)")
            }
            merged.invariants.add(other.invariants)
            merged.loops += other.loops
            merged.startedAt = min(merged.startedAt, other.startedAt)
            merged.endedAt = max(merged.endedAt, other.endedAt)
            merged.elapsed = max(merged.elapsed, other.elapsed)
            merged.interruptedBy = merged.interruptedBy ?? other.interruptedBy
            merged.abortedBy = merged.abortedBy ?? other.abortedBy
            merged.unfinishedConnections += other.unfinishedConnections
            // Each shard has its own server: the same timeline hit each shard's connections.
            for (index, record) in other.chaos.enumerated() {
                if index < merged.chaos.count && merged.chaos[index].action == record.action {
                    merged.chaos[index].affected += record.affected
                    merged.chaos[index].firedAt = max(merged.chaos[index].firedAt, record.firedAt)
                } else {
                    merged.chaos.append(record)
                }
            }
            // Peaks from different processes cannot be added exactly (their 100 ms slots differ); the sums
            // bound the combined peaks from above.
            if let storm = other.reconnectStorm {
                merged.reconnectStorm = .init(
                    peakReconnectsPer100ms: (merged.reconnectStorm?.peakReconnectsPer100ms ?? 0) + storm.peakReconnectsPer100ms,
                    peakDropsPer100ms: (merged.reconnectStorm?.peakDropsPer100ms ?? 0) + storm.peakDropsPer100ms)
            }
            merged.liveHandlesAfterStop += other.liveHandlesAfterStop
            merged.waitingTasksAfterStop += other.waitingTasksAfterStop
        }
        for (index, scenario) in merged.scenarios.enumerated() {
            if let position = merged.profile.scenarios.firstIndex(where: { $0.name == scenario.scenario.name }) {
                merged.profile.scenarios[position] = merged.scenarios[index].scenario
            }
        }
        merged.thresholds = ThresholdEvaluator.evaluate(
            merged.profile.thresholds, total: merged.total,
            scenarios: merged.scenarios.map { ($0.scenario.name, $0.metrics) },
            seconds: min(merged.elapsed, merged.profile.duration).seconds)
        return merged
    }
}

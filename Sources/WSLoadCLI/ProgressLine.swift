import Foundation
import JSON
import LoadEngine
import Reporting
import Runtime

/// The progress protocol of `wsload run --processes`: each shard child writes one JSON line per gather (what its
/// ``RunProgress`` says, histograms in their compact serialized form, so the parent's `--metrics` and
/// `--dashboard` get exact figures), and the parent sums the latest line of every child into one ``RunProgress``
/// for its one display.
enum ProgressLine {
    /// One progress as one line (ending in `\n`).
    static func encode(_ progress: RunProgress) -> String {
        let object: JSONObject = [
            "elapsed": .number(progress.elapsed.seconds), "duration": .number(progress.duration.seconds),
            "live": JSONValue(progress.liveConnections), "target": JSONValue(progress.targetConnections),
            "recentSeconds": .number(progress.recentSeconds), "stopping": .bool(progress.isStopping),
            "stopLeft": .number(progress.stopTimeLeft.seconds),
            "recent": progress.recent.json(seconds: 0, operations: 0), "total": progress.total.json(seconds: 0, operations: 0),
            "scenarios": .array(progress.scenarios.map { scenario in
                [
                    "name": .string(scenario.name), "live": JSONValue(scenario.liveConnections),
                    "target": JSONValue(scenario.targetConnections), "total": scenario.total.json(seconds: 0, operations: 0),
                ]
            }),
            "invariants": progress.invariants.json(),
        ]
        return JSONValue.object(object).formatted(pretty: false) + "\n"
    }

    /// Reads a line ``encode(_:)`` wrote. - Throws: ``ReportFormatError`` naming the field.
    static func decode(_ line: String) throws -> RunProgress {
        let value = try JSONValue(parsing: line)
        func number(_ key: String) throws(ReportFormatError) -> Double {
            guard let number = value[key]?.numberValue, number.isFinite, number >= 0 else {
                throw ReportFormatError(path: "progress.\(key)", reason: "expected a non-negative number")
            }
            return number
        }
        func count(_ entry: JSONValue, _ key: String) throws(ReportFormatError) -> Int {
            guard let count = entry[key]?.integerValue, count >= 0 else {
                throw ReportFormatError(path: "progress.\(key)", reason: "expected a count")
            }
            return count
        }
        var progress = RunProgress.assembled(
            elapsed: .seconds(try number("elapsed")), duration: .seconds(try number("duration")),
            liveConnections: try count(value, "live"), targetConnections: try count(value, "target"),
            recent: try MetricSet(json: value["recent"] ?? .null, path: "progress.recent"),
            recentSeconds: try number("recentSeconds"),
            total: try MetricSet(json: value["total"] ?? .null, path: "progress.total"),
            isStopping: value["stopping"]?.boolValue ?? false)
        progress.stopTimeLeft = Duration.seconds(try number("stopLeft"))
        for (index, entry) in (value["scenarios"]?.arrayValue ?? []).enumerated() {
            progress.scenarios.append(ScenarioProgress(
                name: entry["name"]?.stringValue ?? "", liveConnections: try count(entry, "live"),
                targetConnections: try count(entry, "target"),
                total: try MetricSet(json: entry["total"] ?? .null, path: "progress.scenarios[\(index)].total")))
        }
        progress.invariants = try InvariantReport(json: value["invariants"] ?? .object([:]), path: "progress.invariants")
        return progress
    }

    /// The run as one progress: connections, targets, rates and totals summed over the children's latest lines;
    /// the slowest child's phase and clock (the least elapsed; stopping only when every child is).
    static func aggregate(_ children: [RunProgress]) -> RunProgress? {
        guard let slowest = children.min(by: { $0.elapsed < $1.elapsed }) else { return nil }
        let isStopping = children.allSatisfy(\.isStopping)
        var sum = RunProgress.assembled(
            elapsed: slowest.elapsed, duration: slowest.duration, liveConnections: 0, targetConnections: 0,
            recent: MetricSet(), recentSeconds: children.map(\.recentSeconds).max() ?? 0, total: MetricSet(),
            isStopping: isStopping)
        sum.stopTimeLeft = children.map(\.stopTimeLeft).max() ?? .zero
        for child in children {
            sum.liveConnections &+= child.liveConnections
            sum.targetConnections &+= child.targetConnections
            try? sum.recent.add(child.recent)  // one binary wrote every line: the layouts match
            try? sum.total.add(child.total)  // likewise
            sum.invariants.add(child.invariants)
            guard !isStopping else { continue }
            for scenario in child.scenarios {
                guard let index = sum.scenarios.firstIndex(where: { $0.name == scenario.name }) else {
                    sum.scenarios.append(scenario)
                    continue
                }
                sum.scenarios[index].liveConnections &+= scenario.liveConnections
                sum.scenarios[index].targetConnections &+= scenario.targetConnections
                try? sum.scenarios[index].total.add(scenario.total)  // likewise: one layout
            }
        }
        return sum
    }
}

extension ProgressLine {
    /// Writes `progress` as one line to `descriptor` (a shard child's progress pipe), blocking: the parent reads it
    /// all the time. A parent that is gone (EPIPE) is not an error of the run: the control pipe's end stops it.
    static func send(_ progress: RunProgress, to descriptor: Int32) {
        ProcessPipe.write(encode(progress), to: descriptor)
    }
}

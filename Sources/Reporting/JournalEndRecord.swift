import Foundation
import JSON
import Profile

/// The end record of a run journal (`"record": "end"`, docs/REPORT.md "The run journal"): the last line of the journal
/// of a run that completed, written just before its report (``RunJournal/finish(_:)``). It holds what the report has
/// that no interval does — the end time and elapsed time, interruption and abort, the totals (with what was counted
/// after the last interval, `ws.unfinished_at_stop`), the invariants (with the checks made after the stop), the leak
/// counts after the stop, the chaos records and the reconnect storm — so a journal with it (a kept interval log, or
/// the journal of a run whose report could not be written) recovers as the run's complete report.
package struct JournalEndRecord: Sendable {
    /// How many interval records come before it (the reader checks it: a whole journal).
    package var intervals: Int
    package var endedAt: Date
    package var elapsed: Duration
    package var interruptedBy: String?
    package var abortedBy: String?
    package var unfinishedConnections: Int
    package var liveHandlesAfterStop: Int
    package var waitingTasksAfterStop: Int
    /// The run's totals, as its report has them.
    package var total: MetricSet
    /// Per scenario, in the header's order.
    package var scenarios: [MetricSet]
    package var invariants: InvariantReport
    package var chaos: [RunResult.ChaosRecord]
    package var reconnectStorm: RunResult.ReconnectStorm?

    /// The record of `result`, after `intervals` interval records.
    static func json(_ result: RunResult, intervals: Int) -> JSONValue {
        let seconds = min(result.elapsed, result.profile.duration).seconds
        var record: JSONObject = [
            "record": "end", "intervals": JSONValue(intervals), "end": .string(RunReport.timestamp(result.endedAt)),
            // Unrounded (the report writes milliseconds): its rates are computed from it, and a recovery's must agree.
            "elapsedSeconds": .number(result.elapsed.seconds),
            "interruptedBy": JSONValue(result.interruptedBy), "abortedBy": JSONValue(result.abortedBy),
            "unfinishedConnections": JSONValue(result.unfinishedConnections),
            "liveHandlesAfterStop": JSONValue(result.liveHandlesAfterStop),
            "waitingTasksAfterStop": JSONValue(result.waitingTasksAfterStop),
            "metrics": result.total.json(seconds: seconds, operations: result.total.operations),
            "scenarios": .array(result.scenarios.map {
                ["name": .string($0.scenario.name), "metrics": $0.metrics.json(seconds: seconds, operations: $0.metrics.operations)]
            }),
            "invariants": result.invariants.json(),
            "chaos": .array(result.chaos.map { record in
                ["at": .number(RunReport.roundedSeconds(record.at)), "firedAt": .number(RunReport.roundedSeconds(record.firedAt)),
                 "action": .string(record.action), "affected": JSONValue(record.affected)]
            }),
        ]
        if let storm = result.reconnectStorm {
            record["reconnectStorm"] = [
                "peakReconnectsPer100ms": JSONValue(storm.peakReconnectsPer100ms),
                "peakDropsPer100ms": JSONValue(storm.peakDropsPer100ms),
            ]
        }
        return .object(record)
    }

    /// The longest time the record may name (about 31 years), as for an interval's bounds.
    private static let maximumSeconds = 1e9

    /// Reads an end record, checked as untrusted input: every failure names its field.
    init(_ record: JSONValue, header: JournalReader.Header, budget: inout HistogramDecodeBudget,
         fail: (String) -> JournalFormatError) throws(JournalFormatError) {
        func count(_ key: String, in value: JSONValue? = nil) throws(JournalFormatError) -> Int {
            guard let number = (value ?? record)[key]?.integerValue, number >= 0 else { throw fail("\(key): expected a count") }
            return number
        }
        func seconds(_ value: JSONValue?, _ path: String) throws(JournalFormatError) -> Duration {
            guard let seconds = value?.numberValue, seconds.isFinite, seconds >= 0, seconds <= Self.maximumSeconds else {
                throw fail("\(path): expected seconds from 0 to \(Int(Self.maximumSeconds))")
            }
            return .nanoseconds(Int64((seconds * 1e9).rounded()))  // at most 1e18: within Int64
        }
        func optionalText(_ key: String) throws(JournalFormatError) -> String? {
            switch record[key] {
            case nil, .null?: return nil
            case .string(let text)?: return text
            default: throw fail("\(key): expected a string or null")
            }
        }
        func metrics(_ value: JSONValue?, at path: String) throws(JournalFormatError) -> MetricSet {
            guard let value else { throw fail("\(path): missing") }
            do {
                return try MetricSet(json: value, path: path, budget: &budget)
            } catch {
                throw fail(error.description)
            }
        }
        intervals = try count("intervals")
        guard let text = record["end"]?.stringValue, let ended = parseTimestamp(text) else { throw fail("end: not an ISO 8601 time") }
        endedAt = ended
        elapsed = try seconds(record["elapsedSeconds"], "elapsedSeconds")
        interruptedBy = try optionalText("interruptedBy")
        abortedBy = try optionalText("abortedBy")
        unfinishedConnections = try count("unfinishedConnections")
        liveHandlesAfterStop = try count("liveHandlesAfterStop")
        waitingTasksAfterStop = try count("waitingTasksAfterStop")
        total = try metrics(record["metrics"], at: "metrics")
        let names = header.profile.scenarios.map(\.name)
        guard let entries = record["scenarios"]?.arrayValue, entries.count == names.count else {
            throw fail("scenarios: expected one entry per scenario (\(names.count))")
        }
        scenarios = []
        for (position, entry) in entries.enumerated() {
            guard entry["name"]?.stringValue == names[position] else {
                throw fail("scenarios[\(position)].name: expected \"\(names[position])\"")
            }
            scenarios.append(try metrics(entry["metrics"], at: "scenarios[\(position)].metrics"))
        }
        do {
            invariants = try InvariantReport(json: record["invariants"] ?? .object(JSONObject()), path: "invariants")
        } catch {
            throw fail(error.description)
        }
        chaos = []
        for (index, entry) in (record["chaos"]?.arrayValue ?? []).enumerated() {
            let path = "chaos[\(index)]"
            guard let action = entry["action"]?.stringValue else { throw fail("\(path).action: expected a string") }
            chaos.append(.init(at: try seconds(entry["at"], path + ".at"), firedAt: try seconds(entry["firedAt"], path + ".firedAt"),
                               action: action, affected: try count("affected", in: entry)))
        }
        if let storm = record["reconnectStorm"], storm != .null {
            reconnectStorm = .init(peakReconnectsPer100ms: UInt64(try count("peakReconnectsPer100ms", in: storm)),
                                   peakDropsPer100ms: UInt64(try count("peakDropsPer100ms", in: storm)))
        }
    }
}

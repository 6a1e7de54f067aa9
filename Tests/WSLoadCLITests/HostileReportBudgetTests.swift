import Foundation
import Histogram
import JSON
import Profile
import Testing
import TestSupport

@testable import Reporting

/// Crafted reports and journals whose tiny histogram blobs each declare a huge layout (issue 13 item 2): one
/// decode budget for the whole command, not one per file or per journal record.
@Suite("hostile files: one histogram decode budget per command", .serialized, .timeLimit(.minutes(4)))
struct HostileReportBudgetTests {
    /// The largest layout a blob may declare (at most 2^20 slots): an empty one serializes to a few dozen bytes.
    static let hugeEmpty: Histogram = {
        for bits in (20...63).reversed() {
            let highest: UInt64 = bits == 64 ? .max : (1 << UInt64(bits)) - 1
            for digits in (1...5).reversed() {
                if let slots = Histogram.slotCount(lowest: 1, highest: highest, significantDigits: digits),
                    slots <= Histogram.maximumDecodedCounts, slots > Histogram.maximumDecodedCounts / 2
                {
                    return Histogram(lowestDiscernibleValue: 1, highestTrackableValue: highest, significantDigits: digits)
                }
            }
        }
        preconditionFailure("no layout near 2^20 slots")
    }()

    static let profileText = """
        {"version": 1, "name": "crafted", "target": "ws://127.0.0.1:9/", "duration": "1h",
         "scenarios": [{"name": "echo", "pattern": "echo", "connections": 1}]}
        """

    /// A journal: its header, then `intervals` records whose scenario metrics each carry one huge empty blob (the
    /// interval totals stay small, so what a reader keeps stays small: only what it decodes is large).
    static func journal(intervals: Int, hugeIn key: String = "scenarios") throws -> [UInt8] {
        let profile = try ProfileDecoder.decode(Array(profileText.utf8))
        var lines = [RunJournal.headerRecord(profile: profile, seed: 1, shard: nil, loops: 1, startedAt: Date(timeIntervalSince1970: 0),
                                             report: "r.json", toolVersion: "test", commit: nil, runID: "crafted-run")
            .formatted(pretty: false)]
        var huge = MetricSet()
        huge.histograms[Metric.messageRoundTrip.name] = hugeEmpty
        let small = MetricSet()
        let template = RunJournal.intervalRecord(
            .init(start: .zero, end: .seconds(1), liveConnections: 0, metrics: key == "metrics" ? huge : small), index: 0,
            scenarios: [(name: "echo", metrics: key == "scenarios" ? huge : small)], invariants: InvariantReport())
        guard case .object(var object) = template else { preconditionFailure("an interval record is an object") }
        for index in 0..<intervals {
            object["index"] = JSONValue(index)
            object["start"] = .number(Double(index))
            object["end"] = .number(Double(index + 1))
            lines.append(JSONValue.object(object).formatted(pretty: false))
        }
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    @Test("a journal of many small records each declaring ~2^20 slots is refused once they pass the budget, not decoded per record")
    func journalSharesOneBudget() async throws {
        let scratch = try RunScratch()
        let slots = Self.hugeEmpty.slotCount
        // One record more than the whole budget holds. Before the fix each record's metric sets had a fresh 2^28-slot
        // budget: this journal was recovered (exit 0) after decoding ~2.5 GiB of zeroed counts.
        let records = HistogramDecodeBudget.commandSlots / slots + 1
        let path = scratch.path("r.json.partial")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(try Self.journal(intervals: records))))
        let result = await runCLIArray(["report", "--recover", path, "--out", scratch.path("r.json")])
        #expect(result.code == .invalidInput, "exit \(result.code): \(result.error)")
        #expect(result.error.contains(path) && result.error.contains("decode budget"), "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("r.json")))
    }

    @Test("a journal within the budget recovers, the same budget taken by every record")
    func journalWithinBudgetRecovers() throws {
        let slots = Self.hugeEmpty.slotCount
        var budget = HistogramDecodeBudget(slots: 3 * slots)
        _ = try JournalRecovery(bytes: Self.journal(intervals: 3), source: "j", name: "j", budget: &budget)
        #expect(budget.remainingSlots == 0)
        var small = HistogramDecodeBudget(slots: 3 * slots - 1)
        let error = #expect(throws: JournalFormatError.self) {
            _ = try JournalRecovery(bytes: Self.journal(intervals: 3), source: "j", name: "j", budget: &small)
        }
        #expect(error?.description.contains("decode budget") == true, "\(String(describing: error))")
    }

    @Test("several crafted reports read with one budget (what merge and compare do): the one that passes it is refused by path")
    func reportsShareOneBudget() async throws {
        let scratch = try RunScratch()
        let slots = Self.hugeEmpty.slotCount
        // A report whose two intervals carry one huge empty blob each (plus the totals: their sum).
        var budget = HistogramDecodeBudget()
        var recovered = try JournalRecovery(bytes: Self.journal(intervals: 2, hugeIn: "metrics"), source: "j", name: "j",
                                            budget: &budget)
        recovered.result.recoveredFrom = nil  // a complete run's report: merge refuses incomplete ones
        let document = RunReport.json(recovered.result, toolVersion: "test", commit: nil)
        var paths: [String] = []
        for index in 0..<3 {
            paths.append(scratch.path("r\(index).json"))
            var text = document.formatted(pretty: false)
            // Each its own run, so the duplicate check is not what refuses them.
            text = text.replacingOccurrences(of: "crafted-run", with: "crafted-run-\(index)")
            #expect(FileManager.default.createFile(atPath: paths[index], contents: Data(text.utf8)))
        }
        let perReport = 3 * slots  // two intervals and the total
        var shared = HistogramDecodeBudget(slots: 2 * perReport + slots)
        _ = try LoadedReport(contentsOf: paths[0], budget: &shared)
        _ = try LoadedReport(contentsOf: paths[1], budget: &shared)
        let error = #expect(throws: ReportFormatError.self) { _ = try LoadedReport(contentsOf: paths[2], budget: &shared) }
        #expect(error?.path.hasPrefix(paths[2]) == true && error?.reason.contains("decode budget") == true,
                "\(String(describing: error))")
        // The command reads them all the same way: merge of the three, fine with the real budget, names no problem.
        let merged = await runCLIArray(["merge", paths[0], paths[1], paths[2], "--out", scratch.path("m.json")])
        #expect(merged.code == .success, "\(merged.error)")
    }
}

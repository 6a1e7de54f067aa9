import Foundation
import JSON
import LoadEngine
import Profile
import Reporting
import Testing
import WSLoadCLI

/// README, "The run as an oracle": each invariant lists how often it was checked, its violations — every
/// one counted — and up to five examples. The cap holds in a run's report, when a report is read back,
/// and after a merge.
@Suite("Invariant examples: at most five, every violation counted", .serialized, .timeLimit(.minutes(2)))
struct InvariantExampleCapTests {
    private static let invariant = Invariant.connectedAfterHandshake.rawValue

    /// Eight clients that each declare themselves connected before the 101: eight violations of one invariant.
    private func eightViolations() async throws -> RunResult {
        var faults = FaultSwitches()
        faults.connectedBeforeHandshake = true
        return try await LoadRun(profile: try profile("""
            {"version": 1, "name": "cap", "target": "embedded", "duration": "20s", "seed": 6,
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 8, "messagesPerConnection": 2}]}
            """), faults: faults).hostedRun()
    }

    private func examples(_ report: JSONValue) throws -> [JSONValue] {
        try #require(report["invariants"]?[Self.invariant]?["examples"]?.arrayValue, "no examples for \(Self.invariant)")
    }

    @Test("a run with eight violations of one invariant counts eight and keeps five examples, in the report and read back")
    func runKeepsFive() async throws {
        let result = try await eightViolations()
        #expect(result.invariants.violations[Self.invariant] == 8, "\(result.invariants)")
        #expect(result.invariants.examples[Self.invariant]?.count == 5, "\(result.invariants)")
        let report = RunReport.json(result, toolVersion: "test", commit: nil)
        #expect(report["invariants"]?[Self.invariant]?["violations"]?.integerValue == 8)
        let listed = try examples(report)
        #expect(listed.count == 5)
        #expect(listed.allSatisfy { $0["detail"]?.stringValue?.contains("before the 101 was validated") == true }, "\(listed)")
        // Five different clients: the examples are the first five violations, not one repeated.
        #expect(Set(listed.compactMap { $0["actor"]?.integerValue }).count == 5, "\(listed)")
        let loaded = try LoadedReport(document: report, source: "cap.json")
        #expect(loaded.result.invariants.violations[Self.invariant] == 8)
        #expect(loaded.result.invariants.examples[Self.invariant]?.count == 5)
    }

    @Test("merging two such runs counts sixteen violations and still lists five examples (API and `wsload merge`)")
    func mergeKeepsFive() async throws {
        let first = try await eightViolations()
        let second = try await eightViolations()
        let reports = try [(first, "a.json"), (second, "b.json")].map { result, source in
            try LoadedReport(document: RunReport.json(result, toolVersion: "test", commit: nil), source: source)
        }
        let merged = try ReportMerger.merge(reports)
        #expect(merged.invariants.violations[Self.invariant] == 16, "\(merged.invariants)")
        #expect(merged.invariants.examples[Self.invariant]?.count == 5, "\(merged.invariants)")

        let directory = try scratchDirectory("cap-merge")
        defer { try? FileManager.default.removeItem(at: directory) }
        let paths = try reports.map { report in
            let path = directory.appendingPathComponent(report.source).path
            try SyntheticReport.write(report, to: path)
            return path
        }
        let out = directory.appendingPathComponent("merged.json").path
        let result = await wsload(["merge"] + paths + ["-o", out])
        #expect(result.code == .success, "\(result.error)")
        let document = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: out))))
        #expect(document["invariants"]?[Self.invariant]?["violations"]?.integerValue == 16)
        #expect(try examples(document).count == 5)
    }

    @Test("adding reports and reading a report with more than five examples keep five")
    func addAndReadKeepFive() throws {
        func report(examples: Int, from actor: Int) -> InvariantReport {
            var report = InvariantReport()
            report.checked["x"] = 100
            report.violations["x"] = UInt64(examples)
            report.examples["x"] = (0..<examples).map { .init(actor: actor + $0, scenario: "s", detail: "d\(actor + $0)", history: []) }
            return report
        }
        var sum = report(examples: 3, from: 0)
        sum.add(report(examples: 4, from: 10))
        #expect(sum.violations["x"] == 7)
        // The first five, in order: the earlier report's three, then two of the next.
        #expect(sum.examples["x"]?.map(\.actor) == [0, 1, 2, 10, 11])
        #expect(InvariantReport.maximumExamples == 5)

        // A report written elsewhere with nine examples reads back with five, and all nine violations.
        let written = report(examples: 9, from: 0).json()
        #expect(written["x"]?["examples"]?.arrayValue?.count == 9)
        let read = try InvariantReport(json: written, path: "invariants")
        #expect(read.violations["x"] == 9 && read.examples["x"]?.count == 5)
    }
}

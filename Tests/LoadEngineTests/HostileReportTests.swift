import Crypto
import Foundation
import Histogram
import JSON
import Reporting
import Testing
import TestSupport
import WSLoadCLI

/// Crafted report files (issue 13): numbers that trapped the readers, blobs that allocated gigabytes, the same
/// run given twice to merge. Each runs the built `wsload` as a child, so a trap fails one test, not the suite.
@Suite("hostile reports: crafted numbers and duplicate runs", .serialized, .timeLimit(.minutes(4)))
struct HostileReportTests {
    /// A synthetic report's document, as a file would hold it.
    private func baseDocument() throws -> JSONValue {
        var random = SeededRandomNumberGenerator(seed: 7)
        let metrics = SyntheticReport.echoMetrics(median: 500, count: 200, random: &random)
        let report = try SyntheticReport.loaded(intervals: [metrics, metrics])
        return RunReport.json(report.result, toolVersion: "test", commit: nil)
    }

    private func write(_ document: JSONValue, to path: String) throws {
        try Data((document.formatted() + "\n").utf8).write(to: URL(fileURLWithPath: path))
    }

    /// `document` with the value at `path` (object keys, or array indexes) replaced by `value`.
    private func replacing(_ document: JSONValue, _ path: [String], with value: JSONValue) -> JSONValue {
        guard let key = path.first else { return value }
        if case .array(var elements) = document, let index = Int(key) {
            elements[index] = replacing(elements[index], Array(path.dropFirst()), with: value)
            return .array(elements)
        }
        guard var object = document.objectValue else { return document }
        object[key] = replacing(object[key] ?? .object(JSONObject()), Array(path.dropFirst()), with: value)
        return .object(object)
    }

    @Test("numbers that trapped the reader or allocated gigabytes are refused: exit 65 with the JSON path")
    func craftedNumbers() async throws {
        let directory = try scratchDirectory("hostile-report")
        defer { try? FileManager.default.removeItem(at: directory) }
        let base = try baseDocument()
        var huge = Histogram(lowestDiscernibleValue: 1, highestTrackableValue: (1 << 47) - 1, significantDigits: 5)
        huge.record(1)
        var wrapping = Histogram()
        wrapping.record(10, count: UInt64(Int64.max))
        wrapping.record(20, count: UInt64(Int64.max))
        let storm: JSONValue = ["peakReconnectsPer100ms": -1, "peakDropsPer100ms": 0]
        let chaos: JSONValue = [["at": .number(1e300), "firedAt": 1, "action": "drop", "affected": 1]]
        // (what is changed, the value, the place the error must name); before the fixes: trap, trap, trap,
        // trap, trap, decoded (32 MiB for the blob), and a summary that trapped on Int(totalCount).
        let cases: [([String], JSONValue, String)] = [
            (["run", "elapsedSeconds"], .number(1e300), "run.elapsedSeconds"),
            (["intervals", "0", "start"], .number(1e16), "intervals[0].start"),
            (["intervals", "1", "end"], .number(-1), "intervals[1].end"),
            (["run", "reconnectStorm"], storm, "run.reconnectStorm.peakReconnectsPer100ms"),
            (["chaos"], chaos, "chaos[0].at"),
            (["total", "metrics", "ws.message_rtt", "histogram"], .string(huge.serialized()), "total.metrics.ws.message_rtt.histogram"),
            (["intervals", "0", "metrics", "ws.message_rtt", "histogram"], .string(wrapping.serialized()),
             "intervals[0].metrics.ws.message_rtt.histogram"),
        ]
        for (index, (path, value, place)) in cases.enumerated() {
            let file = directory.appendingPathComponent("crafted-\(index).json").path
            try write(replacing(base, path, with: value), to: file)
            // An interval's blob stays compressed until the interval is used (here by the HTML timeline).
            let uses = place.hasPrefix("intervals[") && place.hasSuffix(".histogram") ? ["--html", file + ".html"] : []
            let result = try await wsloadProcess(["report", file] + uses)
            #expect(result.code.rawValue == 65, "\(place): exit \(result.code.rawValue): \(result.error)")
            #expect(result.error.contains(place), "\(place): \(result.error)")
        }
    }

    @Test("merge refuses one run given twice (the same file, a copy, an old id-less file twice, a merge and its input)")
    func duplicateRuns() async throws {
        let directory = try scratchDirectory("hostile-merge")
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let base = try baseDocument()
        try write(replacing(base, ["run", "id"], with: "0123456789abcdef0123456789abcdef"), to: path("a.json"))
        try FileManager.default.copyItem(atPath: path("a.json"), toPath: path("copy.json"))
        try write(replacing(base, ["run", "id"], with: "fedcba9876543210fedcba9876543210"), to: path("b.json"))
        try write(base, to: path("old.json"))

        // Before: each of these merged, doubling every count.
        for inputs in [["a.json", "a.json"], ["a.json", "copy.json"], ["old.json", "old.json"]] {
            let result = try await wsloadProcess(["merge"] + inputs.map(path) + ["-o", path("m.json")])
            #expect(result.code.rawValue == 65, "\(inputs): \(result.error)")
            #expect(result.error.contains(path(inputs[1]) + " and " + path(inputs[0])) && result.error.contains("same run"),
                    "\(inputs): \(result.error)")
        }
        // Different runs merge; the merged report has its own id and lists the ids it adds up.
        let merge = try await wsloadProcess(["merge", path("a.json"), path("b.json"), path("old.json"), "-o", path("m.json")])
        #expect(merge.code == .success, "\(merge.error)")
        let merged = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: path("m.json")))))
        let list = try #require(merged["run"]?["mergedRunIds"]?.arrayValue)
        let ids = list.compactMap(\.stringValue)
        #expect(ids.count == 3 && ids[0] == "0123456789abcdef0123456789abcdef" && ids[2].hasPrefix("sha256:"))
        let id = try #require(merged["run"]?["id"]?.stringValue)
        #expect(id.count == 32 && !ids.contains(id))
        // The merge and one of its runs: that run would count twice.
        let again = try await wsloadProcess(["merge", path("m.json"), path("b.json"), "-o", path("m2.json")])
        #expect(again.code.rawValue == 65 && again.error.contains("same run"), "\(again.error)")
    }

    @Test("a report's temporary is never written through a symlink planted at its name")
    func temporaryIsNotFollowed() throws {
        let directory = try scratchDirectory("hostile-tmp")
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("victim").path
        try Data("keep".utf8).write(to: URL(fileURLWithPath: target))
        let report = directory.appendingPathComponent("r.json").path
        let planted = directory.appendingPathComponent(".r.json.\(getpid()).tmp").path
        try FileManager.default.createSymbolicLink(atPath: planted, withDestinationPath: target)
        try RunReport.writeAtomically("{}\n", to: report)
        // Before: the temporary's name was opened through the symlink, overwriting the victim.
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep")
        #expect(try String(contentsOfFile: report, encoding: .utf8) == "{}\n")
        let attributes = try FileManager.default.attributesOfItem(atPath: report)
        let mode = try #require(attributes[.posixPermissions] as? Int)
        #expect(mode & 0o600 == 0o600 && mode & 0o022 == 0 && mode & 0o111 == 0, "mode \(String(mode, radix: 8))")
    }
}

import Foundation
import Testing
import TestSupport

/// Flows that must end when the run does: a loop whose steps never wait, and a preset handshake the server refuses.
@Suite("wsload run stops flows", .serialized, .timeLimit(.minutes(4)))
struct FlowStopTests {
    @Test("a loop of steps that never wait (mark, if, think 0, a skipped send) still ends with the run",
          arguments: [#"{"mark": "m"}"#, #"{"think": "0ms"}"#, #"{"if": {"var": "x", "exists": true, "then": [{"mark": "m"}]}}"#,
                      #"{"send": {"text": "${y}"}}"#])
    func loopThatNeverWaits(_ step: String) async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "spin", "target": "embedded", "duration": "2s", "gracefulStop": "2s",
             "scenarios": [{"name": "spin", "pattern": "flow", "connections": 2, "steps": [
               {"send": {"text": "x"}},
               {"name": "x", "expect": {"text": {"regex": "(x)"}, "capture": {"x": {"group": 1}}, "within": "10s"}},
               {"if": {"var": "x", "equals": "no", "then": [{"send": {"text": "y"}},
                 {"name": "y", "expect": {"text": {"regex": "(y)"}, "capture": {"y": {"group": 1}}, "within": "1s"}}]}},
               {"loop": {"steps": [\(step)]}}]}]}
            """)
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("report.json")])
        // Before the fix the loop pinned its event loop: the stop never reached it and the run never ended.
        let status = try await child.waitForExit(within: .seconds(90))
        #expect(status == 0, "\(child.output)\n\(child.errors)")
        let report = try scratch.json("report.json")
        #expect(report["invariantsHeld"]?.boolValue == true, "\(child.output)")
    }
}

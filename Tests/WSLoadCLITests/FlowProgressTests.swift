import Foundation
import Testing
import TestSupport

/// A flow run's progress line: flows have no message round trip (`rtt -` said nothing), so the line shows the
/// named step with the highest p99 of the last interval, e.g. `said p99 12ms` (ProgressDisplay.slowestStep).
@Suite("wsload run progress for a flow", .serialized, .timeLimit(.minutes(3)))
struct FlowProgressTests {
    @Test("on a terminal: the block shows a step's p99 in place of the round trip")
    func slowestStepOnTheProgressLine() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "chat", "target": "embedded", "duration": "60s", "gracefulStop": "2s",
             "scenarios": [{"name": "chat", "pattern": "flow", "path": "/chat", "connections": 3, "steps": [
               {"send": {"json": {"type": "join", "room": "r"}}},
               {"name": "join", "expect": {"json": [{"path": "$.type", "equals": "joined"}], "capture": {"me": "$.id"},
                                           "within": "10s"}},
               {"loop": {"rate": 20, "steps": [
                 {"send": {"json": {"type": "say", "room": "r", "text": "hi ${iteration}"}}},
                 {"name": "said", "expect": {"json": [{"path": "$.type", "equals": "said"},
                                                      {"path": "$.from", "equals": "${me}"}], "within": "10s"}}]}}]}]}
            """)
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("report.json")], environment: ["NO_COLOR": "1"],
                                      terminal: true)
        // The loop runs for the whole minute, so every interval after the first has `said` samples.
        try await child.wait(for: "a progress block naming a step's p99") {
            child.output.contains("msgs/s   said p99 ") || child.output.contains("msgs/s   join p99 ")
        }
        child.signal(SIGINT)
        #expect(try await child.waitForExit() == 130, "\(child.output)")
    }
}

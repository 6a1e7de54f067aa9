import Foundation
import JSON
import Runtime
import Testing
import TestSupport
import WSLoadCLI

/// `wsload run --dashboard` in this process, started in the background: its stderr is watched for the address it
/// prints; the run ends by itself (its duration, then `--linger`).
private final class DashboardRun: Sendable {
    let captured = CapturedOutput()
    let task: Task<ExitCode, Never>

    init(_ arguments: [String]) {
        let output = captured.commandOutput
        task = Task { await WSLoad.main(arguments: arguments, output: output) }
    }

    /// `http://127.0.0.1:PORT` from the `dashboard: http://127.0.0.1:PORT/` line.
    func address() async throws -> String {
        var found: String?
        try await Deadline.waitUntil("the dashboard's address on stderr", timeout: .seconds(60), interval: .milliseconds(20)) {
            found = captured.error.split(separator: "\n").first { $0.hasPrefix("dashboard: http://") }
                .map { String($0.dropFirst("dashboard: ".count).dropLast()) }
            return found != nil || captured.error.contains("Error")
        }
        return try #require(found, "\(captured.error)")
    }
}

private let peers = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Peers")

/// A scenario name that is markup: the page must show it as text.
private let markupName = #"echo <img src=x onerror="window.pwned=1">"#

/// An echo profile against the embedded server that ramps up and back down, so every chart moves each second.
private func dashboardProfile(duration: String) -> String {
    """
    {"version": 1, "name": "dashboard", "target": "embedded", "duration": "\(duration)", "gracefulStop": "3s", "seed": 5,
     "scenarios": [{"name": \(JSONValue.string(markupName).formatted()), "pattern": "echo", "connections": 8,
                    "stages": [{"duration": "3s", "target": 8}, {"duration": "\(duration)", "target": 2}],
                    "schedule": {"model": "closed", "thinkTime": "5ms"}}],
     "thresholds": ["ws.message_rtt p99 < 10s", "errors rate < 50%"]}
    """
}

@Suite("Dashboard of a real run", .serialized, .timeLimit(.minutes(4)))
struct DashboardBrowserTests {
    @Test("wsload run --dashboard: /events gives hello, a frame a second and the summary; /summary.json after the end")
    func eventsOfARun() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", dashboardProfile(duration: "8s"))
        let run = DashboardRun(["run", profile, "--out", scratch.path("r.json"), "--dashboard", "127.0.0.1:0", "--linger", "8s"])
        let address = try await run.address()
        #expect(address.hasPrefix("http://127.0.0.1:"))
        let early = try await TestProcess.runWithStatusOffPool(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                                                "--max-time", "10", address + "/summary.json"])
        #expect(early.output == "404", "no summary while the run goes")
        // The whole stream: it ends after the summary (curl returns then, well before its own limit).
        let stream = try await TestProcess.runWithStatusOffPool(["curl", "-sN", "--max-time", "60", address + "/events"])
        #expect(stream.status == 0, "the stream ended by itself: \(stream.errors)")
        let blocks = stream.output.components(separatedBy: "\n\n").filter { !$0.isEmpty }
        #expect(blocks.first?.hasPrefix("event: hello\ndata: {\"profile\":\"dashboard\",") == true, "\(blocks.prefix(1))")
        #expect(blocks.first?.contains(JSONValue.string(markupName).formatted()) == true, "names as JSON strings")
        #expect(blocks.last?.hasPrefix("event: summary\ndata: ") == true)
        let frames = try blocks.filter { $0.hasPrefix("event: frame\n") }.map { try JSONValue(parsing: String($0.dropFirst(19))) }
        #expect(frames.count >= 6, "about one a second of an 8 s run and its stop: \(frames.count)")
        #expect(frames.map { $0["n"]?.integerValue ?? -1 } == Array(0..<frames.count), "in order, none lost")
        #expect(frames.contains { ($0["received"]?.integerValue ?? 0) > 0 && ($0["latency"]?["ws.message_rtt"]?["p99"]?.integerValue ?? 0) > 0 })
        let summaryText = try #require(blocks.last).dropFirst("event: summary\ndata: ".count)
        let summary = try JSONValue(parsing: String(summaryText))
        #expect(summary["verdict"]?.stringValue == "passed" && summary["exitCode"]?.integerValue == 0, "\(summary)")
        #expect(summary["thresholds"]?.arrayValue?.count == 2)

        let final = try await TestProcess.runWithStatusOffPool(["curl", "-s", "--max-time", "10", address + "/summary.json"])
        #expect(final.status == 0)
        #expect(try JSONValue(parsing: final.output) == summary, "the same summary while lingering")
        let code = await run.task.value
        #expect(code == .success, "\(run.captured.error)")
        // The report's totals are the summary's.
        let report = try scratch.json("r.json")
        #expect(report["total"]?["metrics"]?["ws.messages_received"]?["count"]?.integerValue
            == summary["totals"]?["received"]?.integerValue)
        let gone = try await TestProcess.runWithStatusOffPool(["curl", "-s", "--max-time", "5", address + "/"])
        #expect(gone.status != 0, "the endpoint stopped after --linger")
    }

    @Test("headless Chromium: the charts move between two screenshots, no console errors, the summary shows at the end")
    func pageInChromium() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", dashboardProfile(duration: "12s"))
        let run = DashboardRun(["run", profile, "--out", scratch.path("r.json"), "--dashboard", "127.0.0.1:0", "--linger", "15s"])
        let address = try await run.address()
        let paths = """
            JSON.stringify([...document.querySelectorAll('svg.chart path.series')].map((p) => p.getAttribute('d')))
            """
        let clip = [12, 58, 1256, 280]  // the first row of cards at 1280×800: connections, messages, latency
        let actions: JSONValue = [
            ["sleep": 3],  // a page that comes late: it draws the frames before it from the backlog
            ["open": .string(address + "/"), "width": 1280, "height": 800],
            ["wait": "window.wsloadDashboard && window.wsloadDashboard().frames >= 3", "timeout": 30],
            ["eval": "window.wsloadDashboard().first", "as": "first"],
            ["sleep": 0.3],
            ["eval": .string(paths), "as": "before"],
            ["eval": "document.querySelector('#table-scenarios td').textContent", "as": "scenario"],
            ["eval": "document.querySelectorAll('img').length + (window.pwned === undefined ? 0 : 100)", "as": "markup"],
            ["screenshot": .string(scratch.path("a.png")), "clip": .array(clip.map { JSONValue($0) })],
            ["sleep": 2.5],
            ["wait": "window.wsloadDashboard().frames >= 5", "timeout": 30],
            ["sleep": 0.3],
            ["eval": .string(paths), "as": "after"],
            ["screenshot": .string(scratch.path("b.png")), "clip": .array(clip.map { JSONValue($0) })],
            ["wait": "window.wsloadDashboard().hasSummary", "timeout": 60],
            ["sleep": 0.5],
            ["eval": "window.wsloadDashboard()", "as": "state"],
            ["eval": "!document.getElementById('summary').hidden", "as": "summaryShown"],
            ["eval": "document.getElementById('verdict').textContent", "as": "verdict"],
            ["eval": "document.getElementById('summary-thresholds').textContent", "as": "thresholds"],
            ["eval": "document.getElementById('status').textContent", "as": "status"],
            ["screenshot": .string(scratch.path("end.png"))],
        ]
        let actionsFile = try scratch.write("actions.json", actions.formatted())
        // cdp_browser.py bounds every step and kills Chromium however it ends; `timeout` bounds it as a whole.
        // `timeout` dies with the test process (TiedProcess), and the script with `timeout` (its own parent-death signal).
        let python = TiedProcess.command("/usr/bin/env", ["python3", peers.appendingPathComponent("cdp_browser.py").path, actionsFile])
        let browser = try await TestProcess.runWithStatusOffPool(["timeout", "-k", "10", "330", python.executable] + python.arguments)
        let code = await run.task.value
        #expect(code == .success, "\(run.captured.error)")
        #expect(browser.status == 0, "\(browser.output) \(browser.errors)")
        let result = try JSONValue(parsing: browser.output)
        #expect(result["console"]?.arrayValue?.isEmpty == true, "console: \(result["console"] ?? .null)")
        #expect(result["exceptions"]?.arrayValue?.isEmpty == true, "exceptions: \(result["exceptions"] ?? .null)")
        let values = try #require(result["values"])
        let before = try JSONValue(parsing: values["before"]?.stringValue ?? "")
        let after = try JSONValue(parsing: values["after"]?.stringValue ?? "")
        #expect((before.arrayValue?.count ?? 0) >= 5, "every chart drew its series: \(before)")
        #expect(before != after, "the charts' SVG paths changed")
        #expect(values["first"]?.integerValue == 0, "the late page has the run's first frame")
        let first = try Data(contentsOf: URL(fileURLWithPath: scratch.path("a.png")))
        let second = try Data(contentsOf: URL(fileURLWithPath: scratch.path("b.png")))
        #expect(first.starts(with: [0x89, 0x50, 0x4E, 0x47]) && second.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(first != second, "the chart area's pixels changed")
        #expect(values["scenario"]?.stringValue == markupName, "the scenario's name shown as text")
        #expect(values["markup"]?.integerValue == 0, "no element and no script from a name")
        #expect(values["summaryShown"]?.boolValue == true)
        #expect(values["verdict"]?.stringValue == "passed")
        #expect(values["thresholds"]?.stringValue?.contains("ws.message_rtt p99 < 10s") == true)
        #expect(values["status"]?.stringValue == "ended: passed", "no longer live after the summary")
        #expect(values["state"]?["stream"]?.stringValue == "ended")
    }
}

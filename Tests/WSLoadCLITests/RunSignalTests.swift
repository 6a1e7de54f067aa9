import Foundation
import JSON
import Testing
import TestSupport

/// SIGINT and SIGTERM to a real `wsload run` (README: "The first Ctrl-C stops gracefully and still writes the
/// complete report, marked interrupted (exit 130); a second exits at once"; "130 for SIGINT/SIGTERM after
/// writing what was collected; 143 for SIGTERM where no report applies").
@Suite("wsload run under signals", .serialized, .timeLimit(.minutes(3)))
struct RunSignalTests {
    /// Starts a run that would last a minute and waits until its first progress line shows every connection up.
    private func startLongRun(_ scratch: RunScratch, connections: Int = 5) async throws -> WSLoadProcess {
        let profile = try scratch.write("p.json", echoProfile(duration: "60s", connections: connections))
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("out/report.json")])
        try await child.wait(untilPrinted: "connections \(connections) up / \(connections) target", onStandardError: true)
        return child
    }

    @Test("SIGTERM: a graceful stop like the first Ctrl-C — the complete report marked interrupted by SIGTERM, exit 130")
    func sigterm() async throws {
        let scratch = try RunScratch()
        let child = try await startLongRun(scratch)
        child.signal(SIGTERM)
        let status = try await child.waitForExit()
        #expect(status == 130, "\(child.errors)")
        let report = try scratch.json("out/report.json")
        let run = try #require(report["run"])
        #expect(run["interrupted"] == .bool(true))
        #expect(run["interruptedBy"]?.stringValue == "SIGTERM")
        #expect(run["unfinishedConnections"]?.integerValue == 0)
        let elapsed = try #require(run["elapsedSeconds"]?.numberValue)
        #expect(elapsed < 60, "stopped by the signal, not by the duration")
        let metrics = try #require(report["total"]?["metrics"])
        let sent = try #require(metrics["ws.messages_sent"]?["count"]?.integerValue)
        #expect(sent > 0 && metrics["ws.messages_received"]?["count"]?.integerValue == sent)
        #expect(metrics["ws.disconnects"]?["byCode"]?["1000"]?.integerValue == 5)
        #expect(child.output.contains("interrupted by SIGTERM"), "\(child.output)")
        #expect(child.errors.contains("report: \(scratch.path("out/report.json"))"))
        #expect(try scratch.files(in: "out") == ["report.json"])
    }

    @Test("the report is written atomically: at every moment absent or complete JSON, and no temporary file stays")
    func atomicReport() async throws {
        let scratch = try RunScratch()
        let child = try await startLongRun(scratch, connections: 20)
        let path = scratch.path("out/report.json")
        child.signal(SIGINT)
        // Watch the path while the graceful stop runs and the report is written: a reader must never see a
        // partial document there.
        var looks = 0
        var partial: String?
        let deadline = ContinuousClock.now + .seconds(60)  // waitForExit below reports a hang
        while (child.isRunning || looks == 0) && ContinuousClock.now < deadline {
            looks += 1
            if let data = FileManager.default.contents(atPath: path), (try? JSONValue(parsing: Array(data))) == nil {
                partial = "\(data.count) bytes"
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        let status = try await child.waitForExit()
        #expect(status == 130, "\(child.errors)")
        #expect(partial == nil, "a partial report was visible at \(path): \(partial ?? "")")
        #expect(try scratch.json("out/report.json")["run"]?["interruptedBy"]?.stringValue == "SIGINT")
        let files = try scratch.files(in: "out")
        #expect(files == ["report.json"], "left behind: \(files)")
    }

    @Test("a second SIGINT exits at once (130) instead of waiting out a 5-minute gracefulStop; no report")
    func secondSIGINT() async throws {
        let scratch = try RunScratch()
        let server = try StalledServer()
        let child = try await server.startStoppingRun(scratch, firstSignal: SIGINT)
        child.signal(SIGINT)
        // At once: far inside the 5 minutes a graceful stop would wait.
        let status = try await child.waitForExit(within: .seconds(30))
        #expect(status == 130)
        #expect(child.output.contains("second SIGINT, exiting now"), "\(child.output)")
        // No report; the run journal stays, the record of what was collected (`wsload report --recover`).
        let files = try scratch.files(in: "out", ifPresent: true)
        #expect(files == ["report.json.partial"], "exiting at once writes no report: \(files)")
    }

    @Test("a second SIGTERM exits at once with 143: no report applies")
    func secondSIGTERM() async throws {
        let scratch = try RunScratch()
        let server = try StalledServer()
        let child = try await server.startStoppingRun(scratch, firstSignal: SIGTERM)
        child.signal(SIGTERM)
        let status = try await child.waitForExit(within: .seconds(30))
        #expect(status == 143)
        #expect(child.output.contains("second SIGTERM, exiting now"), "\(child.output)")
        // No report; the run journal stays, the record of what was collected (`wsload report --recover`).
        let files = try scratch.files(in: "out", ifPresent: true)
        #expect(files == ["report.json.partial"], "exiting at once writes no report: \(files)")
    }
}

/// `wsload serve --stop-reading` (the embedded server, stalled after the handshake) in a child process.
private final class StalledServer: @unchecked Sendable {
    let process: BackgroundProcess
    let url: String

    init() throws {
        process = try BackgroundProcess([WSLoadProcess.executableURL.path, "serve", "--port", "0", "--stop-reading", "--loops", "1"])
        guard let line = process.waitForLine(containing: "listening on"),
            let url = line.split(separator: " ").first(where: { $0.hasPrefix("ws://") })
        else {
            process.stop()
            throw TestProcess.Failure(description: "wsload serve did not start")
        }
        self.url = String(url)
    }

    deinit { process.stop() }

    /// A run against the stalled server, on a terminal, sent `firstSignal` once every connection was up; returns
    /// once the progress block shows it is stuck in its graceful stop (replies never come; gracefulStop is 5 min).
    func startStoppingRun(_ scratch: RunScratch, firstSignal: Int32) async throws -> WSLoadProcess {
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "stalled", "target": "\(url)", "duration": "60s", "gracefulStop": "5m",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 3}]}
            """)
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("out/report.json")], terminal: true)
        try await child.wait(untilPrinted: "connections 3 up / 3 target")
        child.signal(firstSignal)
        try await child.wait(untilPrinted: "of gracefulStop left")
        return child
    }
}

import Foundation
import JSON
import Testing
import TestSupport

/// `wsload run --processes` with real processes on loopback: the parent spawns its shard children and server
/// processes, merges their reports, and answers for deaths and signals. Small runs (a few hundred connections, a
/// few seconds), one at a time: the suite shares two cores with everything else.
@Suite("wsload run --processes", .serialized, .timeLimit(.minutes(6)))
struct ProcessesRunTests {
    /// An echo profile against the embedded server; `budget` messages per connection end the run early.
    private func profile(connections: Int, duration: String, budget: Int? = nil, chaos: String = "[]") -> String {
        """
        {"version": 1, "name": "procs", "target": "embedded", "duration": "\(duration)", "gracefulStop": "5s",
         "scenarios": [{"name": "echo", "pattern": "echo", "connections": \(connections),
                        \(budget.map { "\"messagesPerConnection\": \($0)," } ?? "")
                        "schedule": {"model": "closed", "thinkTime": "100ms"},
                        "reconnect": {"initial": "100ms", "max": "1s", "multiplier": 2, "jitter": "decorrelated",
                                      "maxAttempts": 30}}],
         "chaos": \(chaos)}
        """
    }

    private func count(_ report: JSONValue, _ metric: String) -> Int? {
        report["total"]?["metrics"]?[metric]?["count"]?.integerValue
    }

    /// The pid of the process whose command line has every one of `words` (a shard child of this test's run).
    private func pid(of words: [String]) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []  // unreadable: nil below fails the test
        for entry in entries {
            guard let pid = Int32(entry), let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if words.allSatisfy(arguments.contains) { return pid }
        }
        return nil
    }

    @Test("2 processes against embedded: the merged report has the profile's connections and messages, one summary, exit 0")
    func twoProcesses() async throws {
        let scratch = try RunScratch()
        let path = try scratch.write("p.json", profile(connections: 100, duration: "30s", budget: 4))
        let run = try WSLoadProcess(["run", path, "--processes", "2", "--out", scratch.path("out/report.json")])
        let status = try await run.waitForExit(within: .seconds(120))
        #expect(status == 0, "\(run.errors)")
        let report = try scratch.json("out/report.json")
        #expect(count(report, "ws.connections_opened") == 100, "\(run.errors)")
        #expect(count(report, "ws.messages_sent") == 400)
        #expect(count(report, "ws.messages_received") == 400)
        #expect(report["run"]?["mergedFrom"]?.arrayValue?.count == 2)
        #expect(report["profile"]?["document"]?["target"]?.stringValue == "embedded")
        #expect(report["invariantsHeld"] == .bool(true))
        #expect(run.output.components(separatedBy: "wsload run procs:").count == 2, "one summary: \(run.output)")
        #expect(run.output.contains("100 connections"), "\(run.output)")
        #expect(run.errors.contains("(merged from 2 of 2 processes)"), "\(run.errors)")
        #expect(try scratch.files(in: "out") == ["report.json"], "the private directory is removed after the merge")
    }

    @Test("no --processes, a limit too low for one process: auto runs 2 children and 2 servers (127.0.0.1, .2) and passes")
    func autoUnderLowLimit() async throws {
        let scratch = try RunScratch()
        let path = try scratch.write("p.json", profile(connections: 200, duration: "30s", budget: 3))
        let run = try WSLoadProcess(["run", path, "--out", scratch.path("report.json")], prefix: ["prlimit", "--nofile=250:250"])
        let status = try await run.waitForExit(within: .seconds(120))
        #expect(status == 0, "\(run.errors)")
        #expect(run.errors.contains("needs about 400 sockets, the limit is 250: running 2 processes and 2 server processes"),
                "\(run.errors)")
        let report = try scratch.json("report.json")
        #expect(count(report, "ws.connections_opened") == 200, "\(run.errors)")
        #expect(count(report, "ws.messages_received") == 600)
    }

    @Test("chaos across processes: the server process kills every connection at 2s, all reconnect, 0 violations")
    func chaosAcrossProcesses() async throws {
        let scratch = try RunScratch()
        let path = try scratch.write("p.json", profile(connections: 100, duration: "6s", chaos: #"[{"at": "2s", "action": "kill"}]"#))
        let run = try WSLoadProcess(["run", path, "--processes", "2", "--out", scratch.path("report.json")])
        let status = try await run.waitForExit(within: .seconds(120))
        #expect(status == 0, "\(run.errors)")
        let report = try scratch.json("report.json")
        let chaos = try #require(report["chaos"]?.arrayValue, "the merged report records the chaos: \(run.errors)")
        #expect(chaos.count == 1 && chaos[0]["affected"]?.integerValue == 100, "\(chaos)")
        #expect(count(report, "ws.reconnects").map { $0 >= 100 } == true, "\(String(describing: report["total"]?["metrics"]))")
        #expect(count(report, "ws.reconnect_recovery") == 100, "every connection recovered")
        #expect(report["invariantsHeld"] == .bool(true), "\(String(describing: report["invariants"]))")
        #expect(run.output.contains("chaos: kill 100%"), "\(run.output)")
    }

    @Test("kill -9 of one child: exit 6 naming the shard and its pid, the others' merged report written, no hang")
    func childKilled() async throws {
        let scratch = try RunScratch()
        let path = try scratch.write("p.json", profile(connections: 100, duration: "8s"))
        let run = try WSLoadProcess(["run", path, "--processes", "2", "--out", scratch.path("report.json")])
        try await run.wait(untilPrinted: "connections 100 up / 100 target", onStandardError: true, within: .seconds(60))
        // Polled: one look at /proc under a busy full suite once found no such process though both shards ran.
        var found: Int32?
        let deadline = ContinuousClock.now + .seconds(20)
        while found == nil && ContinuousClock.now < deadline {
            found = pid(of: ["run", path, "--shard", "2/2"])
            if found == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let victim = try #require(found, "the pid of shard 2/2; stderr: \(run.errors)")
        kill(victim, SIGKILL)
        let status = try await run.waitForExit(within: .seconds(120))
        #expect(status == 6, "\(run.errors)")
        #expect(run.errors.contains("shard 2/2 (pid \(victim)) was killed by SIGKILL without a report"), "\(run.errors)")
        let report = try scratch.json("report.json")
        #expect(report["run"]?["missingShards"] == ["2/2"])
        #expect(count(report, "ws.connections_opened") == 50, "shard 1/2's connections")
        #expect(run.errors.contains("the shards' reports are left in "), "the dead shard's journal is kept: \(run.errors)")
    }

    @Test("SIGINT to the parent reaches every child: exit 130 and a merged report marked interrupted")
    func interrupted() async throws {
        let scratch = try RunScratch()
        let path = try scratch.write("p.json", profile(connections: 100, duration: "60s"))
        let run = try WSLoadProcess(["run", path, "--processes", "2", "--out", scratch.path("report.json")])
        try await run.wait(untilPrinted: "connections 100 up / 100 target", onStandardError: true, within: .seconds(60))
        run.signal(SIGINT)
        let status = try await run.waitForExit(within: .seconds(90))
        #expect(status == 130, "\(run.errors)")
        let report = try scratch.json("report.json")
        #expect(report["run"]?["interrupted"] == .bool(true))
        #expect(report["run"]?["interruptedBy"]?.stringValue == "SIGINT", "the children were stopped by the parent's signal")
        #expect(report["run"]?["elapsedSeconds"]?.numberValue.map { $0 < 60 } == true)
        #expect(report["run"]?["missingShards"] == nil && report["run"]?["mergedFrom"]?.arrayValue?.count == 2)
        #expect(count(report, "ws.connections_opened") == 100)
    }

    @Test("the parent killed (SIGKILL): its children and server processes see their control pipe end and stop")
    func parentKilled() async throws {
        let scratch = try RunScratch()
        let path = try scratch.write("p.json", profile(connections: 20, duration: "60s"))
        let run = try WSLoadProcess(["run", path, "--processes", "2", "--out", scratch.path("report.json")])
        try await run.wait(untilPrinted: "connections 20 up / 20 target", onStandardError: true, within: .seconds(60))
        let children = [["run", path, "--shard", "1/2"], ["run", path, "--shard", "2/2"], ["serve", "--profile-server", path]]
        #expect(children.allSatisfy { pid(of: $0) != nil })
        run.signal(SIGKILL)
        _ = try await run.waitForExit()
        try await run.wait(for: "every child and server to stop", within: .seconds(45)) {
            children.allSatisfy { pid(of: $0) == nil }
        }
    }

    @Test("option errors exit 64 naming --processes")
    func optionErrors() async throws {
        let scratch = try RunScratch()
        let path = try scratch.write("p.json", profile(connections: 3, duration: "5s"))
        for arguments in [["--processes", "0"], ["--processes", "-1"], ["--processes", "257"], ["--processes", "many"],
                          ["--processes", "2", "--shard", "1/2"], ["--processes", "4"]] {
            let result = await runCLIArray(["run", path] + arguments)
            #expect(result.code == .usage, "\(arguments): \(result.error)")
            #expect(result.error.contains("--processes"), "\(arguments): \(result.error)")
        }
    }
}

import Foundation
import JSON
import Testing
import TestSupport

/// The shipped profiles (`Profiles/`), beside `Tests/`.
private let profilesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Profiles")

/// A small chaos profile against the embedded server: a kill at 2 s and a close at 3 s of a 4 s run.
private let chaosProfile = """
    {"version": 1, "name": "override-chaos", "target": "embedded", "duration": "4s", "gracefulStop": "2s",
     "scenarios": [{"name": "s", "pattern": "echo", "connections": 2, "schedule": {"model": "closed", "thinkTime": "5ms"}}],
     "chaos": [{"at": "2s", "action": "kill"}, {"at": "3s", "action": "close", "code": 1001}]}
    """

/// `wsload run`'s `--target`, `--duration` and `--seed` through the real binary: they are part of the profile before it
/// is validated (a refusal exits 65 before anything connects, naming the option), and the report embeds the profile
/// that ran. A regression that applied them after validation would run (and, bounded by the deadlines, fail).
@Suite("wsload run: overrides validated with the profile", .serialized, .timeLimit(.minutes(3)))
struct RunOverrideTests {
    @Test("a chaos timeline with an external --target: exit 65 naming chaos and --target, nothing run, no report")
    func chaosWithExternalTarget() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", chaosProfile)
        // Bound but not listening: were the run to start, every connection would be refused (and it would exit 1).
        let port = try BoundLoopbackPort()
        let target = "ws://127.0.0.1:\(port.port)/"
        let result = try await ChildProcess.run(
            [wsloadExecutable, "run", profile, "--target", target, "--report-dir", scratch.path("runs"), "--quiet"])
        #expect(result.status == 65, "\(result.errors)")
        #expect(result.errors == """
            \(profile): 1 problem:
              chaos: a chaos timeline acts on the embedded server, not on --target \(target) (leave --target out, or give --target embedded)

            """)
        #expect(try scratch.files(in: "runs", ifPresent: true).isEmpty)
        // The issue's own command line, on the shipped profile: refused the same way (validate checks what run would).
        let storm = profilesDirectory.appendingPathComponent("reconnect-storm.json").path
        for command in [["run", storm, "--target", target, "--quiet"], ["validate", storm, "--target", target]] {
            let refused = try await ChildProcess.run([wsloadExecutable] + command)
            #expect(refused.status == 65, "\(command): \(refused.errors)")
            #expect(refused.errors.contains("  chaos: ") && refused.errors.contains("--target \(target)"), "\(command): \(refused.errors)")
        }
    }

    @Test("a --duration before a chaos event: exit 65 naming the event's JSON path and --duration")
    func durationBeforeChaos() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", chaosProfile)
        let result = try await ChildProcess.run(
            [wsloadExecutable, "run", profile, "--duration", "2500ms", "--report-dir", scratch.path("runs"), "--quiet"])
        #expect(result.status == 65, "\(result.errors)")
        #expect(result.errors == """
            \(profile): 1 problem:
              chaos[1].at: 3.0s is not within the run's duration (2.5s, set by --duration) (give a --duration above 3.0s, or leave it out)

            """)
        #expect(try scratch.files(in: "runs", ifPresent: true).isEmpty)
        // The shipped storm with --duration 10s: every event past 10 s is named.
        let storm = profilesDirectory.appendingPathComponent("reconnect-storm.json").path
        let refused = try await ChildProcess.run([wsloadExecutable, "validate", storm, "--duration", "10s"])
        #expect(refused.status == 65, "\(refused.errors)")
        for index in 0..<6 { #expect(refused.errors.contains("  chaos[\(index)].at: "), "\(refused.errors)") }
        #expect(refused.errors.contains("set by --duration"))
    }

    @Test("valid overrides run, and the report embeds the profile as it ran")
    func validOverridesRun() async throws {
        let scratch = try RunScratch()
        // The file's target refuses every connection and its duration is a minute: only the overrides make this a
        // short, passing run.
        let port = try BoundLoopbackPort()
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "override-run", "target": "ws://127.0.0.1:\(port.port)/", "duration": "60s",
             "gracefulStop": "2s", "seed": 1,
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 2, "schedule": {"model": "closed", "thinkTime": "5ms"}}]}
            """)
        let overrides = ["--target", "embedded", "--duration", "1s", "--seed", "42"]
        let checked = try await ChildProcess.run([wsloadExecutable, "validate", profile] + overrides)
        #expect(checked.status == 0, "\(checked.errors)")
        #expect(checked.output == "\(profile): valid — 1 scenario, 2 connections, 1.0s\n")
        let result = try await ChildProcess.run(
            [wsloadExecutable, "run", profile, "--out", scratch.path("report.json"), "--quiet"] + overrides, within: .seconds(90))
        #expect(result.status == 0, "\(result.errors)")
        let report = try scratch.json("report.json")
        let document = try #require(report["profile"]?["document"])
        #expect(document["target"] == "embedded")
        #expect(document["duration"] == "1s")
        #expect(document["seed"] == 1, "the seed is the host's choice: the document keeps the file's")
        #expect(report["run"]?["seed"] == "42")
        #expect(report["run"]?["plannedSeconds"]?.numberValue == 1)
        // The embedded profile is decoded again by the report readers: it reads back as the run it describes.
        let read = try await ChildProcess.run([wsloadExecutable, "report", scratch.path("report.json")])
        #expect(read.status == 0, "\(read.errors)")
    }
}

import Foundation
import JSON
import Reporting
import Testing
import TestSupport
@testable import WSLoadCLI

/// `wsload run --start-at` with the real binary against the embedded server (README "Distributed runs"): the run
/// waits for the time and starts at it, a time past starts at once and says how late, Ctrl-C during the wait exits
/// 130 with nothing written. Timing is recorded and printed, never held to a wall-clock limit: only what cannot
/// flake (never before the time; `lateBy` = `start` − `startAt`) is asserted.
@Suite("wsload run --start-at", .serialized, .timeLimit(.minutes(4)))
struct StartAtRunTests {
    /// `date` as the report writes times: RFC 3339, UTC, milliseconds.
    static func text(_ date: Date) -> String { RunReport.timestamp(date) }

    private static func seconds(_ text: String?) throws -> Double {
        let text = try #require(text)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return try #require(formatter.date(from: text), "\(text) is not a report time").timeIntervalSince1970
    }

    @Test("a start 2 s ahead: the run loads, waits and starts at it; run.startAt, and run.lateBy = start − startAt")
    func startsAtTheTime() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "1s", connections: 4))
        // Milliseconds, as the report writes it: the string comes back unchanged.
        let startAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded() / 1000 + 2)
        let child = try WSLoadProcess(["run", profile, "--loops", "1", "--start-at", Self.text(startAt),
                                       "--out", scratch.path("out/report.json")])
        let status = try await child.waitForExit(within: .seconds(90))
        #expect(status == 0, "\(child.errors)")
        let report = try scratch.json("out/report.json")
        let run = try #require(report["run"])
        #expect(run["startAt"]?.stringValue == Self.text(startAt))
        let start = try Self.seconds(run["start"]?.stringValue)
        let lateBy = try #require(run["lateBy"]?.numberValue)
        // The start is the coordinator's own wall-clock reading after the wait: never before the time (the report
        // rounds both to the millisecond).
        #expect(start >= startAt.timeIntervalSince1970 - 0.001, "started \(startAt.timeIntervalSince1970 - start) s early")
        #expect(abs(start - startAt.timeIntervalSince1970 - lateBy) <= 0.0015, "lateBy \(lateBy) is start − startAt")
        #expect(lateBy >= -0.001)
        #expect(report["total"]?["metrics"]?["ws.connections_opened"]?["count"]?.integerValue == 4)
        #expect(run["startSkew"] == nil, "a skew is a merge's")
        // How it went: it waited (unless the debug binary took longer than 2 s to come up on a busy box).
        let waited = child.errors.contains("waiting until \(Self.text(startAt)) to start")
        print("figure: --start-at 2 s ahead: waited \(waited), lateBy \(lateBy) s")
        if !waited { #expect(child.errors.contains("warning: --start-at"), "\(child.errors)") }
    }

    @Test("a start already past: the run starts at once, warns, and run.lateBy says how late")
    func startsLate() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "1s", connections: 2))
        let startAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded() / 1000 - 5)
        let child = try WSLoadProcess(["run", profile, "--loops", "1", "--start-at", Self.text(startAt),
                                       "--out", scratch.path("out/report.json"), "--quiet"])
        let status = try await child.waitForExit(within: .seconds(90))
        #expect(status == 0, "\(child.errors)")
        #expect(child.errors.contains("warning: --start-at \(Self.text(startAt)) passed"), "warned even with --quiet: \(child.errors)")
        let run = try #require(try scratch.json("out/report.json")["run"])
        #expect(run["startAt"]?.stringValue == Self.text(startAt))
        let lateBy = try #require(run["lateBy"]?.numberValue)
        #expect(lateBy >= 5, "the time had passed 5 s before the launch: \(lateBy)")
        let start = try Self.seconds(run["start"]?.stringValue)
        #expect(abs(start - startAt.timeIntervalSince1970 - lateBy) <= 0.0015)
        print("figure: --start-at 5 s past: lateBy \(lateBy) s")
    }

    /// Starts a run whose start is ten minutes away (however slowly a busy box starts it, it waits) and waits until it
    /// says so (its signal handlers are in place by then).
    private func startWaitingRun(_ scratch: RunScratch) async throws -> WSLoadProcess {
        let profile = try scratch.write("p.json", echoProfile(duration: "1s", connections: 2))
        let child = try WSLoadProcess(["run", profile, "--loops", "1", "--start-at", Self.text(Date().addingTimeInterval(600)),
                                       "--out", scratch.path("out/report.json")])
        try await child.wait(untilPrinted: "Ctrl-C stops without a report", onStandardError: true, within: .seconds(60))
        return child
    }

    @Test("Ctrl-C during the wait: exit 130 at once, nothing ran, no report and no journal")
    func interruptedWait() async throws {
        let scratch = try RunScratch()
        let child = try await startWaitingRun(scratch)
        child.signal(SIGINT)
        // Far inside the ten minutes the wait had left.
        let status = try await child.waitForExit(within: .seconds(30))
        #expect(status == 130, "\(child.errors)")
        #expect(child.errors.contains("stopped by SIGINT while waiting for the start time: nothing ran"), "\(child.errors)")
        #expect(try scratch.files(in: "out", ifPresent: true) == [], "no report, no journal")
        #expect(!child.errors.contains("report:"))
    }

    @Test("SIGTERM during the wait: the same (130, nothing written)")
    func terminatedWait() async throws {
        let scratch = try RunScratch()
        let child = try await startWaitingRun(scratch)
        child.signal(SIGTERM)
        let status = try await child.waitForExit(within: .seconds(30))
        #expect(status == 130, "\(child.errors)")
        #expect(child.errors.contains("stopped by SIGTERM while waiting"), "\(child.errors)")
        #expect(try scratch.files(in: "out", ifPresent: true) == [])
    }

    @Test("refusals come before anything runs: 64 for the argument, 66 for a missing file, 65 for a bad one")
    func refusals() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "1s", connections: 1))
        let out = scratch.path("out/report.json")
        let ahead = await runCLIArray(["run", profile, "--start-at", Self.text(Date().addingTimeInterval(25 * 3600)), "--out", out])
        #expect(ahead.code == .usage && ahead.error.contains("more than 24 h is refused as a typo"), "\(ahead.error)")
        let bad = await runCLIArray(["run", profile, "--start-at", "2026-12-01T25:00:00Z", "--out", out])
        #expect(bad.code == .usage && bad.error.contains("is not an RFC 3339 time"), "\(bad.error)")
        let missing = await runCLIArray(["run", profile, "--start-at", "@" + scratch.path("launch-time") + "+30s", "--out", out])
        #expect(missing.code == .noInput && missing.error.contains(scratch.path("launch-time")), "\(missing.error)")
        let garbage = try scratch.write("garbage", "soon\n")
        let invalid = await runCLIArray(["run", profile, "--start-at", "@" + garbage, "--out", out])
        #expect(invalid.code == .invalidInput && invalid.error.contains("\"soon\" is not an RFC 3339 time"), "\(invalid.error)")
        let empty = await runCLIArray(["run", profile, "--start-at=", "--out", out])
        #expect(empty.code == .usage, "\(empty.error)")
        #expect(try scratch.files(in: "out", ifPresent: true) == [])
    }
}

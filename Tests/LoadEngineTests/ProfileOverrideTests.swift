import JSON
import Profile
import Testing

/// A profile with a chaos timeline against the embedded server: kill at 2 s, restart at 4 s, in a 6 s run.
private let chaosProfile = """
    {"version": 1, "name": "storm", "target": "embedded", "duration": "6s", "loops": 2,
     "scenarios": [{"name": "s", "pattern": "echo", "connections": 4}],
     "chaos": [{"at": "2s", "action": "kill"}, {"at": "4s", "action": "restart", "for": "1s"}]}
    """

/// The problems of `text` decoded with `overrides` (none when it decodes).
private func problems(_ text: String, _ overrides: ProfileOverrides) -> [ProfileProblem] {
    do {
        _ = try ProfileDecoder.decode(Array(text.utf8), overrides: overrides)
        return []
    } catch {
        return error.problems
    }
}

private func decode(_ text: String, _ overrides: ProfileOverrides) throws -> Profile {
    try ProfileDecoder.decode(Array(text.utf8), overrides: overrides)
}

@Suite("Profile validation with command-line overrides", .timeLimit(.minutes(1)))
struct ProfileOverrideTests {
    @Test("a chaos timeline with an external --target is refused, naming chaos and --target")
    func chaosWithExternalTarget() throws {
        let found = problems(chaosProfile, ProfileOverrides(target: "ws://127.0.0.1:9000/"))
        #expect(found.map(\.description) == [
            "chaos: a chaos timeline acts on the embedded server, not on --target ws://127.0.0.1:9000/ "
                + "(leave --target out, or give --target embedded)",
        ])
        // The file alone, and the file with --target embedded, are valid: the override is what is refused.
        #expect(problems(chaosProfile, ProfileOverrides()).isEmpty)
        #expect(try decode(chaosProfile, ProfileOverrides(target: "embedded")).chaos.count == 2)
        // A file whose own target is external keeps the file's wording.
        let external = chaosProfile.replacingOccurrences(of: #""target": "embedded""#, with: #""target": "ws://127.0.0.1:9000/""#)
        #expect(problems(external, ProfileOverrides()).map(\.description) == [
            #"chaos: a chaos timeline acts on the embedded server (set "target": "embedded")"#,
        ])
        // And --target embedded rescues it: the overridden profile is what is checked.
        #expect(try decode(external, ProfileOverrides(target: "embedded")).target == .embedded)
    }

    @Test("a --duration before a chaos event is refused, naming the event's path and --duration")
    func durationBeforeChaos() throws {
        let found = problems(chaosProfile, ProfileOverrides(duration: "3s"))
        #expect(found.map(\.path) == ["chaos[1].at"])
        #expect(found.first?.message == "4.0s is not within the run's duration (3.0s, set by --duration)")
        #expect(found.first?.hint == "give a --duration above 4.0s, or leave it out")
        #expect(problems(chaosProfile, ProfileOverrides(duration: "1s")).map(\.path) == ["chaos[0].at", "chaos[1].at"])
        // Both overrides at once: every problem, each naming its option.
        let both = problems(chaosProfile, ProfileOverrides(target: "wss://example.com/", duration: "3s"))
        #expect(both.map(\.path) == ["chaos", "chaos[1].at"])
        #expect(both.allSatisfy { $0.message.contains("--target") || $0.message.contains("--duration") })
        // A longer run than the file's keeps its events.
        #expect(try decode(chaosProfile, ProfileOverrides(duration: "10s")).duration == .seconds(10))
    }

    @Test("an overriding value meets the file's checks and the problem names the option")
    func overrideValuesChecked() {
        #expect(problems(chaosProfile, ProfileOverrides(duration: "0s")).map(\.description) == [
            #"duration: "0s" is too short, set by --duration (at least 1.0ms)"#,
        ])
        #expect(problems(chaosProfile, ProfileOverrides(duration: "soon")).map(\.path) == ["duration"])
        #expect(problems(chaosProfile, ProfileOverrides(target: "http://x/")).map(\.path) == ["target"])
        #expect(problems(chaosProfile, ProfileOverrides(target: "http://x/")).first?.message.hasSuffix(", set by --target") == true)
        #expect(problems(chaosProfile, ProfileOverrides(loops: 0)).map(\.description) == [
            "loops: 0 is out of range, set by --loops (use 1...256)",
        ])
        #expect(problems(chaosProfile, ProfileOverrides(seed: UInt64(Int.max) + 1)).map(\.path) == ["seed"])
        // --target embedded meets the check the file's "target": "embedded" does: no TLS options.
        let tls = """
            {"version": 1, "name": "t", "target": "wss://example.com/", "duration": "1s", "tls": {"serverName": "example.com"},
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 1}]}
            """
        #expect(problems(tls, ProfileOverrides()).isEmpty)
        #expect(problems(tls, ProfileOverrides(target: "embedded")).map(\.description) == [
            "tls: the embedded target (set by --target) speaks plain ws:// (remove tls, or give --target a wss:// URL)",
        ])
    }

    @Test("an override replaces the file's value, so a missing or bad one is no longer a problem")
    func overrideReplacesFileValue() throws {
        let broken = """
            {"version": 1, "name": "b", "target": "http://nope", "duration": "forever",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 1}]}
            """
        #expect(problems(broken, ProfileOverrides()).map(\.path) == ["target", "duration"])
        let profile = try decode(broken, ProfileOverrides(target: "embedded", duration: "2s"))
        #expect(profile.target == .embedded && profile.duration == .seconds(2))
        let missing = #"{"version": 1, "name": "m", "scenarios": [{"name": "s", "pattern": "echo", "connections": 1}]}"#
        #expect(problems(missing, ProfileOverrides()).map(\.path) == ["target", "duration"])
        #expect(try decode(missing, ProfileOverrides(target: "ws://127.0.0.1:8080/ws", duration: "1s")).duration == .seconds(1))
        // The file's loops stay in the document, so an invalid one is still refused under --loops.
        let badLoops = chaosProfile.replacingOccurrences(of: #""loops": 2"#, with: #""loops": 999"#)
        let loopProblems = problems(badLoops, ProfileOverrides(loops: 4))
        #expect(loopProblems.map(\.path) == ["loops"] && !(loopProblems.first?.message.contains("--loops") ?? true), "\(loopProblems)")
    }

    @Test("the overrides are in the decoded profile and its document, which decodes again to the same profile")
    func overridesInDocument() throws {
        let overrides = ProfileOverrides(target: "ws://127.0.0.1:8080/ws", duration: "1500ms", seed: 42, loops: 3)
        let text = chaosProfile.replacingOccurrences(of: #""chaos": [{"at": "2s", "action": "kill"}, {"at": "4s", "action": "restart", "for": "1s"}]"#,
                                                     with: #""thresholds": ["ws.message_rtt p99 < 1s"]"#)
        let profile = try decode(text, overrides)
        guard case .url(let url) = profile.target else { Issue.record("target \(profile.target)"); return }
        #expect(url.description == "ws://127.0.0.1:8080/ws")
        #expect(profile.duration == .milliseconds(1500))
        #expect(profile.seed == 42)
        #expect(profile.loops == 3)
        // The document: overridden keys replaced in place; seed and loops are the host's choices and stay the file's
        // (here: no seed), so runs of one profile with other seeds or threads still merge and compare as one.
        let document = try #require(profile.document.objectValue)
        #expect(document.keys == ["version", "name", "target", "duration", "loops", "scenarios", "thresholds"])
        #expect(document["target"] == "ws://127.0.0.1:8080/ws")
        #expect(document["duration"] == "1500ms")
        #expect(document["seed"] == nil)
        #expect(document["loops"] == 2)
        // A report's embedded profile is decoded again (merge, compare): it reads back as what ran.
        let again = try ProfileDecoder.decode(Array(profile.document.formatted(pretty: false).utf8))
        #expect(again.target == profile.target && again.duration == profile.duration && again.seed == nil)
        // Without overrides the document is the file's.
        #expect(try decode(text, ProfileOverrides()).document == (try JSONValue(parsing: text)))
    }

    @Test("--seed is kept exactly in the profile (even beyond what a JSON number holds); the document keeps the file's, so the digest is the profile's")
    func seedOverride() throws {
        let seed = UInt64(Int.max) - 6
        let withSeed = chaosProfile.replacingOccurrences(of: #""loops": 2"#, with: #""loops": 2, "seed": 7"#)
        let profile = try decode(withSeed, ProfileOverrides(seed: seed))
        #expect(profile.seed == seed)
        #expect(profile.document["seed"] == 7)
        #expect(try ProfileDecoder.decode(Array(profile.document.formatted().utf8)).seed == 7)
        #expect(try decode(withSeed, ProfileOverrides(seed: 8)).document == (try decode(withSeed, ProfileOverrides())).document)
        // The file's own seed is still checked, as the file's (its problem names no option).
        let badSeed = chaosProfile.replacingOccurrences(of: #""loops": 2"#, with: #""loops": 2, "seed": -1"#)
        let found = problems(badSeed, ProfileOverrides(seed: 8))
        #expect(found.map(\.path) == ["seed"] && !(found.first?.message.contains("--seed") ?? true), "\(found)")
    }

    @Test("an overridden duration gets exactly the treatment the same duration written in the file gets",
          arguments: ["500ms", "1s", "3s", "5s", "30s"])
    func sameTreatmentAsFile(duration: String) {
        // Stages, chaos events, open-model rates: whatever the file's own duration meets, the override meets.
        let template = """
            {"version": 1, "name": "same", "target": "embedded", "duration": "DURATION",
             "scenarios": [{"name": "s", "pattern": "echo", "stages": [{"target": 4, "duration": "2s"}, {"target": 0, "duration": "2s"}]}],
             "chaos": [{"at": "1s", "action": "kill"}, {"at": "4s", "action": "close", "code": 1001}],
             "thresholds": [{"expression": "ws.message_rtt p99 < 50ms", "abortOnFail": true, "abortDelay": "2s"}]}
            """
        let written = problems(template.replacingOccurrences(of: "DURATION", with: duration), ProfileOverrides())
        let overridden = problems(template.replacingOccurrences(of: "DURATION", with: "1h"), ProfileOverrides(duration: duration))
        #expect(overridden.map(\.path) == written.map(\.path))
        #expect(overridden.map { $0.message.replacingOccurrences(of: ", set by --duration", with: "") } == written.map(\.message))
    }
}

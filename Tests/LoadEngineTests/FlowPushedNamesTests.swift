import Profile
import Reporting
import Testing
import TestSupport
@testable import LoadEngine

/// `flow.pushed.<event>` names come from the peer: bounded per run, and only plain names used as they are.
@Suite("Flow pushed event names", .serialized, .timeLimit(.minutes(3)))
struct FlowPushedNamesTests {
    @Test("a hostile socketio server pushing 3000 distinct names and unsafe ones: 64 counted by name, the rest as other")
    func hostilePeer() async throws {
        let server = try startPythonPeer("socketio_server.py", arguments: ["--break", "flood-names"])
        defer { server.process.stop() }
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "flood", "target": "ws://127.0.0.1:\(server.port)", "duration": "60s", "seed": 2,
             "scenarios": [{"name": "chat", "pattern": "flow", "protocol": "socketio", "connections": 1,
                            "socketio": {"timeout": "10s"}, "steps": [
                              {"name": "welcome", "on": {"event": "welcome", "within": "10s"}},
                              {"name": "flooded", "on": {"event": "flooded", "within": "40s", "skip": 100000}}]}]}
            """)).run()
        let metrics = result.scenarios[0].metrics
        #expect(metrics.step("welcome") == 1 && metrics.step("flooded") == 1, "\(metrics.errors)")
        let pushed = metrics.flowPushed
        let names = Set(pushed.map(\.type))
        #expect(names == Set((0..<64).map { "e\($0)" } + [MetricFamily.flowPushedOther]), "\(names.sorted())")
        #expect(metrics.pushed(MetricFamily.flowPushedOther) == 3000 - 64 + 7, "\(pushed)")
        #expect(pushed.reduce(0) { $0 + $1.count } == 3007, "every pushed event is counted, by name or as other")
        // The run's totals and its intervals hold no peer-chosen key past the bound.
        let keys = result.total.counters.keys.filter { $0.hasPrefix("flow.pushed.") }
        #expect(keys.count == 65, "\(keys.count) flow.pushed keys")
    }

    @Test("a plain tag: 1-64 bytes of letters, digits and _-.:/@+#; nothing that JSON, exposition or a filter escapes")
    func plainTags() {
        for name in ["said", "chat:message", "a/b", "user@x", "v1.2-beta_3", "#room+1", String(repeating: "x", count: 64)] {
            #expect(PushedEventNames.isPlainTag(name), "\(name)")
        }
        for name in ["", String(repeating: "x", count: 65), "two words", "x\"y", "a\\b", "a\nb", "a{b}", "a,b", "a=b", "caf\u{e9}",
                     "\u{1b}[31m", "other"] {
            #expect(!PushedEventNames.isPlainTag(name), "\(name.debugDescription)")
        }
    }

    @Test("the bound is per run across loops: the names an on step waits for always count, 64 others, the rest other")
    func boundAcrossCaches() throws {
        let decoded = try profile("""
            {"version": 1, "name": "names", "target": "ws://127.0.0.1:9", "duration": "1s",
             "scenarios": [{"name": "chat", "pattern": "flow", "protocol": "socketio", "connections": 1, "steps": [
               {"loop": {"count": 2, "steps": [{"name": "said", "on": {"event": "said", "within": "1s"}}]}}]}]}
            """)
        let names = PushedEventNames(try #require(decoded.scenarios[0].websocket.flow))
        #expect(names.expected == ["said"], "an on inside a loop is found")
        var first = names.makeCache()
        var second = names.makeCache()
        for index in 0..<40 { #expect(names.tag(for: "a\(index)", cache: &first) == "a\(index)") }
        for index in 0..<40 {
            // The other loop's recorder shares the bound: 24 more names, then other; its own names and the first's stay.
            #expect(names.tag(for: "b\(index)", cache: &second) == (index < 24 ? "b\(index)" : MetricFamily.flowPushedOther))
        }
        #expect(names.tag(for: "a3", cache: &second) == "a3" && names.tag(for: "b3", cache: &first) == "b3")
        #expect(names.tag(for: "c", cache: &first) == MetricFamily.flowPushedOther)
        #expect(names.tag(for: "said", cache: &second) == "said" && names.tag(for: "x\"y", cache: &first) == MetricFamily.flowPushedOther)
    }
}

import Foundation
import Histogram
import JSON
@testable import LiveView
@testable import LoadEngine
import Profile
import Reporting
import Testing

/// A finished 10 s run of `profile` with `total` as its figures and `invariants` as the oracle's findings.
func knownResult(profile text: String, total: MetricSet, invariants: InvariantReport = InvariantReport(),
                 interruptedBy: String? = nil) throws -> RunResult {
    let profile = try ProfileDecoder.decode(Array(text.utf8))
    return RunResult(
        profile: profile, seed: 1, loops: 1, startedAt: Date(timeIntervalSince1970: 0), endedAt: Date(timeIntervalSince1970: 10),
        elapsed: .milliseconds(10_020), interruptedBy: interruptedBy, abortedBy: nil,
        scenarios: [.init(scenario: profile.scenarios[0], metrics: total)], total: total, intervals: [],
        unfinishedConnections: 0, liveHandlesAfterStop: 0, waitingTasksAfterStop: 0, shard: nil, mergedFrom: [],
        invariants: invariants, chaos: [], reconnectStorm: nil)
}

let dashboardProfile = """
    {"version": 1, "name": "dash", "target": "embedded", "duration": "10s", "gracefulStop": "2s",
     "headers": {"X-Tenant": "SECRET-TENANT"},
     "scenarios": [{"name": "echo", "pattern": "echo", "connections": 5},
                   {"name": "chat", "pattern": "flow", "connections": 2,
                    "steps": [{"send": {"text": "hi"}}, {"name": "reply", "expect": {"text": {"regex": "hi"}, "within": "2s"}}]}],
     "thresholds": ["ws.message_rtt p99 < 1ms", "errors rate < 10%", "ws.messages_received count > 10"]}
    """

@Suite("Dashboard hello and summary", .timeLimit(.minutes(1)))
struct DashboardSummaryTests {
    @Test("hello names the run, its scenarios and the latencies to show first, and nothing of the profile's secrets")
    func hello() throws {
        let profile = try ProfileDecoder.decode(Array(dashboardProfile.utf8))
        let hello = DashboardSummary.hello(profile: profile, runID: "0123abcd", shard: Shard(parsing: "2/3"), backlog: 3600)
        #expect(hello == #"""
            {"profile":"dash","runId":"0123abcd","shard":"2/3","duration":10,"gracefulStop":2,"scenarios":["echo","chat"],\#
            "latencies":["ws.message_rtt","flow.step.reply"],"backlog":3600}
            """#)
        #expect(!hello.contains("SECRET") && !hello.contains("X-Tenant"))
    }

    @Test("the summary holds the verdict, exit code, thresholds with actual and limit, invariants and totals")
    func knownSummary() throws {
        var total = MetricSet()
        var rtt = Histogram()
        rtt.record(800, count: 9)
        rtt.record(2_000)
        total[histogram: .messageRoundTrip] = rtt
        total[counter: .connectAttempts] = 5
        total[counter: .connectionsOpened] = 5
        total[counter: .messagesSent] = 10
        total[counter: .messagesReceived] = 10
        total.errors["connect"] = 1
        var invariants = InvariantReport()
        invariants.checked = ["messages.echo_sequence": 10]
        let result = try knownResult(profile: dashboardProfile, total: total, invariants: invariants)
        let summary = DashboardSummary.json(result, exitCode: 3)
        #expect(summary == #"""
            {"verdict":"thresholds_failed","exitCode":3,"interruptedBy":null,"abortedBy":null,"elapsed":10.02,"duration":10,\#
            "thresholds":[\#
            {"expression":"ws.message_rtt p99 < 1ms","comparison":"<","limit":1000,"actual":2000,"unit":"us","passed":false,"note":null,\#
            "actualText":"2.0ms","limitText":"< 1ms"},\#
            {"expression":"errors rate < 10%","comparison":"<","limit":0.1,"actual":0.06666666666666667,"unit":"ratio","passed":true,"note":null,\#
            "actualText":"6.7%","limitText":"< 10%"},\#
            {"expression":"ws.messages_received count > 10","comparison":">","limit":10,"actual":10,"unit":"count","passed":false,"note":null,\#
            "actualText":"10","limitText":"> 10"}],\#
            "invariantsHeld":true,"invariants":{"checks":10,"violations":0,"byName":[\#
            {"name":"messages.echo_sequence","checked":10,"violations":0}]},\#
            "totals":{"opened":5,"sent":10,"received":10,"reconnects":0,"errors":{"connect":1},"disconnects":{},\#
            "latency":{"ws.message_rtt":{"n":10,"p50":800,"p90":800,"p99":2000,"max":2000}}}}
            """#)
        #expect(!summary.contains("SECRET"))
    }

    @Test("the verdict follows wsload run's order: interrupted, no connection, invariants, thresholds, the exit code")
    func verdicts() throws {
        let held = "{\"version\": 1, \"name\": \"v\", \"target\": \"embedded\", \"duration\": \"1s\", "
            + "\"scenarios\": [{\"name\": \"s\", \"pattern\": \"echo\", \"connections\": 1}]}"
        var opened = MetricSet()
        opened[counter: .connectAttempts] = 1
        opened[counter: .connectionsOpened] = 1
        var refused = MetricSet()
        refused[counter: .connectAttempts] = 3
        var broken = InvariantReport()
        broken.violations = ["x": 1]
        func verdict(_ result: RunResult, _ code: Int32) throws -> String? {
            try JSONValue(parsing: DashboardSummary.json(result, exitCode: code))["verdict"]?.stringValue
        }
        #expect(try verdict(knownResult(profile: held, total: opened), 0) == "passed")
        #expect(try verdict(knownResult(profile: held, total: opened), 74) == "failed", "the report was not written")
        #expect(try verdict(knownResult(profile: held, total: refused), 1) == "failed")
        #expect(try verdict(knownResult(profile: held, total: opened, invariants: broken), 4) == "invariants_violated")
        #expect(try verdict(knownResult(profile: held, total: opened, interruptedBy: "SIGINT"), 130) == "interrupted")
        let failing = held.replacingOccurrences(of: "]}", with: "], \"thresholds\": [\"ws.messages_sent count > 5\"]}")
        #expect(try verdict(knownResult(profile: failing, total: opened), 3) == "thresholds_failed")
    }
}

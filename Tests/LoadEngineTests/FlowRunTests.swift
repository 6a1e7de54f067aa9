import Flow
import JSON
import LoadEngine
import Profile
import Reporting
import Testing

/// The flow interpreter against the embedded server's echo (`/` sends every text message back): steps, captures,
/// several messages at once, skip limits, timeouts with each policy, loops, pacing, reconnect and stop.
@Suite("Flow runs", .serialized, .timeLimit(.minutes(4)))
struct FlowRunTests {
    typealias B = FlowBuild

    func run(_ flow: FlowScenario, connections: Int = 1, duration: String = "30s") async throws -> RunResult {
        try await LoadRun(profile: try B.profile(flow, connections: connections, duration: duration)).hostedRun()
    }

    @Test("send, expect and capture: the captured value goes into the next message; every step is timed")
    func captureFeedsTheNextMessage() async throws {
        var capture = B.expectation("type", equals: "join")
        capture.captures = [Capture(variable: "n", source: .path(B.path("n")))]
        var second = B.expectation("type", equals: "again")
        second.captures = [Capture(variable: "m", source: .path(B.path("n")))]
        let flow = B.scenario([
            B.send(.object([(key: "type", value: .constant("join")), (key: "n", value: .string(Template(parts: [.value(.vu)])))])),
            B.step(.expect(capture), name: "join"),
            B.send(.object([(key: "type", value: .constant("again")), (key: "n", value: .string(Template(parts: [.value(.variable("n"))])))])),
            B.step(.expect(second), name: "again"),
        ])
        let result = try await run(flow, connections: 20)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.step("join") == 20 && metrics.step("again") == 20, "\(metrics.histograms.keys.sorted())")
        #expect(metrics.count("flow.completed") == 20)
        #expect(metrics.count("ws.messages_sent") == 40 && metrics.count("ws.messages_received") == 40)
        #expect(metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(result.invariantsHeld, "\(result.invariants)")
        #expect(result.invariants.checked[Invariant.flowVariablesDefined.rawValue] == 40, "both sends are templated")
        #expect(result.invariants.checked[Invariant.flowNothingAfterClose.rawValue] ?? 0 >= 40)
    }

    @Test("three replies arriving at once are each taken by their own expect, captures intact (artillery#3476)")
    func severalMessagesAtOnce() async throws {
        func expectID(_ id: Int) -> FlowStep {
            var expectation = B.expectation("id", equals: .number(Double(id)))
            expectation.captures = [Capture(variable: "v\(id)", source: .path(B.path("id")))]
            expectation.skipLimit = 0  // any reply out of place fails the step
            return B.step(.expect(expectation), name: "r\(id)")
        }
        let flow = B.scenario([
            B.send(["id": 1]), B.send(["id": 2]), B.send(["id": 3]),
            B.step(.think(.fixed(.milliseconds(200)))),  // all three are in the inbox before the first expect
            expectID(1), expectID(2), expectID(3),
            B.sendText(Template(parts: [.value(.variable("v1")), .value(.variable("v2")), .value(.variable("v3"))])),
            B.step(.expect(FlowExpectation(matcher: .any, within: .seconds(10))), name: "last"),
        ])
        let result = try await run(flow, connections: 5)
        let metrics = result.scenarios[0].metrics
        for name in ["r1", "r2", "r3", "last"] { #expect(metrics.step(name) == 5, "\(name)") }
        #expect(metrics.count("flow.skipped") == 0 && metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(metrics.count("flow.completed") == 5 && result.invariantsHeld)
    }

    @Test("an expect skips what does not match (counted and classified) and fails past its skip limit")
    func skipsAndSkipLimit() async throws {
        var third = B.expectation("id", equals: 3)
        third.skipLimit = 2
        var strict = B.expectation("id", equals: 6)
        strict.skipLimit = 1
        let classify: [(type: String, matcher: MessageMatcher)] = [
            ("one", .json([JSONCondition(path: B.path("id"), test: .equals(.constant(1)))])),
        ]
        let flow = B.scenario([
            B.send(["id": 1]), B.send(["id": 2]), B.send(["id": 3]),
            B.step(.expect(third), name: "third"),
            B.send(["id": 4]), B.send(["id": 5]), B.send(["id": 6]),
            B.step(.expect(strict), name: "strict"),
        ], classify: classify)
        let result = try await run(flow, connections: 2)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.step("third") == 2 && metrics.step("strict") == 0)
        #expect(metrics.stepErrors("strict") == 2 && metrics.errors["expect_skip_limit"] == 2, "\(metrics.errors)")
        // Skipped: 1 and 2 by `third`, 4 and 5 by `strict` (the second skip fails it); 6 is left over, pushed.
        #expect(metrics.count("flow.skipped") == 8)
        #expect(metrics.pushed("one") == 2 && metrics.pushed("other") == 8, "\(metrics.counters)")
        #expect(metrics.count("flow.completed") == 2, "continue is the default policy")
    }

    @Test("a timeout continues, restarts or closes, by the step's onTimeout", arguments: FlowFailurePolicy.allCases)
    func timeoutPolicies(_ policy: FlowFailurePolicy) async throws {
        var never = B.expectation("id", equals: 99, within: .milliseconds(150))
        never.onTimeout = policy
        let flow = B.scenario([
            B.send(["id": 1]),
            B.step(.expect(never), name: "never"),
            B.send(["id": 2]),
            B.step(.expect(B.expectation("id", equals: 2)), name: "after"),
        ])
        let result = try await run(flow, connections: 1, duration: policy == .restart ? "1s" : "30s")
        let metrics = result.scenarios[0].metrics
        let timeouts = metrics.errors["expect_timeout"] ?? 0
        #expect(metrics.stepErrors("never") == timeouts)
        switch policy {
        case .continue:
            #expect(timeouts == 1 && metrics.step("after") == 1 && metrics.count("flow.completed") == 1)
        case .restart:
            #expect(timeouts >= 2 && metrics.step("after") == 0 && metrics.count("flow.completed") == 0, "\(timeouts)")
        case .close:
            #expect(timeouts == 1 && metrics.step("after") == 0 && metrics.count("flow.completed") == 0)
            #expect(metrics.disconnects[1000] == 1)
        }
        #expect(result.invariantsHeld, "\(result.invariants)")
    }

    @Test("a wait after a short one that matched keeps its own deadline (the lazy timer re-arms, never fires early)")
    func laterDeadlineAfterShortWait() async throws {
        let flow = B.scenario([
            B.send(["id": 1]),
            B.step(.expect(B.expectation("id", equals: 1, within: .milliseconds(200))), name: "short"),
            B.step(.expect(B.expectation("id", equals: 99, within: .seconds(1))), name: "long"),
        ])
        let result = try await run(flow, connections: 1)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.step("short") == 1 && metrics.stepErrors("long") == 1)
        #expect(metrics.errors["expect_timeout"] == 1)
        #expect(result.elapsed >= .seconds(1), "the long expect timed out at \(result.elapsed), before its 1 s")
        #expect(result.invariantsHeld, "\(result.invariants)")
    }

    @Test("a counted loop paced at a rate: iterations counted, ${iteration} per iteration, latency per reply")
    func pacedLoop() async throws {
        let body = [
            B.sendText(Template(parts: [.literal("i"), .value(.iteration)])),
            B.step(.expect(FlowExpectation(matcher: .any, within: .seconds(10))), name: "reply"),
        ]
        var loop = FlowLoop(steps: body)
        loop.count = 5
        loop.ratePerConnection = 20
        let flow = B.scenario([B.step(.loop(loop))])
        let result = try await run(flow, connections: 3)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.count("flow.iterations") + metrics.count("flow.iterations_missed") == 15)
        #expect(metrics.step("reply") == metrics.count("flow.iterations"))
        #expect(metrics.count("flow.completed") == 3 && metrics.errors.isEmpty)
        #expect(result.elapsed >= .milliseconds(200), "5 iterations at 20/s span at least 200 ms")
    }

    @Test("sends larger than the socket takes at once (8 MiB): the rest is written under backpressure, each echoed")
    func sendsUnderBackpressure() async throws {
        let body = [
            B.sendText(Template(parts: [.value(.iteration), .literal(String(repeating: "x", count: 8 << 20))])),
            B.step(.expect(FlowExpectation(matcher: .any, within: .seconds(20))), name: "echo"),
        ]
        var loop = FlowLoop(steps: body)
        loop.count = 3
        let result = try await run(B.scenario([B.step(.loop(loop))]), connections: 2)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.step("echo") == 6 && metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(metrics.count("ws.bytes_received") == metrics.count("ws.bytes_sent"))
        #expect(metrics.count("flow.completed") == 2 && result.invariantsHeld, "\(result.invariants)")
    }

    @Test("a loop for a duration with think time, a timed group, a ping, a mark and an if")
    func blocks() async throws {
        var loop = FlowLoop(steps: [B.step(.think(.uniform(.milliseconds(20)...(.milliseconds(40)))))])
        loop.duration = .milliseconds(300)
        var fromMark = B.expectation("id", equals: 1)
        fromMark.from = "t0"
        fromMark.captures = [Capture(variable: "id", source: .path(B.path("id")))]
        let flow = B.scenario([
            B.step(.loop(loop)),
            B.step(.mark("t0")),
            B.step(.group([B.send(["id": 1]), B.step(.expect(fromMark), name: "inner")]), name: "block"),
            B.step(.ping(within: .seconds(10), onTimeout: .continue), name: "p"),
            B.step(.ifThen(.equals("id", .constant(1)), then: [B.send(["branch": "then"])],
                           otherwise: [B.send(["branch": "else"])])),
            B.step(.expect(B.expectation("branch", equals: "then")), name: "branch"),
            B.step(.ifThen(.exists("nothing"), then: [B.send(["x": 1])], otherwise: [])),
        ])
        let result = try await run(flow, connections: 2)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.count("flow.iterations") >= 2)
        for name in ["inner", "block", "p", "branch"] { #expect(metrics.step(name) == 2, "\(name)") }
        #expect(metrics.count("ws.messages_sent") == 4 && metrics.errors.isEmpty, "\(metrics.errors)")
    }

    @Test("a reconnect step opens a new connection and the steps go on after it, captures kept, no reconnect counted")
    func reconnectStep() async throws {
        var first = B.expectation("id", equals: 1)
        first.captures = [Capture(variable: "kept", source: .path(B.path("id")))]
        let flow = B.scenario([
            B.send(["id": 1]), B.step(.expect(first), name: "before"),
            B.step(.reconnect),
            B.send(.object([(key: "id", value: .string(Template(parts: [.value(.variable("kept"))])))])),
            B.step(.expect(B.expectation("id", equals: 1)), name: "after"),
        ])
        let result = try await run(flow, connections: 2)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.step("before") == 2 && metrics.step("after") == 2)
        #expect(metrics.count("ws.connections_opened") == 4 && metrics.count("ws.reconnects") == 0)
        #expect(metrics.count("flow.completed") == 2 && metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(result.invariantsHeld, "\(result.invariants)")
    }

    @Test("the run's stop ends a waiting expect as stopped, never as a timeout; the close is graceful")
    func stopMidExpect() async throws {
        let flow = B.scenario([
            B.send(["id": 1]),
            B.step(.expect(B.expectation("id", equals: 99, within: .seconds(60))), name: "waits"),
        ])
        let result = try await run(flow, connections: 3, duration: "500ms")
        let metrics = result.scenarios[0].metrics
        #expect(metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(metrics.disconnects[1000] == 3 && metrics.count("flow.completed") == 0)
        #expect(result.elapsed < .seconds(30))
        #expect(result.invariantsHeld && result.unfinishedConnections == 0, "\(result.invariants)")
    }

    @Test("a template naming an undefined variable sends nothing and counts template_undefined")
    func undefinedVariable() async throws {
        let flow = B.scenario([
            B.sendText(Template(parts: [.value(.variable("missing"))])),
            B.step(.expect(FlowExpectation(matcher: .any, within: .milliseconds(200))), name: "reply"),
        ])
        let result = try await run(flow)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.errors["template_undefined"] == 1 && metrics.errors["expect_timeout"] == 1)
        #expect(metrics.count("ws.messages_sent") == 0 && result.invariantsHeld)
    }
}

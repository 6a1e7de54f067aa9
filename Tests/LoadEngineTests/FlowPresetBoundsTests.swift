import Flow
import JSON
import LoadEngine
import Profile
import Reporting
import Runtime
import Testing
import TestSupport

/// The presets' per-connection bookkeeping stays bounded in a soak (graphql-ws operations and their pending
/// results, socketio ack ids), an ack that arrives before its wait is kept, and python-socketio's truncated
/// heartbeat advertisement is not a dead server.
@Suite("Flow preset state stays bounded", .serialized, .timeLimit(.minutes(3)))
struct FlowPresetBoundsTests {
    typealias Operations = GraphQLOperations

    static func event(_ kind: GraphQLOperationEvent.Kind, _ nanoseconds: UInt64 = 1) -> GraphQLOperationEvent {
        GraphQLOperationEvent(kind, arrival: LoopClock.Instant(nanoseconds: nanoseconds),
                              message: ParsedMessage(.text("{}")), byteCount: 2)
    }

    @Test("2,000 queries: each operation leaves once ended and taken; ended ids remembered up to the bound")
    func queriesLeave() {
        var operations = Operations()
        for n in 0..<2000 {
            let id = "q\(n)"
            operations.start(id, step: "hello")
            let got101 = operations.route(id, Self.event(.next(.number(1))))
            #expect(got101 == .queued(isEnd: false))
            let got1 = operations.take(id)
            #expect(got1 != nil)
            let got2 = operations.release(id)
            #expect(got2.isEmpty)
            let got3 = operations.route(id, Self.event(.complete))
            #expect(got3 == .absorbed)
            #expect(operations.liveCount == 0)
        }
        #expect(operations.recentCount == Operations.recentCapacity)
        // A result after the server's own end (still remembered) and for an id never started: protocol errors.
        let got102 = operations.route("q1999", Self.event(.next(.null)))
        #expect(got102 == .protocolError)
        let got103 = operations.route("nope", Self.event(.next(.null)))
        #expect(got103 == .protocolError)
    }

    @Test("a subscription left running: its step's pending results are bounded, then every result is pushed")
    func runningSubscription() {
        var operations = Operations()
        operations.start("s0", step: "count")
        var pushed = 0
        for _ in 0..<(Operations.pendingCapacity + 500) {
            if operations.route("s0", Self.event(.next(.null))) == .pushed { pushed += 1 }
        }
        #expect(operations.pendingCount("s0") == Operations.pendingCapacity && pushed == 500)
        for _ in 0..<5 { _ = operations.take("s0") }
        let got4 = operations.release("s0").count
        #expect(got4 == Operations.pendingCapacity - 5)  // the step is done: pushed
        var allPushed = true
        for _ in 0..<100_000 where operations.route("s0", Self.event(.next(.null))) != .pushed { allPushed = false }
        #expect(allPushed)
        #expect(operations.pendingCount("s0") == 0 && operations.liveCount == 1 && operations.isRunning("s0"))
        // The client ends it: results in flight afterwards are pushed, never a protocol error.
        let got5 = operations.endByClient("s0")?.isEmpty
        #expect(got5 == true)
        let got104 = operations.route("s0", Self.event(.next(.null)))
        #expect(got104 == .pushed)
        let got6 = operations.route("s0", Self.event(.complete))
        #expect(got6 == .absorbed && operations.liveCount == 0)
    }

    @Test("an end is queued past the pending bound; ended and taken, the operation leaves")
    func endQueuedPastBound() {
        var operations = Operations()
        operations.start("s0", step: nil)
        for _ in 0..<Operations.pendingCapacity { _ = operations.route("s0", Self.event(.next(.null))) }
        let got7 = operations.route("s0", Self.event(.complete))
        #expect(got7 == .queued(isEnd: true))
        let got105 = operations.route("s0", Self.event(.next(.null)))
        #expect(got105 == .protocolError)
        let got8 = operations.endByClient("s0")
        #expect(got8 == nil, "the server ended it: nothing to send")
        #expect(operations.liveCount == 0 && operations.endedByClient("s0") == false)
    }

    @Test("the live bound names the oldest released operation to end; unsubscribe finds every one of a step")
    func liveBound() {
        var operations = Operations()
        for n in 0..<Operations.liveCapacity {
            operations.start("s\(n)", step: n.isMultiple(of: 2) ? "even" : "odd")
            _ = operations.release("s\(n)")
        }
        #expect(operations.evictable() == "s0")
        #expect(operations.live(step: "odd").count == Operations.liveCapacity / 2)
        #expect(operations.live(step: "odd").first == "s1" && operations.latest["odd"] == "s\(Operations.liveCapacity - 1)")
    }

    @Test("ack ids: a window of the last 4,096, duplicates and unknown answers found, an early ack kept for its wait")
    func acks() {
        var acks = SocketIOAcks()
        for id in UInt64(0)..<10_000 {
            let got9 = acks.ask(id)
            #expect(got9)
            let got10 = acks.answer(id)
            #expect(got10 == .first)
        }
        #expect(acks.count == SocketIOAcks.window)
        let got11 = acks.answer(9_999)
        #expect(got11 == .duplicate && acks.answer(10_000) == .neverAsked && acks.answer(5) == .forgotten)
        let got106 = acks.ask(9_000)
        #expect(!got106, "asked twice within the window")
        acks.expect(10_000)
        let got107 = acks.keepEarly(3, arguments: [], arrival: .init(nanoseconds: 0))
        #expect(!got107, "not the awaited id")
        let got12 = acks.keepEarly(10_000, arguments: [.bool(true)], arrival: .init(nanoseconds: 7))
        #expect(got12)
        let got13 = acks.takeEarly()?.arrival.nanoseconds
        #expect(got13 == 7 && acks.takeEarly() == nil)
        acks.endAwait()
        let got108 = acks.keepEarly(10_000, arguments: [], arrival: .init(nanoseconds: 8))
        #expect(!got108, "after its wait: late")
    }

    @Test("graphql: 300 queries and a subscription left streaming on one connection; a looped subscribe gets new ids")
    func graphQLSoak() async throws {
        let server = try startPythonPeer("graphql_server.py")
        defer { server.process.stop() }
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "gql", "target": "ws://127.0.0.1:\(server.port)", "duration": "120s", "seed": 2,
             "scenarios": [{"name": "soak", "pattern": "flow", "protocol": "graphql-ws", "path": "/graphql",
               "connections": 1, "graphql": {"timeout": "10s"},
               "classify": [{"type": "five", "json": [{"path": "$.id", "equals": "s0"}]}], "steps": [
                 {"name": "five", "subscribe": {"query": "subscription { count(to: 200, everyMs: 5) }", "count": 5,
                                                "within": "10s"}},
                 {"loop": {"count": 300, "steps": [{"name": "hello", "query": {"query": "query { hello }", "within": "10s"}}]}},
                 {"loop": {"count": 3, "steps": [
                   {"name": "two", "subscribe": {"query": "subscription { count(to: 100, everyMs: 10) }", "count": 2,
                                                 "within": "10s"}}]}},
                 {"unsubscribe": "two"},
                 {"think": "500ms"}]}]}
            """)).run()
        let metrics = result.scenarios[0].metrics
        #expect(metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(metrics.step("hello") == 300 && metrics.step("five") == 1 && metrics.step("two") == 3)
        // The 195 results of `five` (the connection's first operation, id s0) after its step are messages no step
        // takes: each counted once, wherever it waited (the step's pending results, or arriving afterwards).
        #expect(metrics.pushed("five") == 195, "\(metrics.counters)")
        #expect(metrics.count("flow.completed") == 1 && result.invariantsHeld, "\(result.invariants)")
    }

    @Test("graphql in a paced loop running late: the query is measured from the iteration's intended start")
    func graphQLCoordinatedOmission() async throws {
        let server = try startPythonPeer("graphql_server.py")
        defer { server.process.stop() }
        // One iteration a second, each taking 1.25 s: the iterations start 0.25, 0.5 and 0.75 s late.
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "gql", "target": "ws://127.0.0.1:\(server.port)", "duration": "60s", "seed": 2,
             "scenarios": [{"name": "paced", "pattern": "flow", "protocol": "graphql-ws", "path": "/graphql",
               "connections": 1, "graphql": {"timeout": "10s"}, "steps": [
                 {"loop": {"count": 4, "rate": 1, "steps": [
                   {"name": "hello", "query": {"query": "query { hello }", "within": "10s"}},
                   {"think": "1250ms"}]}}]}]}
            """)).run()
        let metrics = result.scenarios[0].metrics
        #expect(metrics.errors.isEmpty, "\(metrics.errors)")
        let hello = try #require(metrics.histograms[MetricFamily.flowStep.name("hello")])
        #expect(hello.totalCount == 4)
        #expect(hello.maximum >= 400_000, "a late iteration's query counts its lateness: max \(hello.maximum) µs")
    }

    // The server pings every 1.9 s but advertises 1,000 ms, so the advertised sum (1.6 s) runs out before each ping;
    // its own pong deadline (0.6 s) is one a busy box still meets (0.25 s once ended a full run early, no client error).
    @Test("python-socketio at 1.9 s / 0.6 s (it advertises pingInterval 1000): a live server is not declared dead")
    func truncatedHeartbeat() async throws {
        let server = try startPythonPeer("socketio_server.py", arguments: ["--ping-interval", "1.9", "--ping-timeout", "0.6"])
        defer { server.process.stop() }
        let result = try await LoadRun(profile: try profile("""
            {"version": 1, "name": "sio", "target": "ws://127.0.0.1:\(server.port)", "duration": "60s", "seed": 2,
             "scenarios": [{"name": "chat", "pattern": "flow", "protocol": "socketio", "connections": 2,
                            "socketio": {"timeout": "10s"}, "steps": [
               {"name": "welcome", "on": {"event": "welcome", "within": "10s"}},
               {"think": "5s"},
               {"name": "echo", "emit": {"event": "echo", "args": [{"n": 1}], "ack": true, "within": "10s"}}]}]}
            """)).run()
        let metrics = result.scenarios[0].metrics
        #expect(metrics.errors["socketio_ping_timeout"] == nil && metrics.errors.isEmpty, "\(metrics.errors)")
        #expect(metrics.step("echo") == 2 && metrics.disconnects[1000] == 2, "\(metrics.disconnects)")
        #expect(result.invariantsHeld, "\(result.invariants)")
    }
}

import LoadEngine
import Profile
import Reporting
import Testing
import TestSupport

/// graphql-ws flows against strawberry-graphql on uvicorn (Tests/Peers/graphql_server.py).
@Suite("Flow graphql-ws runs", .serialized, .timeLimit(.minutes(3)))
struct FlowGraphQLRunTests {
    func run(port: Int) async throws -> RunResult {
        try await LoadRun(profile: try profile("""
            {"version": 1, "name": "gql", "target": "ws://127.0.0.1:\(port)", "duration": "60s", "seed": 2,
             "scenarios": [{"name": "subs", "pattern": "flow", "protocol": "graphql-ws", "path": "/graphql",
               "connections": 3, "graphql": {"payload": {"vu": "${vu}"}, "timeout": "10s"},
               "steps": [
                 {"name": "hello", "query": {"query": "query { hello }", "within": "5s",
                                             "match": [{"path": "$.data.hello", "equals": "world"}]}},
                 {"name": "post", "query": {"query": "mutation($t: String!) { post(text: $t) { id text } }",
                                            "variables": {"t": "from ${vu}"}, "within": "5s",
                                            "capture": {"postID": "$.data.post.id"}}},
                 {"name": "count", "subscribe": {"query": "subscription($n: Int) { count(to: $n, everyMs: 10) }",
                                                 "variables": {"n": 5}, "within": "5s"}},
                 {"name": "three", "subscribe": {"query": "subscription { count(to: 100, everyMs: 10) }", "count": 3,
                                                 "within": "5s"}},
                 {"unsubscribe": "three"}
               ]}]}
            """)).run()
    }

    @Test("a correct server: query, mutation, a subscription to its complete and one cut after 3 results")
    func subscriptions() async throws {
        let server = try startPythonPeer("graphql_server.py")
        defer { server.process.stop() }
        let result = try await run(port: server.port)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.errors.isEmpty, "\(metrics.errors)")
        for name in ["hello", "post", "count", "three"] { #expect(metrics.step(name) == 3, "\(name)") }
        #expect(metrics.histograms["flow.first_result.count"]?.totalCount == 3)
        #expect(metrics.count("flow.completed") == 3 && result.invariantsHeld, "\(result.invariants)")
    }

    @Test("a server whose hello fails: graphql_error on that step, the rest runs")
    func brokenHello() async throws {
        let server = try startPythonPeer("graphql_server.py", arguments: ["--break", "error"])
        defer { server.process.stop() }
        let result = try await run(port: server.port)
        let metrics = result.scenarios[0].metrics
        #expect(metrics.stepErrors("hello") == 3 && metrics.errors["graphql_error"] == 3, "\(metrics.errors)")
        #expect(metrics.step("post") == 3 && metrics.step("count") == 3)
    }
}

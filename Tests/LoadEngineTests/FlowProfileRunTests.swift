import Foundation
import LoadEngine
import Profile
import Reporting
import Testing

/// Flow profiles as users write them (JSON through the decoder), with a feeder read from a real CSV file.
@Suite("Flow profiles run", .serialized, .timeLimit(.minutes(3)))
struct FlowProfileRunTests {
    @Test("a unique CSV feeder binds row N to connection N: its columns reach headers, query and messages")
    func feederRowsReachMessages() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-flow-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }  // a leftover temp directory harms nothing
        let file = directory.appendingPathComponent("users.csv")
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data(
            "vu,token,name\r\n0,t-zero,\"Ann, the first\"\r\n1,t-one,Bob\r\n2,t-two,\"Cy \"\"the third\"\"\"\r\n".utf8)))
        var profile = try profile("""
            {"version": 1, "name": "feeder", "target": "embedded", "duration": "30s", "seed": 4,
             "data": {"users": {"file": "\(file.path)", "mode": "unique", "secret": ["token"]}},
             "scenarios": [{"name": "chat", "pattern": "flow", "connections": 3,
               "headers": {"Authorization": "Bearer ${users.token}"}, "query": {"user": "${users.name}"},
               "steps": [
                 {"send": {"json": {"who": "v${vu}", "row": "v${users.vu}", "name": "${users.name}"}}},
                 {"name": "mine", "expect": {"json": [{"path": "$.who", "equals": "v${users.vu}"},
                                                      {"path": "$.name", "equals": "${users.name}"}],
                                             "capture": {"who": "$.who"}, "within": "10s", "skip": 0}},
                 {"send": {"text": "echo ${who} ${seq}"}},
                 {"name": "text", "expect": {"text": {"regex": "^echo v[0-2] ([0-9]+)$"}, "capture": {"n": {"group": 1}},
                                             "within": "10s"}},
                 {"if": {"var": "n", "equals": "1", "then": [{"mark": "m"}], "else": [{"close": {"code": 4000, "reason": "bad seq"}}]}}
               ]}]}
            """)
        let loaded = FeederLoader.load(profile) { path in Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
        profile.feederTables = try loaded.get()
        let result = try await LoadRun(profile: profile).hostedRun()
        let metrics = result.scenarios[0].metrics
        #expect(metrics.step("mine") == 3 && metrics.step("text") == 3, "\(metrics.errors)")
        #expect(metrics.errors.isEmpty && metrics.count("flow.completed") == 3, "\(metrics.errors)")
        #expect(metrics.disconnects[1000] == 3 && metrics.disconnects[4000] == nil)
        #expect(result.invariantsHeld, "\(result.invariants)")
    }

    @Test("sharded: each shard binds the unique rows the unsharded run gives its connections")
    func uniqueRowsAcrossShards() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-flow-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }  // a leftover temp directory harms nothing
        let file = directory.appendingPathComponent("users.csv")
        // Rows 0-1 are scenario a's connections 0-1, rows 2-3 scenario b's.
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data("s,n\na,v0\na,v1\nb,v0\nb,v1\n".utf8)))
        func scenario(_ name: String) -> String {
            """
            {"name": "\(name)", "pattern": "flow", "connections": 2, "steps": [
              {"send": {"json": {"s": "${users.s}", "n": "${users.n}"}}},
              {"name": "row", "expect": {"json": [{"path": "$.s", "equals": "\(name)"}, {"path": "$.n", "equals": "v${vu}"}],
                                         "within": "10s", "skip": 0}}]}
            """
        }
        var profile = try profile("""
            {"version": 1, "name": "shards", "target": "embedded", "duration": "30s", "seed": 5,
             "data": {"users": {"file": "\(file.path)", "mode": "unique"}},
             "scenarios": [\(scenario("a")), \(scenario("b"))]}
            """)
        profile.feederTables = try FeederLoader.load(profile) { path in Array(try Data(contentsOf: URL(fileURLWithPath: path))) }.get()
        for index in 0..<2 {
            let result = try await LoadRun(profile: profile, shard: Shard(index: index, count: 2)).hostedRun()
            for scenario in result.scenarios {
                let metrics = scenario.metrics
                #expect(metrics.step("row") == 1 && metrics.errors.isEmpty,
                        "shard \(index + 1)/2, scenario \(scenario.scenario.name): \(metrics.errors)")
            }
        }
    }
}

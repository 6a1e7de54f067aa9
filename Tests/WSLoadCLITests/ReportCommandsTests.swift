import EmbeddedServer
import Foundation
import JSON
import Runtime
import Testing
import TestSupport
import WSLoadCLI

private func scratchDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-reports-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

private func cli(_ arguments: [String]) async -> (code: ExitCode, output: String, error: String) {
    let captured = CapturedOutput()
    let code = await WSLoad.main(arguments: arguments, output: captured.commandOutput)
    return (code, captured.output, captured.error)
}

@Suite("wsload merge, compare and report", .serialized, .timeLimit(.minutes(3)))
struct ReportCommandsTests {
    @Test("shards run, merge into one report, compare, export an hlog; bad reports exit 65/66 with the place")
    func endToEnd() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        try Data("""
            {"version": 1, "name": "cli-shards", "target": "embedded", "duration": "10s", "seed": 3,
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 6, "messagesPerConnection": 30}],
             "report": {"interval": "200ms"}}
            """.utf8).write(to: URL(fileURLWithPath: path("p.json")))
        for shard in ["1/2", "2/2"] {
            let result = await cli(["run", path("p.json"), "--shard", shard, "--report-dir", path("runs"), "--quiet"])
            #expect(result.code == .success, "\(result.error)")
        }
        let shards = try FileManager.default.contentsOfDirectory(atPath: path("runs")).sorted()
        try #require(shards.count == 2, "\(shards)")
        #expect(shards[0].hasSuffix("-shard1of2.json") && shards[1].hasSuffix("-shard2of2.json"))
        let merge = await cli(["merge", path("runs/" + shards[0]), path("runs/" + shards[1]), "-o", path("merged.json")])
        #expect(merge.code == .success, "\(merge.error)")
        let merged = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: path("merged.json")))))
        #expect(merged["total"]?["metrics"]?["ws.messages_sent"]?["count"]?.integerValue == 180)
        #expect(merged["total"]?["metrics"]?["ws.message_rtt"]?["count"]?.integerValue == 180)

        // report: the summary, and an HdrHistogram log.
        let summary = await cli(["report", path("merged.json")])
        #expect(summary.code == .success && summary.output.contains("sent 180, received 180"))
        let hlog = await cli(["report", path("merged.json"), "--hlog", path("m.hlog")])
        #expect(hlog.code == .success)
        let log = try String(contentsOfFile: path("m.hlog"), encoding: .utf8)
        #expect(log.contains("\nTag=ws.message_rtt,"))

        // compare: a report against itself changes nothing and passes; JSON and Markdown forms.
        let same = await cli(["compare", path("merged.json"), path("merged.json"), "--json"])
        #expect(same.code == .success, "\(same.error)")
        let rows = try #require(try JSONValue(parsing: same.output)["rows"]?.arrayValue)
        #expect(rows.contains { $0["metric"]?.stringValue == "ws.message_rtt" && $0["statistic"]?.stringValue == "p99" })
        #expect(rows.allSatisfy { $0["significant"] == .bool(false) })
        let markdown = await cli(["compare", path("merged.json"), path("runs"), "--markdown"])
        #expect(markdown.output.contains("| metric | base | head | change | p | |"))
        // Bad input: corrupt, truncated, wrong schema, bad histogram, missing file, bad usage.
        let text = try String(contentsOfFile: path("merged.json"), encoding: .utf8)
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: path("corrupt.json")))
        try Data(text.prefix(text.count / 2).utf8).write(to: URL(fileURLWithPath: path("truncated.json")))
        try Data(text.replacingOccurrences(of: "wsload.report/1", with: "wsload.report/9").utf8)
            .write(to: URL(fileURLWithPath: path("schema.json")))
        let badBlob = text.replacingOccurrences(of: #""histogram": "HISTF"#, with: #""histogram": "XISTF"#)
        try Data(badBlob.utf8).write(to: URL(fileURLWithPath: path("blob.json")))
        let cases: [(String, String)] = [
            ("corrupt.json", "corrupt.json: not valid JSON: line 1, column 3"),
            ("truncated.json", "truncated.json: not valid JSON"),
            ("schema.json", "schema: \"wsload.report/9\" is not wsload.report/1"),
            ("blob.json", "metrics.ws.connect.histogram: histogram blob at byte 0"),
        ]
        for (file, message) in cases {
            for command in [["merge", path(file), path("merged.json")], ["compare", path(file), path("merged.json")], ["report", path(file)]] {
                let result = await cli(command)
                #expect(result.code == .invalidInput, "\(command): \(result.error)")
                #expect(result.error.contains(message), "\(command): \(result.error)")
            }
        }
        // Mismatched: a report of another profile.
        try Data("""
            {"version": 1, "name": "other", "target": "embedded", "duration": "300ms",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 1}]}
            """.utf8).write(to: URL(fileURLWithPath: path("other.json")))
        #expect(await cli(["run", path("other.json"), "--out", path("other-report.json"), "--quiet"]).code == .success)
        let mismatched = await cli(["merge", path("merged.json"), path("other-report.json")])
        #expect(mismatched.code == .invalidInput && mismatched.error.contains("ran a different profile than"), "\(mismatched.error)")
        #expect(await cli(["compare", path("nope.json"), path("merged.json")]).code == .noInput)
        #expect(await cli(["merge", path("merged.json")]).code == .usage)
        #expect(await cli(["compare", path("merged.json")]).code == .usage)
        #expect(await cli(["compare", path("merged.json"), path("merged.json"), "--fail-on", "p99 up"]).code == .usage)
        #expect(await cli(["run", path("p.json"), "--shard", "3/2"]).code == .usage)
    }

    @Test("compare gates CI: a much slower head fails with exit 5")
    func regressionGate() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        // The same report twice, but the head's latencies multiplied: built by editing a real report.
        try Data("""
            {"version": 1, "name": "gate", "target": "embedded", "duration": "2s",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 5, "schedule": {"model": "closed", "thinkTime": "5ms"}}],
             "report": {"interval": "250ms"}}
            """.utf8).write(to: URL(fileURLWithPath: path("p.json")))
        #expect(await cli(["run", path("p.json"), "--out", path("base.json"), "--quiet"]).code == .success)
        // The head: the same profile against a server that delays every echo by 5 ms.
        let group = try EventLoopGroup(loopCount: 1)
        let server = try await EmbeddedServer.bind(ServerConfiguration(chaos: ChaosOptions(echoDelay: .milliseconds(5))), on: group)
        let serving = Task(executorPreference: server.taskExecutor) { await server.run() }
        let head = await cli(["run", path("p.json"), "--target", server.url, "--out", path("head.json"), "--quiet"])
        serving.cancel()
        await serving.value
        group.shutdown()
        #expect(head.code == .success, "\(head.error)")
        let result = await cli(["compare", path("base.json"), path("head.json")])
        #expect(result.code == .regression && result.code.rawValue == 5, "\(result.output)")
        #expect(result.error.contains("regression: ws.message_rtt p50 +"), "\(result.error)")
        #expect(result.output.contains("test: interval-bootstrap"))
        // A budget wide enough passes the same pair.
        let lenient = await cli(["compare", path("base.json"), path("head.json"), "--fail-on", "ws.message_rtt p50 +100000%"])
        #expect(lenient.code == .success, "\(lenient.error)")
    }
}

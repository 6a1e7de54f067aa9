import Foundation
import Histogram
import JSON
import LoadEngine
import Profile
import Reporting
import Testing
@testable import WSLoadCLI

/// The pure parts of `run --processes`: the plan (how many children and servers the open-file limit needs), the
/// control messages and the progress lines the processes exchange.
@Suite("run --processes: plan and protocol", .timeLimit(.minutes(1)))
struct ProcessesPlanTests {
    private func profile(connections: Int, target: String = "embedded") throws -> Profile {
        let text = """
            {"version": 1, "name": "plan", "target": "\(target)", "duration": "5s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": \(connections)}]}
            """
        return try ProfileDecoder.decode(Array(text.utf8))
    }

    @Test("a profile that fits one process (client and server together) runs in process, asked or not")
    func fitsInProcess() throws {
        let small = try profile(connections: 100)
        #expect(try ProcessPlan.make(profile: small, request: nil, limit: 20_000) == nil)
        #expect(try ProcessPlan.make(profile: small, request: .auto, limit: 20_000) == nil)
        #expect(try ProcessPlan.make(profile: small, request: .count(1), limit: 20_000) == nil)
    }

    @Test("the reconnect storm's 10,000 embedded connections: one client process and one server process under 20,000 files")
    func stormPlan() throws {
        let plan = try #require(try ProcessPlan.make(profile: try profile(connections: 10_000), request: nil, limit: 20_000))
        #expect(plan == ProcessPlan(children: 1, servers: 1, sockets: 20_000, limit: 20_000))
        #expect(plan.automaticNote == "needs about 20000 sockets, the limit is 20000: running 1 process and 1 server process")
    }

    @Test("auto picks the fewest children and servers that fit, by the same estimate LoadRun refuses a run by")
    func autoCounts() throws {
        // 36,000 embedded connections: 72,000 sockets in one process; 2 children of 18,000 fit 20,000 files, and
        // 2 servers (one per child) too.
        let big = try #require(try ProcessPlan.make(profile: try profile(connections: 36_000), request: .auto, limit: 20_000))
        #expect((big.children, big.servers) == (2, 2))
        #expect((0..<2).map(big.server(ofChild:)) == [0, 1])
        // 200 connections under 250 files: one child would need 200 + 64; two need 100 + 64 each, and one server
        // would hold 200 + 64 again, so two servers.
        let low = try #require(try ProcessPlan.make(profile: try profile(connections: 200), request: .auto, limit: 250))
        #expect((low.children, low.servers) == (2, 2))
        // Four children of 5,000 need only one server of 20,000 files... 20,000 + 64 does not fit: two servers, each
        // serving a block of two shards.
        let four = try #require(try ProcessPlan.make(profile: try profile(connections: 20_000), request: .count(4), limit: 20_000))
        #expect((four.children, four.servers) == (4, 2))
        #expect((0..<4).map(four.server(ofChild:)) == [0, 0, 1, 1])
        // A URL target has no server processes, and its sockets are the clients' only.
        let url = try #require(try ProcessPlan.make(profile: try profile(connections: 30_000, target: "ws://127.0.0.1:9/"),
                                                    request: nil, limit: 20_000))
        #expect((url.children, url.servers, url.sockets) == (2, 0, 30_000))
        #expect(OpenFileBudget.sockets(for: try profile(connections: 30_000), serverInProcess: true) == 60_000)
    }

    @Test("bad requests name --processes: 0, negative, over 256, not a number, more processes than connections, too few")
    func refusals() throws {
        for text in ["0", "-1", "257", "two", ""] {
            #expect(throws: UsageError.self) { _ = try ProcessPlan.request(text) }
        }
        #expect(try ProcessPlan.request("auto") == .auto)
        #expect(try ProcessPlan.request("256") == .count(256))
        let three = try profile(connections: 3)
        let error = #expect(throws: UsageError.self) { _ = try ProcessPlan.make(profile: three, request: .count(4), limit: 20_000) }
        #expect(error?.description.hasPrefix("--processes: 4 processes for 3 connections") == true, "\(String(describing: error))")
        let tooFew = #expect(throws: UsageError.self) {
            _ = try ProcessPlan.make(profile: try profile(connections: 40_000), request: .count(2), limit: 20_000)
        }
        #expect(tooFew?.description.contains("each needs about 20000 sockets") == true, "\(String(describing: tooFew))")
    }

    @Test("control messages read back as written; anything else is ignored")
    func controlMessages() {
        for message in [ProcessControl.Message.stop(signal: SIGINT), .stop(signal: SIGTERM), .start(millisecondsSince1970: 1_700_000_000_123)] {
            #expect(ProcessControl.Message(line: String(message.line.dropLast())) == message)
        }
        for line in ["stop", "stop 0", "stop 99", "start -5", "start x", "go 1", "stop 2 3"] {
            #expect(ProcessControl.Message(line: line) == nil, "\(line)")
        }
    }

    @Test("progress lines carry a child's progress exactly, and the parent sums its children's")
    func progressLines() throws {
        var recent = MetricSet()
        recent.counters[Metric.messagesReceived.name] = 30
        var histogram = Histogram()
        for value in [100, 200, 5_000] { histogram.record(UInt64(value)) }
        recent.histograms[Metric.messageRoundTrip.name] = histogram
        var child = RunProgress.assembled(elapsed: .seconds(3), duration: .seconds(10), liveConnections: 7, targetConnections: 8,
                                recent: recent, recentSeconds: 1, total: recent, isStopping: false)
        child.scenarios = [ScenarioProgress(name: "echo", liveConnections: 7, targetConnections: 8, total: recent)]
        child.invariants.checked["messages.in_sequence"] = 5
        let line = ProgressLine.encode(child)
        #expect(line.hasSuffix("\n") && !line.dropLast().contains("\n"))
        let back = try ProgressLine.decode(String(line.dropLast()))
        #expect(back.elapsed == child.elapsed && back.liveConnections == 7 && back.targetConnections == 8)
        #expect(back.total == child.total && back.recent == child.recent)
        #expect(back.invariants.checked == child.invariants.checked && back.invariants.violationCount == 0)
        #expect(back.scenarios.map(\.name) == ["echo"] && back.scenarios[0].total == recent)

        var slower = back
        slower.elapsed = .seconds(2)
        slower.liveConnections = 3
        let sum = try #require(ProgressLine.aggregate([back, slower]))
        #expect(sum.elapsed == .seconds(2), "the slowest child's clock")
        #expect(sum.liveConnections == 10 && sum.targetConnections == 16)
        #expect(sum.recent.counter(.messagesReceived) == 60)
        #expect(sum.total[histogram: .messageRoundTrip]?.totalCount == 6)
        #expect(sum.scenarios.count == 1 && sum.scenarios[0].liveConnections == 14 && sum.scenarios[0].total.counter(.messagesReceived) == 60)
        #expect(sum.invariants.checked["messages.in_sequence"] == 10)
        #expect(!sum.isStopping)
        #expect(throws: (any Error).self) { _ = try ProgressLine.decode("{\"elapsed\": -1}") }
    }

    @Test("a server process's lines: ready and chaos read back; others are not its lines")
    func serverLines() {
        let ready = ProfileServer.Line(ready: "ws://127.0.0.2:4000/", httpOrigin: "http://127.0.0.2:4000")
        #expect(ProfileServer.Line(parsing: String(ready.text.dropLast())) == ready)
        let chaos = ProfileServer.Line(chaos: 2, firedAt: .milliseconds(2500), affected: 40)
        #expect(ProfileServer.Line(parsing: String(chaos.text.dropLast())) == chaos)
        #expect(ProfileServer.Line(parsing: "wsload serve: listening") == nil)
        #expect(ProfileServer.Line(parsing: "{\"chaos\": {\"index\": -1, \"firedAt\": 1, \"affected\": 1}}") == nil)
    }
}

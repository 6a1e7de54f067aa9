import HTTP1
import JSON
@testable import LiveView
@testable import LoadEngine
import Profile
import Reporting
import Runtime
import Testing
import TestSupport

/// The `data:` of every event of `name` in an SSE text, in order.
func events(_ name: String, in text: String) -> [String] {
    text.components(separatedBy: "\n\n").compactMap { block in
        let lines = block.split(separator: "\n").map(String.init)
        guard let at = lines.firstIndex(of: "event: " + name), at + 1 < lines.count, lines[at + 1].hasPrefix("data: ") else { return nil }
        return String(lines[at + 1].dropFirst(6))
    }
}

/// ``knownProgress()`` at `second`, its histograms built once: an hour of frames must not cost an hour of histogram
/// allocations (the test shares two cores with every other suite).
private func progress(at second: Int) -> RunProgress {
    var progress = sharedProgress
    progress.elapsed = .seconds(second)
    return progress
}

private let sharedProgress = knownProgress()

@Suite("Dashboard endpoint", .serialized, .timeLimit(.minutes(2)))
struct DashboardEndpointTests {
    @Test("over a socket: the page with its CSP, hello then frames on /events, the summary ends the stream, /summary.json after")
    func servesPageEventsAndSummary() async throws {
        let profile = try ProfileDecoder.decode(Array(dashboardProfile.utf8))
        let endpoint = try await DashboardEndpoint.start(
            at: LiveAddress(host: "127.0.0.1", port: 0), profile: profile, runID: "feedface", shard: nil)
        do {
            try await withLoopGroup(loopCount: 1) { group in
                let loop = group.loops[0]
                try await onLoop(loop) {
                    var client = try await LiveTestClient.connect(to: endpoint.boundAddress, on: loop)
                    defer { client.close() }
                    try await client.request("/")
                    let (page, html) = try await client.readResponse()
                    #expect(page.status == 200 && page.headers["Content-Type"] == "text/html; charset=utf-8")
                    #expect(page.headers["Content-Security-Policy"] == "default-src 'none'; script-src 'unsafe-inline'; "
                        + "style-src 'unsafe-inline'; img-src data:; connect-src 'self'")
                    #expect(html == DashboardPage.html)
                    try await client.request("/summary.json")
                    let (early, _) = try await client.readResponse()
                    #expect(early.status == 404, "no summary before the end")
                    try await client.request("/favicon.ico")
                    #expect(try await client.readResponse().head.status == 404)

                    var live = try await LiveTestClient.connect(to: endpoint.boundAddress, on: loop)
                    defer { live.close() }
                    try await live.request("/events")
                    #expect(await live.read(until: "event: hello\n"))
                    endpoint.update(knownProgress(elapsed: .milliseconds(1_000)))
                    endpoint.update(knownProgress(elapsed: .milliseconds(1_500)))  // the same second: no frame
                    endpoint.update(knownProgress(elapsed: .milliseconds(2_000)))
                    #expect(await live.read(until: "\"n\":1,"))

                    var total = MetricSet()
                    total[counter: .connectAttempts] = 5
                    total[counter: .connectionsOpened] = 5
                    let result = try knownResult(profile: dashboardProfile, total: total)
                    endpoint.finish(result, exitCode: 3)
                    endpoint.update(knownProgress(elapsed: .milliseconds(3_000)))  // after the summary: nothing
                    #expect(await live.readToEnd(), "the summary ends the stream")
                    let body = live.text.components(separatedBy: "\r\n\r\n").dropFirst().joined()
                    #expect(events("hello", in: body) == [DashboardSummary.hello(profile: profile, runID: "feedface", shard: nil,
                                                                                  backlog: DashboardEndpoint.backlogFrames)])
                    let frames = try events("frame", in: body).map { try JSONValue(parsing: $0) }
                    #expect(frames.map { $0["n"]?.integerValue } == [0, 1])
                    #expect(frames.map { $0["t"]?.numberValue } == [1, 2])
                    #expect(events("summary", in: body) == [DashboardSummary.json(result, exitCode: 3)])
                    #expect(body.hasSuffix("event: summary\ndata: " + DashboardSummary.json(result, exitCode: 3) + "\n\n"))

                    // A page that comes after the end gets everything again, hello first, and the end.
                    var late = try await LiveTestClient.connect(to: endpoint.boundAddress, on: loop)
                    defer { late.close() }
                    try await late.request("/events")
                    #expect(await late.readToEnd())
                    let replay = late.text.components(separatedBy: "\r\n\r\n").dropFirst().joined()
                    #expect(replay.hasPrefix("event: hello\n"))
                    #expect(events("frame", in: replay).count == 2 && events("summary", in: replay).count == 1)

                    try await client.request("/summary.json")
                    let (after, summary) = try await client.readResponse()
                    #expect(after.status == 200 && after.headers["Content-Type"] == "application/json")
                    #expect(summary == DashboardSummary.json(result, exitCode: 3) + "\n")
                    let verdict = try JSONValue(parsing: summary)
                    #expect(verdict["verdict"]?.stringValue == "thresholds_failed" && verdict["exitCode"]?.integerValue == 3)
                }
            }
        } catch {
            await endpoint.stop()
            throw error
        }
        await endpoint.stop()
        await endpoint.stop()
    }

    @Test("over a socket, a page that comes after an hour and more gets hello, then the last 3,600 frames in order")
    func latePageGetsTheBacklog() async throws {
        let profile = try ProfileDecoder.decode(Array(dashboardProfile.utf8))
        let endpoint = try await DashboardEndpoint.start(
            at: LiveAddress(host: "127.0.0.1", port: 0), profile: profile, runID: "late", shard: nil)
        for second in 1...3_650 { endpoint.update(progress(at: second)) }
        do {
            try await withLoopGroup(loopCount: 1) { group in
                let loop = group.loops[0]
                try await onLoop(loop) {
                    var late = try await LiveTestClient.connect(to: endpoint.boundAddress, on: loop)
                    defer { late.close() }
                    try await late.request("/events")
                    #expect(await late.read(until: "{\"n\":3649,"))
                    endpoint.update(knownProgress(elapsed: .seconds(3_651)))
                    endpoint.finish(try knownResult(profile: dashboardProfile, total: MetricSet()), exitCode: 0)
                    #expect(await late.readToEnd())
                    let body = late.text.components(separatedBy: "\r\n\r\n").dropFirst().joined()
                    #expect(body.hasPrefix("event: hello\n"))
                    let numbers = try events("frame", in: body).map { try JSONValue(parsing: $0)["n"]?.integerValue ?? -1 }
                    // The kept hour (3,600 frames, and one more until the summary takes the backlog's spare slot),
                    // then the live frame.
                    #expect(numbers.first == 49 && numbers.last == 3_650 && numbers.count == 3_602)
                    #expect(numbers == Array(49...3_650), "in order, none lost")
                    #expect(events("summary", in: body).count == 1)
                }
            }
        } catch {
            await endpoint.stop()
            throw error
        }
        await endpoint.stop()
    }

    @Test("stopping right after the summary (no --linger) still delivers it to a page that is streaming")
    func summaryReachesPagesBeforeTheStop() async throws {
        let profile = try ProfileDecoder.decode(Array(dashboardProfile.utf8))
        let endpoint = try await DashboardEndpoint.start(
            at: LiveAddress(host: "127.0.0.1", port: 0), profile: profile, runID: "quick", shard: nil)
        let result = try knownResult(profile: dashboardProfile, total: MetricSet())
        do {
            try await withLoopGroup(loopCount: 1) { group in
                let loop = group.loops[0]
                try await onLoop(loop) {
                    var page = try await LiveTestClient.connect(to: endpoint.boundAddress, on: loop)
                    defer { page.close() }
                    try await page.request("/events")
                    #expect(await page.read(until: "event: hello\n"))
                    for second in 1...200 { endpoint.update(progress(at: second)) }
                    endpoint.finish(result, exitCode: 0)
                    // What `wsload run` does at its end without --linger: the stop follows the summary at once.
                    async let stopped: Void = endpoint.stop()
                    #expect(await page.readToEnd())
                    await stopped
                    #expect(page.text.hasSuffix("event: summary\ndata: " + DashboardSummary.json(result, exitCode: 0) + "\n\n"))
                }
            }
        } catch {
            await endpoint.stop()
            throw error
        }
        await endpoint.stop()
    }

    @Test("hello stays first for a late page once the backlog has dropped the oldest frames")
    func helloOutlivesTheBacklog() {
        let stream = EventStream(backlogLimit: 2, preamble: [("hello", "{\"profile\":\"p\"}")])
        for number in 1...5 { stream.publish(event: "frame", data: String(number), keep: true) }
        let subscription = stream.subscribe(disconnect: {})
        defer { subscription.cancel() }
        #expect(subscription.replay.map { String(decoding: $0, as: UTF8.self) } == [
            "event: hello\ndata: {\"profile\":\"p\"}\n\n", "event: frame\ndata: 4\n\n", "event: frame\ndata: 5\n\n",
        ])
    }

    @Test("the endpoint keeps an hour of frames and the summary besides hello")
    func backlogHoldsAnHour() async throws {
        let profile = try ProfileDecoder.decode(Array(dashboardProfile.utf8))
        let feed = DashboardFeed(hello: DashboardSummary.hello(profile: profile, runID: "r", shard: nil, backlog: 3600))
        for second in 1...3_700 { feed.update(progress(at: second)) }
        feed.finish(try knownResult(profile: dashboardProfile, total: MetricSet()), exitCode: 0)
        let replay = feed.stream.subscribe(disconnect: {}).replay.map { String(decoding: $0, as: UTF8.self) }
        #expect(replay.count == 1 + DashboardEndpoint.backlogFrames + 1)
        #expect(replay.first?.hasPrefix("event: hello\n") == true && replay.last?.hasPrefix("event: summary\n") == true)
        #expect(replay[1].hasPrefix("event: frame\ndata: {\"n\":100,"), "the oldest 100 of 3,700 frames went")
    }
}

import LoadEngine
import Profile
import Reporting
import Synchronization

/// `wsload run --dashboard ADDR`: a live page served by wsload itself (no external assets) at `/`, fed once a
/// second over Server-Sent Events at `/events`, ending with the run's summary (also at `/summary.json` once the run
/// ended). Events: `hello` first to every client, then `frame`s (the last ``backlogFrames`` replayed to a page that
/// connects late, so its charts have the past), then `summary`, after which the stream ends.
package final class DashboardEndpoint: Sendable {
    /// Frames a late page gets: an hour of the run.
    package static let backlogFrames = 3600

    private let server: LiveServer
    private let feed: DashboardFeed

    package var boundAddress: LiveAddress { server.boundAddress }

    private init(server: LiveServer, feed: DashboardFeed) {
        self.server = server
        self.feed = feed
    }

    /// Binds `address` and serves the page, the events and (after the run) the summary.
    /// - Parameters: the profile gives the `hello` event its name, duration, scenario and step names (nothing else
    ///   of it is sent); `runID` and `shard` identify the run.
    /// - Throws: ``LiveServerError`` when the address cannot be bound (the run does not start).
    package static func start(at address: LiveAddress, profile: Profile, runID: String,
                              shard: Shard?) async throws(LiveServerError) -> DashboardEndpoint {
        let hello = DashboardSummary.hello(profile: profile, runID: runID, shard: shard, backlog: backlogFrames)
        let feed = DashboardFeed(hello: hello)
        let server = try await LiveServer.start(at: address, name: "--dashboard") { feed.respond(to: $0) }
        return DashboardEndpoint(server: server, feed: feed)
    }

    /// The run's latest progress: a frame once its second turned. Returns at once (the frame is a few hundred bytes
    /// built from what `progress` holds; the event stream never waits for a client).
    package func update(_ progress: RunProgress) { feed.update(progress) }
    /// The summary event; the stream then ends (the page keeps what it shows), and `/summary.json` serves it.
    /// - Parameter exitCode: the exit code the run will end with.
    package func finish(_ result: RunResult, exitCode: Int32) { feed.finish(result, exitCode: exitCode) }
    /// How long ``stop()`` waits, after the summary, for the pages still streaming to take it and go.
    static let summaryFlushLimit: Duration = .seconds(2)

    /// Stops serving (every client's stream ends). Idempotent. After ``finish(_:exitCode:)`` it first lets the
    /// clients still streaming take the summary and close (a page closes its stream on it; the server ends each
    /// stream with a FIN after its last event), for at most ``summaryFlushLimit``: stopping at once would close
    /// their connections with the summary still queued, and without `--linger` no page would ever see it.
    package func stop() async {
        if feed.hasSummary {
            let deadline = ContinuousClock.now + Self.summaryFlushLimit
            while feed.stream.clientCount > 0, ContinuousClock.now < deadline {
                // Cancelled (the run is being torn down): stop at once.
                do { try await Task.sleep(for: .milliseconds(10)) } catch { break }
            }
        }
        await server.stop()
    }
}

/// What the dashboard's handler and the run share: the event stream and, under a lock, the frame builder and the
/// summary. The run's thread only takes the lock to add a progress; the server's loop only to read the summary.
final class DashboardFeed: Sendable {
    private struct State {
        var frames = DashboardFrames()
        var summary: [UInt8]?
    }

    let stream: EventStream
    private let state = Mutex(State())
    private let page = Array(DashboardPage.html.utf8)

    init(hello: String) {
        // The hello goes first to every client, however many frames the backlog dropped; the summary is kept
        // besides the frames.
        stream = EventStream(backlogLimit: DashboardEndpoint.backlogFrames + 1, preamble: [(DashboardEvent.hello, hello)])
    }

    func update(_ progress: RunProgress) {
        state.withLock { state in
            // Published under the lock: frames leave in order, and none after the summary.
            guard state.summary == nil, let frame = state.frames.add(progress) else { return }
            stream.publish(event: DashboardEvent.frame, data: frame, keep: true)
        }
    }

    func finish(_ result: RunResult, exitCode: Int32) {
        let summary = DashboardSummary.json(result, exitCode: exitCode)
        state.withLock { state in
            guard state.summary == nil else { return }
            state.summary = Array((summary + "\n").utf8)
            stream.publish(event: DashboardEvent.summary, data: summary, keep: true)
            stream.finish()
        }
    }

    /// Whether the summary was published (the streams are finished).
    var hasSummary: Bool { state.withLock { $0.summary != nil } }

    func respond(to request: LiveRequest) -> LiveResponse {
        let policy = [("Content-Security-Policy", DashboardPage.contentSecurityPolicy)]
        switch request.path {
        case "/":
            return .content(status: 200, contentType: "text/html; charset=utf-8", body: page, headers: policy)
        case "/events":
            return .events(stream)
        case "/summary.json":
            guard let summary = state.withLock({ $0.summary }) else {
                return .content(status: 404, contentType: "text/plain; charset=utf-8",
                                body: Array("the run has not ended: its summary is not there yet\n".utf8), headers: policy)
            }
            return .content(status: 200, contentType: "application/json", body: summary, headers: policy)
        default:
            return .content(status: 404, contentType: "text/plain; charset=utf-8",
                            body: Array("not found; the dashboard serves /, /events and /summary.json\n".utf8), headers: policy)
        }
    }
}

/// The names of the dashboard's events (the page listens for the same three).
enum DashboardEvent {
    static let hello = "hello"
    static let frame = "frame"
    static let summary = "summary"
}

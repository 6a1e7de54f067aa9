import Runtime
import Synchronization

/// One request the live server hands its handler: only `GET` and `HEAD` reach it (anything else is answered 405).
package struct LiveRequest: Sendable {
    package var method: String
    /// The path without the query, e.g. `/metrics`.
    package var path: String
    /// The raw query after `?`, if any.
    package var query: String?
    /// The `Accept` header, if any (content negotiation: OpenMetrics vs Prometheus text).
    package var accept: String?

    package init(method: String, path: String, query: String? = nil, accept: String? = nil) {
        self.method = method
        self.path = path
        self.query = query
        self.accept = accept
    }
}

/// What the handler answers.
package enum LiveResponse: Sendable {
    /// A complete response (the server adds Content-Length, Date, `X-Content-Type-Options: nosniff`,
    /// `Cache-Control: no-store`, and `headers`).
    case content(status: Int, contentType: String, body: [UInt8], headers: [(String, String)] = [])
    /// A Server-Sent Events stream (`text/event-stream`): the client first gets the stream's backlog, then every
    /// event published until the stream finishes or the client goes.
    case events(EventStream)
}

/// Why the live server could not start (the address is taken, not local to this host): the run does not start (exit 1).
package struct LiveServerError: Error, Sendable, CustomStringConvertible {
    package var description: String
    package init(description: String) { self.description = description }
}

/// The small HTTP/1.1 server behind `--metrics` and `--dashboard`: its own event loop (a thread), only GET/HEAD, a
/// cap on concurrent clients, on the request head's size and on the time to send it, keep-alive, nothing written to
/// disk. It binds where told (the CLI defaults to loopback).
///
/// Every client is a child task of the server's one task (on its loop); ``stop()`` cancels that task, which closes
/// the listener and every connection (SSE streams included), then shuts the loop down.
package final class LiveServer: Sendable {
    /// What a peer may cost the server: every limit in one place.
    package struct Limits: Sendable {
        /// Connections served at once (SSE streams included); past it a client gets a 503 and is closed.
        package var maximumClients = 64
        /// The largest request head (request line and fields); a larger one gets a 431 and is closed.
        package var maximumHeadSize = 8 * 1024
        /// The most header fields in a head.
        package var maximumHeaderCount = 64
        /// The time a client has to send a whole request head, counted from the connection's start or the end of
        /// the previous response (an idle kept-alive connection is closed after it, too).
        package var headTimeout: Duration = .seconds(10)
        /// The time the kernel may refuse a response's (or an event batch's) bytes before the client is closed.
        package var writeTimeout: Duration = .seconds(10)
        /// Per SSE client: published bytes its writer has not taken yet (past what the socket buffers) before the
        /// client is disconnected. ``EventStream`` enforces it (this is its default cap).
        package var maximumUnsentEventBytes = 1024 * 1024

        /// The limits `wsload run` serves with.
        package static let standard = Limits()

        package init() {}
    }

    /// The bound address (with the real port when port 0 was asked for).
    package let boundAddress: LiveAddress
    let core: LiveServerCore
    private let loop: EventLoop
    private let task: Task<Void, Never>
    private let isStopped = Atomic(false)

    private init(boundAddress: LiveAddress, core: LiveServerCore, loop: EventLoop, task: Task<Void, Never>) {
        self.boundAddress = boundAddress
        self.core = core
        self.loop = loop
        self.task = task
    }

    /// Binds `address` and starts serving; `handler` runs on the server's loop for every GET/HEAD.
    /// - Parameter name: what the server is, for errors ("--metrics").
    package static func start(at address: LiveAddress, name: String, limits: Limits = .standard,
                              handler: @escaping @Sendable (LiveRequest) -> LiveResponse) async throws(LiveServerError) -> LiveServer {
        let socketAddress: SocketAddress
        let loop: EventLoop
        do {
            socketAddress = try SocketAddress(ip: address.host, port: Int(address.port))
            loop = try EventLoop(index: 0)
        } catch {
            throw LiveServerError(description: "\(name): cannot serve on \(address): \(error)")
        }
        // Small socket queues: the server sends small responses, and a client that stops reading SSE is noticed
        // after a few hundred KiB rather than megabytes.
        let options = TCPOptions(connectTimeout: nil, readHighWaterMark: 16 * 1024, writeHighWaterMark: 256 * 1024,
                                 writeLowWaterMark: 64 * 1024)
        let listener: TCPListener
        do {
            listener = try await loop.submit { try TCPListener.bind(socketAddress, on: loop, backlog: 128, options: options) }
        } catch {
            loop.shutdown()
            throw LiveServerError(description: "\(name): cannot listen on \(address): \(error)")
        }
        let bound = LiveAddress(host: listener.localAddress.ip, port: UInt16(clamping: listener.localAddress.port))
        let core = LiveServerCore(loop: loop, limits: limits, boundAddress: bound, handler: handler)
        let task = Task(executorPreference: loop.taskExecutor) { await core.acceptLoop(listener) }
        return LiveServer(boundAddress: bound, core: core, loop: loop, task: task)
    }

    /// Stops accepting, closes every client (finishing their streams) and the loop. Idempotent.
    package func stop() async {
        let (isFirst, _) = isStopped.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing)
        task.cancel()
        await task.value
        guard isFirst else { return }
        // Every handle the task opened is closing; their close callbacks run on the loop within an iteration or two.
        // What is still open after a second is closed by the shutdown and counted as a leak.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(1)
        while loop.liveHandleCount > 0, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))  // cancelled: stop waiting, the shutdown closes what is left
        }
        statistics.leakedHandles.store(loop.shutdown(), ordering: .relaxed)
    }

    /// Counts of what the server did, for tests and diagnostics.
    package var statistics: LiveServerStatistics { core.statistics }
}

/// What a live server did so far; relaxed atomics, read from any thread.
package final class LiveServerStatistics: Sendable {
    /// Connections accepted (refused ones included).
    package let accepted = Atomic(0)
    /// Connections being served now (not counting refused ones).
    package let open = Atomic(0)
    /// Connections refused because ``LiveServer/Limits/maximumClients`` were open.
    package let refused = Atomic(0)
    /// Connections closed because a head or a write overran its timeout.
    package let timedOut = Atomic(0)
    /// Requests answered (any status).
    package let requests = Atomic(0)
    /// Handles still open when ``LiveServer/stop()`` shut the loop down (a leak when not 0).
    package let leakedHandles = Atomic(0)
}

/// The accept loop and what every connection shares; its mutable state is touched only on the server's loop.
final class LiveServerCore: @unchecked Sendable {
    let loop: EventLoop
    let limits: LiveServer.Limits
    let boundAddress: LiveAddress
    let handler: @Sendable (LiveRequest) -> LiveResponse
    let statistics = LiveServerStatistics()
    /// Refusals under way (each lingers up to a second so the client reads its 503); loop-confined.
    private var refusing = 0

    init(loop: EventLoop, limits: LiveServer.Limits, boundAddress: LiveAddress,
         handler: @escaping @Sendable (LiveRequest) -> LiveResponse) {
        self.loop = loop
        self.limits = limits
        self.boundAddress = boundAddress
        self.handler = handler
    }

    /// Accepts until the task is cancelled (which closes the listener); each client is a child task.
    func acceptLoop(_ listener: TCPListener) async {
        await withDiscardingTaskGroup { clients in
            // accept fails only once the listener is closed (the stop cancelled the task): that ends the loop.
            while let tcp = try? await listener.accept() {
                statistics.accepted.add(1, ordering: .relaxed)
                if statistics.open.load(ordering: .relaxed) >= limits.maximumClients {
                    statistics.refused.add(1, ordering: .relaxed)
                    // A flood of refusals must not become the resource: past as many as the cap, close at once.
                    guard refusing < limits.maximumClients else {
                        tcp.close()
                        continue
                    }
                    refusing += 1
                    clients.addTask(executorPreference: loop.taskExecutor) {
                        await LiveConnection(tcp: tcp, core: self).refuse()
                        self.refusing -= 1
                    }
                    continue
                }
                statistics.open.add(1, ordering: .relaxed)
                clients.addTask(executorPreference: loop.taskExecutor) {
                    await LiveConnection(tcp: tcp, core: self).serve()
                    self.statistics.open.subtract(1, ordering: .relaxed)
                }
            }
            listener.close()
        }
    }
}

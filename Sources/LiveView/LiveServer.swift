import Runtime

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

/// A Server-Sent Events fan-out: events go to every client connected now, and the ones published with `keep` also
/// to a bounded backlog replayed to clients that connect later. A client that does not keep up (its unsent bytes
/// past a cap) is disconnected rather than buffered without bound.
package final class EventStream: Sendable {
    /// - Parameter backlogLimit: the most kept events replayed to a new client (the oldest go first).
    package init(backlogLimit: Int) {
        // SKELETON (r-metrics replaces this).
    }

    /// Sends `event` with `data` (one JSON document, no newlines) to every client; with `keep`, also to the
    /// backlog. Thread-safe; never blocks on a client.
    package func publish(event: String, data: String, keep: Bool) {
        // SKELETON (r-metrics replaces this).
    }

    /// Ends every client's stream after what was published; later clients get the backlog and the end.
    package func finish() {
        // SKELETON (r-metrics replaces this).
    }
}

/// Why the live server could not start (the address is taken, not local to this host): the run does not start (exit 1).
package struct LiveServerError: Error, Sendable, CustomStringConvertible {
    package var description: String
    package init(description: String) { self.description = description }
}

/// The small HTTP/1.1 server behind `--metrics` and `--dashboard`: its own event loop (a thread), only GET/HEAD, a
/// cap on concurrent clients, on the request head's size and on the time to send it, keep-alive, nothing written to
/// disk. It binds where told (the CLI defaults to loopback).
package final class LiveServer: Sendable {
    /// The bound address (with the real port when port 0 was asked for).
    package var boundAddress: LiveAddress { fatalError("SKELETON (r-metrics)") }

    /// Binds `address` and starts serving; `handler` runs on the server's loop for every GET/HEAD.
    /// - Parameter name: what the server is, for errors ("--metrics").
    package static func start(at address: LiveAddress, name: String,
                              handler: @escaping @Sendable (LiveRequest) -> LiveResponse) async throws(LiveServerError) -> LiveServer {
        throw LiveServerError(description: "\(name): not built yet")
    }

    /// Stops accepting, closes every client (finishing their streams) and the loop. Idempotent.
    package func stop() async {}
}

import Crypto
import HTTP1
import Profile
import Runtime

/// Faults the embedded HTTP file server injects; each can also be set per request in the query
/// (`?drop_after=N&throttle=BPS&fail_rate=P&ranges=0`).
package struct HTTPChaosOptions: Sendable, Hashable {
    /// Close the connection after sending this many body bytes of a response.
    package var dropAfterBytes: Int64?
    /// Send bodies at most this fast (bytes per second).
    package var throttleBytesPerSecond: Int64?
    /// Answer 503 with this probability (0–1).
    package var errorRate: Double
    /// Ignore `Range` and always send the whole file with 200 (a server without range support).
    package var ignoresRanges: Bool

    package init(dropAfterBytes: Int64? = nil, throttleBytesPerSecond: Int64? = nil, errorRate: Double = 0, ignoresRanges: Bool = false) {
        self.dropAfterBytes = dropAfterBytes
        self.throttleBytesPerSecond = throttleBytesPerSecond
        self.errorRate = errorRate
        self.ignoresRanges = ignoresRanges
    }
}

/// The embedded server's HTTP/1.1 side, on a connection that did not ask for a WebSocket:
/// - `GET|HEAD /bytes/<size>[?seed=S]`: generated content (see ``PatternContent``);
/// - `GET|HEAD /files/<name>`: a file from ``ServerConfiguration/filesDirectory``;
/// - `PUT|POST /upload[/<name>]`: a sink that digests (and, with ``ServerConfiguration/uploadDirectory``,
///   stores) what it receives and answers `{"bytes":N,"sha256":"…","parts":[…]}`.
/// Single byte ranges (206, 416), `If-Range`, strong ETags, `Last-Modified`, `Expect: 100-continue`
/// and keep-alive are supported; ``HTTPChaosOptions`` injects faults.
///
/// Every request's framing is checked before it is routed (RFC 9112 §6.1, §6.3: Transfer-Encoding with
/// Content-Length, an unknown coding or conflicting lengths are refused with 400 and the connection closed),
/// and every body is read — stored, digested or discarded — before the next request is parsed, so a body
/// never passes for a request (no CL.0 desync). ``ConnectionWatchdog`` bounds each phase in time.
struct HTTPService {
    let server: EmbeddedServer
    let stream: any ByteStream
    let tcp: TCPConnection
    let loop: EventLoop
    var random: SeededRandomNumberGenerator
    /// Closes the connection when the client idles, trickles a head, stalls a body or stops reading.
    let watchdog: ConnectionWatchdog
    var configuration: ServerConfiguration { server.configuration }
    /// The largest body a GET, HEAD or refused request may carry; it is read and discarded.
    static let maximumDiscardedBody: Int64 = 64 * 1024

    init(server: EmbeddedServer, stream: any ByteStream, tcp: TCPConnection, loop: EventLoop, random: SeededRandomNumberGenerator) {
        self.server = server
        self.stream = stream
        self.tcp = tcp
        self.loop = loop
        self.random = random
        watchdog = ConnectionWatchdog(loop: loop, tcp: tcp) { [statistics = server.statistics] _ in
            statistics.timeouts.add(1, ordering: .relaxed)
            tcp.close()
        }
    }

    /// Serves `first` and any further requests on the connection until it closes.
    mutating func serve(first: HTTPRequestHead, leftover: [UInt8]) async {
        defer { watchdog.disarm() }
        var buffer = leftover
        var request = first
        do {
            while true {
                let keepAlive = try await respond(to: request, buffer: &buffer)
                guard keepAlive, let next = try await nextHead(buffer: &buffer) else { return }
                request = next
            }
        } catch let error as HTTPParseError {
            // A timed-out connection is closed already; otherwise the peer may be gone, and it closes anyway.
            if watchdog.expired == nil { try? await refuse(400, "Bad Request", "bad request: \(error)\n") }
        } catch let error as QueryError {
            if watchdog.expired == nil { try? await refuse(400, "Bad Request", "bad request: \(error)\n") }  // as above
        } catch let error as MultipartError {
            if watchdog.expired == nil { try? await refuse(400, "Bad Request", "bad request: \(error)\n") }  // as above
        } catch {
            return
        }
    }

    /// The next request head on a kept-alive connection, or nil when the client closed it: the wait for its
    /// first byte is bound by the idle timeout, the whole head by the head timeout.
    private func nextHead(buffer: inout [UInt8]) async throws -> HTTPRequestHead? {
        var parser = HTTPHeadParser()
        if buffer.isEmpty {
            watchdog.arm(.idle, timeout: configuration.idleTimeout)
            guard try await stream.read(into: &buffer, maxBytes: 16 * 1024) > 0 else { return nil }
        }
        watchdog.arm(.head, timeout: configuration.headTimeout)
        defer { watchdog.disarm() }
        while true {
            if let (head, length) = try parser.parseRequest(buffer) {
                buffer.removeFirst(length)
                return head
            }
            guard try await stream.read(into: &buffer, maxBytes: 16 * 1024) > 0 else { return nil }
        }
    }

    /// Answers one request; returns whether the connection stays open.
    private mutating func respond(to request: HTTPRequestHead, buffer: inout [UInt8]) async throws -> Bool {
        server.statistics.httpRequests.add(1, ordering: .relaxed)
        let framing = try Self.requestFraming(request)
        let path = request.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let query = HTTPQuery(target: request.target)
        let chaos = try query.chaos(over: configuration.httpChaos)
        var keepAlive = request.keepsConnectionAlive
        if chaos.errorRate > 0 && Double.random(in: 0..<1, using: &random) < chaos.errorRate {
            guard try await discardBody(framing, buffer: &buffer) else { return false }
            try await sendSimple(503, "Service Unavailable", "chaos: fail_rate\n", keepAlive: keepAlive)
            return keepAlive
        }
        if path == "/upload" || path.hasPrefix("/upload/") {
            guard request.method == "PUT" || request.method == "POST" else {
                guard try await discardBody(framing, buffer: &buffer) else { return false }
                try await sendSimple(405, "Method Not Allowed", "use PUT or POST\n", keepAlive: keepAlive, extra: ["Allow": "PUT, POST"])
                return keepAlive
            }
            return try await receiveUpload(request, framing: framing, name: String(path.dropFirst("/upload".count).drop { $0 == "/" }),
                                           buffer: &buffer)
        }
        // GET and HEAD carry no meaningful body, but one that is sent is still read (CL.0): never parsed as a request.
        guard try await discardBody(framing, buffer: &buffer) else { return false }
        guard path.hasPrefix("/bytes/") || path.hasPrefix("/files/") else {
            try await sendSimple(404, "Not Found", "no such route: GET|HEAD /bytes/<size>, /files/<name>; PUT|POST /upload\n",
                                 keepAlive: keepAlive)
            return keepAlive
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            try await sendSimple(405, "Method Not Allowed", "use GET or HEAD\n", keepAlive: keepAlive, extra: ["Allow": "GET, HEAD"])
            return keepAlive
        }
        let source: ContentSource
        if path.hasPrefix("/bytes/") {
            guard let size = HTTPQuery.nonNegative(String(path.dropFirst("/bytes/".count))), size <= configuration.maximumGeneratedSize else {
                try await sendSimple(404, "Not Found", "no such size (0…\(configuration.maximumGeneratedSize))\n", keepAlive: keepAlive)
                return keepAlive
            }
            source = .pattern(size: size, seed: try query.seed())
        } else {
            guard let file = ContentSource.file(named: String(path.dropFirst("/files/".count)), in: configuration.filesDirectory) else {
                try await sendSimple(404, "Not Found", "not found\n", keepAlive: keepAlive)
                return keepAlive
            }
            source = file
        }
        let validators = source.validators
        var range: ByteRange?
        if !chaos.ignoresRanges, let header = request.headers["Range"], let wanted = RangeRequest(headerValue: header),
            request.headers["If-Range"].map({ validators.satisfiesIfRange($0) }) ?? true
        {
            guard let resolved = wanted.resolved(length: source.size) else {
                try await sendSimple(416, "Range Not Satisfiable", "", keepAlive: keepAlive,
                                     extra: ["Content-Range": ContentRange(range: nil, completeLength: source.size).description])
                return keepAlive
            }
            range = resolved
        }
        var headers: HTTPHeaders = ["Content-Type": "application/octet-stream", "Accept-Ranges": chaos.ignoresRanges ? "none" : "bytes"]
        if let tag = validators.entityTag { headers.add(name: "ETag", value: tag.description) }
        if let date = validators.lastModified { headers.add(name: "Last-Modified", value: date) }
        let first = range?.first ?? 0
        let count = range?.count ?? source.size
        headers.add(name: "Content-Length", value: String(count))
        if let range { headers.add(name: "Content-Range", value: ContentRange(range: range, completeLength: source.size).description) }
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(status: range == nil ? 200 : 206, reason: range == nil ? "OK" : "Partial Content", headers: headers)
        try await write(head.serialized())
        guard request.method == "GET" else { return keepAlive }
        let sent = try await sendBody(source, first: first, count: count, chaos: chaos)
        if sent < count { keepAlive = false }
        return keepAlive
    }

    /// Writes `bytes`, closing the connection if the client takes none of what is queued for the whole write
    /// timeout (an inactivity limit: a client that reads slowly gets everything).
    func write(_ bytes: [UInt8]) async throws {
        watchdog.armWrite(timeout: configuration.writeTimeout)
        defer { watchdog.disarm() }
        try await stream.write(bytes)
    }

    func sendSimple(_ status: Int, _ reason: String, _ body: String, keepAlive: Bool, extra: HTTPHeaders = HTTPHeaders()) async throws {
        var headers = extra
        if headers["Content-Type"] == nil && !body.isEmpty { headers.add(name: "Content-Type", value: "text/plain; charset=utf-8") }
        headers.add(name: "Content-Length", value: String(body.utf8.count))
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        try await write(HTTPResponseHead(status: status, reason: reason, headers: headers).serialized() + Array(body.utf8))
    }

    /// Answers with `Connection: close` when what the client sent cannot be read on: sends the FIN, then reads
    /// briefly what the client still sends (so closing with unread bytes does not reset away the answer).
    func refuse(_ status: Int, _ reason: String, _ body: String) async throws {
        try await sendSimple(status, reason, body, keepAlive: false)
        // The peer may have closed already: the drain below then ends at once.
        try? await stream.shutdownWrite()
        let tcp = tcp
        let deadline = ScheduledTimer(on: loop, after: .seconds(2)) { tcp.close() }
        defer { deadline.cancel() }
        var sink: [UInt8] = []
        var drained = 0
        while drained < 1024 * 1024, try await stream.read(into: &sink, maxBytes: 64 * 1024) > 0 {
            drained += sink.count
            sink.removeAll(keepingCapacity: true)
        }
    }
}

import HTTP1
import Runtime

/// One HTTP/1.1 connection (TCP or TLS) on one loop, carrying requests one after another (keep-alive).
///
/// Loop-confined like the streams under it: call it from an actor or task on ``loop``. A watchdog closes
/// the connection when a request is outstanding and nothing arrives for `requestTimeout`.
package final class HTTPClientConnection: @unchecked Sendable {
    package let loop: EventLoop
    /// `scheme://host:port` this connection reaches; a request for another origin needs another connection.
    package let origin: String
    private let stream: any ByteStream
    private let configuration: TransferConfiguration
    /// Received bytes not yet consumed (a response head, body bytes, or the next response).
    private var buffer: [UInt8] = []
    private var isTimedOut = false
    /// Set when the response-head deadline closed the stream (see ``readResponseHead()``).
    private var isHeadLate = false
    private var lastActivity = LoopClock().now
    private var watchdog: ScheduledTimer?
    private var isWaiting = false
    /// False once a response ends the connection, a body was abandoned, or anything failed.
    package private(set) var isReusable = true
    /// Requests sent on this connection.
    package private(set) var requestCount = 0
    /// True when the last ``readResponseHead()`` failed because the server closed the connection before
    /// sending a byte of the response: a kept-alive connection the server had already given up on, where
    /// an idempotent request may be sent again on a new connection (RFC 9112 §9.3.1).
    package private(set) var wasClosedBeforeResponse = false
    /// TCP connect and TLS handshake times, for `http.connect` metrics.
    package let connectDuration: Duration
    package let tlsDuration: Duration?
    /// Whether this connection reaches the transfer's own origin: only then do requests carry the bearer token
    /// and the credential headers, and only then was the configured TLS server name used.
    package let isTrustedOrigin: Bool

    private init(loop: EventLoop, origin: String, stream: any ByteStream, configuration: TransferConfiguration,
                 connectDuration: Duration, tlsDuration: Duration?, isTrustedOrigin: Bool) {
        self.isTrustedOrigin = isTrustedOrigin
        self.loop = loop
        self.origin = origin
        self.stream = stream
        self.configuration = configuration
        self.connectDuration = connectDuration
        self.tlsDuration = tlsDuration
    }

    deinit {
        watchdog?.cancel()
        stream.close()
    }

    static func origin(of url: HTTPURL) -> String { "\(url.isSecure ? "https" : "http")://\(url.hostHeader)" }

    /// Connects to `url`'s origin. Call on `loop`'s thread.
    /// - Parameter trustedOrigin: the origin the transfer was asked for (nil: `url`'s own). Credentials and
    ///   `serverName` belong to it; a connection to any other origin (a redirect's) gets neither.
    package static func connect(
        to url: HTTPURL, configuration: TransferConfiguration, on loop: EventLoop, trustedOrigin: TransferOrigin? = nil
    ) async throws -> HTTPClientConnection {
        let isTrusted = trustedOrigin.map { $0 == TransferOrigin(url) } ?? true
        let clock = LoopClock()
        let start = clock.now
        let tcp = try await TCPConnection.connect(host: url.host, port: url.port, on: loop, options: configuration.tcp)
        let connected = clock.now
        var stream: any ByteStream = tcp
        var tlsDuration: Duration?
        if url.isSecure {
            let context = try configuration.tls ?? TLSContext(role: .client)
            let deadline = ScheduledTimer(on: loop, after: configuration.requestTimeout) { tcp.close() }
            defer { deadline.cancel() }
            stream = try await TLSConnection.connect(over: tcp, context: context, serverName: isTrusted ? configuration.serverName ?? url.host : url.host)
            tlsDuration = connected.duration(to: clock.now)
        }
        return HTTPClientConnection(loop: loop, origin: origin(of: url), stream: stream, configuration: configuration,
                                    connectDuration: start.duration(to: connected), tlsDuration: tlsDuration,
                                    isTrustedOrigin: isTrusted)
    }

    /// The request head for `method` on `url` with the configuration's headers and auth. On a connection to
    /// another origin than the transfer's (``isTrustedOrigin``), no credential goes out: neither the bearer token
    /// nor a configured header that carries one (``TransferOrigin/isCredentialHeader(_:marked:)``).
    package func requestHead(method: String, url: HTTPURL, headers extra: HTTPHeaders = HTTPHeaders()) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: url.hostHeader)
        headers.add(name: "User-Agent", value: "wsload")
        for field in configuration.headers
        where isTrustedOrigin || !TransferOrigin.isCredentialHeader(field.name, marked: configuration.credentialHeaderNames) {
            headers.replaceOrAdd(name: field.name, value: field.value)
        }
        for field in extra { headers.replaceOrAdd(name: field.name, value: field.value) }
        if isTrustedOrigin, let token = configuration.bearerToken {
            headers.replaceOrAdd(name: "Authorization", value: "Bearer \(token)")
        }
        return HTTPRequestHead(method: method, target: url.target, headers: headers)
    }

    /// Sends a request head (and an optional small body).
    package func send(_ head: HTTPRequestHead, body: [UInt8] = []) async throws {
        requestCount += 1
        if !head.keepsConnectionAlive { isReusable = false }
        try await guarded { try await stream.write(head.serialized() + body) }
    }

    /// Sends body bytes of a request whose head was already sent.
    package func sendBody(_ bytes: [UInt8]) async throws {
        try await guarded { try await stream.write(bytes) }
    }

    /// Reads the next final response head, skipping 1xx interim responses (RFC 9110 §15.2).
    ///
    /// However the bytes come (a trickle that keeps the idle watchdog quiet, a flood of 1xx), the whole head
    /// must arrive within `responseHeadTimeout` (`timeout`), in at most `maximumInterimResponses` interim
    /// responses and `maximumHeadSize` bytes for all of them together (`http_protocol`).
    package func readResponseHead() async throws -> HTTPResponseHead {
        isHeadLate = false
        let headDeadline = ScheduledTimer(on: loop, after: configuration.responseHeadTimeout ?? configuration.requestTimeout) {
            [weak self] in
            guard let self else { return }
            self.isHeadLate = true
            self.isReusable = false
            self.stream.close()
        }
        defer { headDeadline.cancel() }
        do {
            return try await readResponseHeadBytes()
        } catch {
            guard isHeadLate else { throw error }
            throw TransferError(.requestTimeout, "no complete response head from \(origin) within "
                                + "\(configuration.responseHeadTimeout ?? configuration.requestTimeout)",
                                runtimeCode: RuntimeError.Code.timedOut.name)
        }
    }

    private func readResponseHeadBytes() async throws -> HTTPResponseHead {
        var headBytes = 0
        var interim = 0
        var parser = HTTPHeadParser(maximumHeadSize: configuration.maximumHeadSize)
        while true {
            if let (head, length) = try parser.parseResponse(buffer) {
                buffer.removeFirst(length)
                headBytes += length  // each at most maximumHeadSize, and the sum is checked at once: no overflow
                if (100..<200).contains(head.status) && head.status != 101 {
                    interim += 1
                    guard interim <= configuration.maximumInterimResponses else {
                        isReusable = false
                        throw TransferError(.httpProtocol, "more than \(configuration.maximumInterimResponses) interim (1xx) "
                                            + "responses from \(origin)")
                    }
                    let room = configuration.maximumHeadSize - headBytes
                    guard room > 0 else {
                        isReusable = false
                        throw TransferError(.httpProtocol, "interim (1xx) responses from \(origin) exceed "
                                            + "\(configuration.maximumHeadSize) bytes of head")
                    }
                    parser = HTTPHeadParser(maximumHeadSize: room)
                    continue
                }
                if !head.keepsConnectionAlive { isReusable = false }
                return head
            }
            guard try await readMore() > 0 else {
                isReusable = false
                wasClosedBeforeResponse = buffer.isEmpty
                throw TransferError(TransferError.Code.network, buffer.isEmpty ? "the server closed the connection before answering"
                                    : "the server closed the connection inside a response head",
                                    runtimeCode: RuntimeError.Code.endOfStream.name)
            }
        }
    }

    /// Reads a body framed by `framing`, handing its bytes to `sink` in order (slices of the receive
    /// buffer: no copies). `sink` returns false to abandon the rest (the connection is then not reused).
    /// - Returns: the body bytes delivered.
    @discardableResult
    package func readBody(
        framing: HTTPBodyFraming, limiter: BandwidthLimiter? = nil, sink: (ArraySlice<UInt8>) throws -> Bool
    ) async throws -> Int64 {
        var decoder = HTTPBodyDecoder(framing: framing)
        if case .untilClose = framing { isReusable = false }
        var isAbandoned = false
        var paced: Int64 = 0
        while true {
            if decoder.isComplete { return decoder.bodyBytes }  // No body (HEAD, 204, 304, Content-Length: 0).
            if !buffer.isEmpty {
                let progress: HTTPBodyDecoder.Progress
                do {
                    progress = try decoder.decode(buffer[...]) { bytes in
                        guard !isAbandoned else { return }
                        if try !sink(bytes) { isAbandoned = true }
                    }
                } catch let error as HTTPParseError {
                    isReusable = false
                    throw TransferError(.httpProtocol, "response body from \(origin), byte \(error.offset): \(error.reason)")
                }
                switch progress {
                case .complete(let consumed):
                    buffer.removeFirst(consumed)
                    return decoder.bodyBytes
                case .needMoreData:
                    buffer.removeAll(keepingCapacity: true)
                }
                if isAbandoned {
                    isReusable = false
                    return decoder.bodyBytes
                }
                if let limiter {
                    try await limiter.pace(adding: decoder.bodyBytes - paced)
                    paced = decoder.bodyBytes
                }
            }
            if try await readMore() == 0 {
                isReusable = false
                if case .untilClose = framing, (stream as? TLSConnection)?.isEndedWithoutCloseNotify == true {
                    // Only the close marks this body's end, and this close is not authenticated: a cut, not an end.
                    throw TransferError(.truncatedBody, "response body from \(origin) without a length ended after "
                                        + "\(decoder.bodyBytes) bytes by a TLS EOF without close_notify: it may be truncated")
                }
                do {
                    try decoder.finish()
                } catch {
                    throw TransferError(TransferError.Code.network, "response body from \(origin), byte \(error.offset): \(error.reason)",
                                        runtimeCode: RuntimeError.Code.endOfStream.name)
                }
                return decoder.bodyBytes
            }
        }
    }

    /// Reads a body into memory, keeping at most `limit` bytes.
    package func readBody(framing: HTTPBodyFraming, limit: Int) async throws -> [UInt8] {
        var body: [UInt8] = []
        try await readBody(framing: framing) { bytes in
            body.append(contentsOf: bytes.prefix(limit - body.count))
            return body.count < limit
        }
        return body
    }

    /// Closes now; safe from any thread.
    package func close() {
        isReusable = false
        stream.close()
    }

    private func readMore() async throws -> Int {
        // A read that finds data already buffered does not suspend, so it would not notice cancellation.
        try Task.checkCancellation()
        return try await guarded { try await stream.read(into: &buffer, maxBytes: 256 * 1024) }
    }

    /// Runs an I/O step under the request-timeout watchdog and marks the connection broken on failure.
    private func guarded<T>(_ operation: () async throws -> T) async throws -> T {
        lastActivity = LoopClock().now
        if watchdog == nil { armWatchdog(after: configuration.requestTimeout) }
        isWaiting = true
        defer {
            isWaiting = false
            lastActivity = LoopClock().now
        }
        do {
            return try await operation()
        } catch {
            isReusable = false
            if isTimedOut {
                throw TransferError(.requestTimeout, "no data from \(origin) for \(configuration.requestTimeout)",
                                    runtimeCode: RuntimeError.Code.timedOut.name)
            }
            throw TransferError.from(error, doing: "request to \(origin)")
        }
    }

    private func armWatchdog(after delay: Duration) {
        watchdog = ScheduledTimer(on: loop, after: delay) { [weak self] in
            guard let self else { return }
            self.watchdog = nil
            let idle = self.lastActivity.duration(to: LoopClock().now)
            if self.isWaiting && idle >= self.configuration.requestTimeout {
                self.isTimedOut = true
                self.stream.close()
            } else if self.isReusable {
                self.armWatchdog(after: max(.milliseconds(10), self.configuration.requestTimeout - (self.isWaiting ? idle : .zero)))
            }
        }
    }
}

/// Paces one task's reads to a byte rate (a token bucket with a 100 ms burst): the per-task bandwidth
/// cap of a constrained network. Shared by a ranged download's segments.
package final class BandwidthLimiter: @unchecked Sendable {
    package let bytesPerSecond: Int64
    private let start = LoopClock().now
    private var total: Int64 = 0

    package init(bytesPerSecond: Int64) {
        precondition(bytesPerSecond > 0)
        self.bytesPerSecond = bytesPerSecond
    }

    /// Called after a reader received `bytes`; sleeps while the task is ahead of its budget.
    func pace(adding bytes: Int64) async throws {
        total += bytes
        let allowedAt = Double(total) / Double(bytesPerSecond) - 0.1
        let elapsed = Double(start.duration(to: LoopClock().now).nanoseconds) / 1e9
        if allowedAt > elapsed {
            try await LoopClock().sleep(until: LoopClock().now.advanced(by: .nanoseconds(Int64((allowedAt - elapsed) * 1e9))))
        }
    }
}

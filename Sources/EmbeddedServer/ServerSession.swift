import Crypto
import HTTP1
import Profile
import Runtime
import WebSocket
import WebSocketIO

/// One accepted connection of the embedded server: TLS, the upgrade, then echo with chaos, read by the
/// WebSocket read loop the client shares (`WebSocketChannel`).
actor ServerSession {
    let tcp: TCPConnection
    let server: EmbeddedServer
    nonisolated let loop: EventLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    /// The transport from the accept on (the upgrade and a plain HTTP request read it before there is a channel).
    private var stream: (any ByteStream)?
    /// The read loop and the protocol state, once the upgrade was accepted.
    private var channel: WebSocketChannel?
    private var random: SeededRandomNumberGenerator
    private var isClosed = false
    /// Forces the close if the client never answers a chaos close frame.
    private var closeTimer: ScheduledTimer?
    /// Set when the client opened `/push`.
    private var push: PushStream?
    /// Set when the client opened `/chat`: the session hands its connection to a ``ChatSession``.
    private var isChat = false
    /// A plain HTTP request (no upgrade) for ``HTTPService``, with the bytes read after its head.
    private var httpRequest: (HTTPRequestHead, [UInt8])?
    /// Closes an upgraded session whose client takes none of the queued echoes or pushes for the write timeout
    /// (a client that never reads would otherwise hold its slot and its queue forever). Watched only while
    /// bytes are queued: an idle session costs nothing and is never cut.
    private lazy var writeWatchdog = ConnectionWatchdog(loop: loop, tcp: tcp) { [statistics = server.statistics, tcp] _ in
        statistics.timeouts.add(1, ordering: .relaxed)
        tcp.close()
    }
    /// Unflushed echoes at least this big are watched from the start: a flush from an empty write queue can
    /// block only past the queue's high-water mark (1 MiB by default), and echoes parsed from one read go out in
    /// one flush.
    private var watchedBatchSize: Int { max(1, configuration.tcpOptions.writeHighWaterMark / 2) }

    init(tcp: TCPConnection, server: EmbeddedServer, random: SeededRandomNumberGenerator) {
        self.tcp = tcp
        self.server = server
        self.random = random
        loop = tcp.loop
    }

    private var configuration: ServerConfiguration { server.configuration }
    private var chaos: ChaosOptions { configuration.chaos }

    func serve() async {
        defer {
            isClosed = true
            if channel != nil { writeWatchdog.disarm() }
            closeTimer?.cancel()
            stream?.close()
            tcp.close()
        }
        guard await upgrade() else {
            if let (request, leftover) = httpRequest, let stream {
                httpRequest = nil
                var service = HTTPService(server: server, stream: stream, tcp: tcp, loop: loop, random: random.split())
                await service.serve(first: request, leftover: leftover)
            }
            return
        }
        server.statistics.upgraded.add(1, ordering: .relaxed)
        server.statistics.active.add(1, ordering: .relaxed)
        let registry = server.registries[loop.index % server.registries.count]
        registry.insert(self)
        defer {
            registry.remove(self)
            server.statistics.active.subtract(1, ordering: .relaxed)
        }
        if isChat, let channel {
            // The chat session owns the connection from here; chaos kill and reset still reach its socket.
            self.channel = nil
            await ChatSession(stream: channel.stream, connection: channel.connection, tcp: tcp, server: server).serve()
            return
        }
        await withDiscardingTaskGroup { tasks in
            if let delay = chaos.closeAfter {
                tasks.addTask(executorPreference: loop.taskExecutor) {
                    // The sleep fails only when the session ends first (cancelled): then there is nothing to close.
                    guard (try? await self.loop.sleep(for: delay)) != nil else { return }
                    await self.chaosClose()
                }
            }
            if let push {
                tasks.addTask(executorPreference: loop.taskExecutor) { await self.pushLoop(push) }
            }
            await echoLoop()
            tasks.cancelAll()
        }
    }

    /// TLS (if configured), then the HTTP upgrade; false if the client did not become a WebSocket.
    private func upgrade() async -> Bool {
        let tcp = tcp
        let deadline = ScheduledTimer(on: loop, after: configuration.handshakeTimeout) { [statistics = server.statistics] in
            statistics.timeouts.add(1, ordering: .relaxed)  // a head (or TLS handshake) too slow, counted like the others
            tcp.close()
        }
        defer { deadline.cancel() }
        do {
            var byteStream: any ByteStream = tcp
            if let context = configuration.tls {
                byteStream = try await TLSConnection.accept(over: tcp, context: context)
            }
            stream = byteStream
            var parser = HTTPHeadParser()
            var buffer: [UInt8] = []
            while true {
                guard try await byteStream.read(into: &buffer, maxBytes: 16 * 1024) > 0 else { return false }
                guard let (request, length) = try parser.parseRequest(buffer) else { continue }
                let fields = HandshakeFields(request.headers)
                if !fields.hasUpgrade {
                    deadline.cancel()
                    httpRequest = (request, Array(buffer[length...]))
                    return false
                }
                // An upgrade is a GET without a body (RFC 6455 §4.1): a framing header would leave bytes that pass
                // for frames, or smuggle a body past the handshake.
                if fields.hasBodyFraming {
                    throw HTTPParseError(offset: 0, reason: "an upgrade request with Content-Length or Transfer-Encoding")
                }
                configuration.onHandshake?(request)
                push = PushStream(requestTarget: request.target)
                isChat = ChatSession.isChatTarget(request.target)
                switch WebSocketServerHandshake.respond(
                    to: request, fields: fields, subprotocols: configuration.subprotocols,
                    isCompressionEnabled: configuration.isCompressionEnabled)
                {
                case .reject(let response, _):
                    server.statistics.rejected.add(1, ordering: .relaxed)
                    try await byteStream.write(response.serialized())
                    return false
                case .accept(let response, _, let compression):
                    try await byteStream.write(response.serialized())
                    var limits = configuration.limits
                    limits.compression = compression
                    var connection = WebSocketConnection(role: .server, configuration: limits)
                    connection.receive(buffer[length...])
                    channel = WebSocketChannel(stream: byteStream, connection: connection)
                    return true
                }
            }
        } catch let error as HTTPParseError {
            server.statistics.rejected.add(1, ordering: .relaxed)
            let body = "bad request: \(error)\n"
            let response = HTTPResponseHead(status: 400, reason: "Bad Request",
                                            headers: ["Content-Length": String(body.utf8.count), "Connection": "close"])
            // Best effort: the connection is closed next whether or not the client can still read the answer.
            try? await stream?.write(response.serialized() + Array(body.utf8))
            return false
        } catch {
            return false  // TLS failure, timeout, or the client went away.
        }
    }

    /// Echoes every message back until the connection ends. The channel answers pings, replies to the
    /// client's close (the server then closes TCP first, §7.1.1) and writes the close frame of a failure.
    private func echoLoop() async {
        guard let channel else { return }
        if chaos.isReadingStopped {
            // A stalled server: keep the socket open, read nothing, answer nothing, until cancelled (the
            // sleep's only failure, which ends the session as intended).
            try? await loop.sleep(for: .seconds(365 * 24 * 3600))
            return
        }
        let watchedBatchSize = watchedBatchSize
        /// Echo bytes queued on the connection since its last flush (the channel flushes before each read).
        var unflushed = 0
        do {
            while let event = try await channel.next() {
                switch event {
                case .message(let message):
                    if let delay = chaos.echoDelay { try await loop.sleep(for: delay) }
                    if chaos.closeProbability > 0 && Double.random(in: 0..<1, using: &random) < chaos.closeProbability {
                        await chaosClose()
                        continue
                    }
                    if !channel.connection.hasOutput { unflushed = 0 }
                    channel.connection.send(message)
                    server.statistics.messagesEchoed.add(1, ordering: .relaxed)
                    // Bytes the client has not taken yet, or a batch big enough to block alone: watch for a stall.
                    unflushed &+= message.byteCount
                    if tcp.pendingWriteBytes > 0 || unflushed >= watchedBatchSize {
                        writeWatchdog.armWrite(timeout: configuration.writeTimeout)
                    }
                case .ping, .pong:
                    continue  // The channel answered the ping; an unsolicited pong needs nothing.
                case .closeReceived:
                    return  // The channel wrote our reply; the server closes TCP first (§7.1.1).
                case .failed:
                    server.statistics.protocolFailures.add(1, ordering: .relaxed)
                    return
                }
            }
        } catch {
            return  // The client went away, a chaos action closed the socket, or the session was cancelled.
        }
    }

    /// Sends the push stream until the connection closes (or the session is cancelled).
    private func pushLoop(_ push: PushStream) async {
        let clock = LoopClock()
        var sequence: UInt64 = 0
        var next = clock.now.advanced(by: push.interval)
        guard let channel else { return }
        while !isClosed && channel.connection.state == .open {
            do { try await clock.sleep(until: next) } catch { return }
            guard !isClosed && channel.connection.state == .open else { return }
            let message = push.message(sequence: sequence, sentNanoseconds: clock.now.nanoseconds)
            channel.connection.send(.binary(message))
            sequence += 1
            server.statistics.messagesPushed.add(1, ordering: .relaxed)
            if tcp.pendingWriteBytes > 0 || message.count >= watchedBatchSize {
                writeWatchdog.armWrite(timeout: configuration.writeTimeout)
            }
            do { try await channel.flush() } catch { return }
            next = next.advanced(by: push.interval)
        }
    }

    /// Chaos: drops the TCP connection at once (the client sees 1006), with a FIN or an RST.
    func drop(reset: Bool = false) {
        guard !isClosed else { return }
        isClosed = true
        if reset { tcp.reset() } else {
            stream?.close()
            tcp.close()
        }
    }

    /// Chaos: reads nothing more until `duration` has passed.
    func stall(for duration: Duration) {
        channel?.readsHeldUntil = LoopClock().now.advanced(by: duration)
    }

    /// Chaos: a close frame with `code`, then the closing handshake (forced after 5 s).
    func close(code: WebSocketCloseCode) async {
        guard !isClosed, let channel, channel.connection.state == .open else { return }
        channel.connection.close(code: code, reason: "chaos")
        // A failed write is safe to ignore: the client is gone, and the timer below ends the session anyway.
        try? await channel.flush()
        let stream = stream
        closeTimer = ScheduledTimer(on: loop, after: .seconds(5)) { stream?.close() }
    }

    /// Ends the connection the way ``ChaosOptions/closeMode`` says.
    private func chaosClose() async {
        guard !isClosed, let channel, channel.connection.state == .open else { return }
        server.statistics.chaosCloses.add(1, ordering: .relaxed)
        switch chaos.closeMode {
        case .closeFrame:
            channel.connection.close(code: chaos.closeCode, reason: "chaos")
            // A failed write is safe to ignore: the client is gone, and the echo loop's read then ends.
            try? await channel.flush()
            // The echo loop ends when the client's close arrives; do not wait forever for it.
            let stream = stream
            closeTimer = ScheduledTimer(on: loop, after: .seconds(5)) { stream?.close() }
        case .drop:
            isClosed = true
            stream?.close()
        case .reset:
            isClosed = true
            tcp.reset()
        }
    }
}

extension WebSocketConnection.Message {
    /// The payload's size in bytes.
    var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let bytes): bytes.count
        }
    }
}

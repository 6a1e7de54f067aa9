import HTTP1
import Runtime
import WebSocket

/// One WebSocket client connection as an actor pinned to an event loop, shaped like the
/// `URLSessionWebSocketTask` pattern of the reference (`events()`, `send`, `sendPing`, `disconnect`).
///
/// ``run()`` connects and then serves the connection until it closes: its reader and its ping task live
/// in run's task group and end with it. Events arrive on ``events()``: `.connected` only after a valid
/// 101, then messages, then exactly one `.disconnected` (or `.error` alone if the connection was never
/// made), after which the stream finishes — nothing follows `.disconnected`.
public actor WebSocketManager {
    /// What happened on the connection.
    public enum Event: Sendable {
        /// The handshake completed (a valid 101); carries the negotiated subprotocol.
        case connected(subprotocol: String?)
        case text(String)
        case data([UInt8])
        /// The connection ended: the peer's close code (1005 if its close had none; 1006 if there was no
        /// closing handshake) and reason.
        case disconnected(WebSocketCloseCode, String?)
        case error(WebSocketClientError)
    }

    public enum State: Sendable, Hashable { case idle, connecting, open, closing, closed }

    public nonisolated let loop: EventLoop
    public nonisolated let url: WebSocketURL
    public nonisolated let configuration: WebSocketClientConfiguration
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    public private(set) var state: State = .idle
    /// The subprotocol the server chose, once connected.
    public private(set) var negotiatedSubprotocol: String?
    /// The permessage-deflate parameters agreed, once connected.
    public private(set) var negotiatedCompression: PerMessageDeflateParameters?
    /// The round trip of the last answered ping.
    public private(set) var lastPingRoundTrip: Duration?
    /// Once closed: the code `.disconnected` carried (the peer's; 1005 if its close had none; 1006 if
    /// there was no closing handshake).
    public var closeCode: WebSocketCloseCode? { state == .closed ? (ending?.code ?? .abnormalClosure) : nil }
    /// Why it closed, once closed: the peer's close reason, or what went wrong when there was no closing
    /// handshake (1006). Nil while open, and when the peer's close carried no reason.
    public var closeReason: String? {
        guard state == .closed else { return nil }
        if configuration.faults.isForgettingAbnormalCloseReason && closeCode == .abnormalClosure { return nil }
        return ending?.reason
    }
    /// How long each phase of the opening handshake took, once connected.
    public private(set) var handshakeTimings: HandshakeTimings?

    /// The phases of the opening handshake, as a load report splits them.
    public struct HandshakeTimings: Sendable, Hashable {
        /// DNS and the TCP handshake.
        public var tcpConnect: Duration
        /// The TLS handshake (wss only).
        public var tlsHandshake: Duration?
        /// From sending the upgrade request to a valid 101.
        public var upgrade: Duration
        /// When the 101 was validated (loop clock).
        public var completedAt: LoopClock.Instant
    }

    /// When `.connected` was emitted and the state became open (loop clock); the oracle checks it came
    /// after ``HandshakeTimings/completedAt``.
    public private(set) var connectedAt: LoopClock.Instant?

    private let eventStream: AsyncStream<Event>
    private let eventContinuation: AsyncStream<Event>.Continuation
    private var stream: (any ByteStream)?
    /// The protocol state; a closed placeholder until the handshake. Non-optional on purpose: reading a
    /// field through an optional copied the whole struct on every message.
    private var connection = WebSocketConnection.closedPlaceholder
    private var ending: (code: WebSocketCloseCode, reason: String?)?
    private var isPeerDead = false
    private var closeWaiters: [CheckedContinuation<Void, Never>] = []
    private var nextPingID: UInt64 = 0
    private var pingSentAt: [UInt64: LoopClock.Instant] = [:]
    private var pingWaiters: [UInt64: CheckedContinuation<Duration, any Error>] = [:]
    private var answeredPings: [UInt64: Duration] = [:]
    private let clock = LoopClock()
    private var isRunning = false
    private var receiveBuffer: [UInt8] = []
    private var lastFailure: WebSocketConnection.Event?
    private var pingInterval: Duration?
    private var pingIntervalWaiter: CheckedContinuation<Void, Never>?
    private var hasDeliveredAfterClose = false

    /// - Parameter loop: the loop this connection lives on (its socket, timers and this actor).
    public init(url: WebSocketURL, configuration: WebSocketClientConfiguration = .init(), loop: EventLoop) {
        self.url = url
        self.configuration = configuration
        self.loop = loop
        (eventStream, eventContinuation) = AsyncStream.makeStream(of: Event.self)
        pingInterval = configuration.pingInterval
    }

    /// The connection's events. One consumer; the stream finishes after `.disconnected` (or a
    /// connect `.error`).
    public nonisolated func events() -> AsyncStream<Event> { eventStream }

    // MARK: Lifecycle

    /// Connects (unless ``connect()`` already did), then serves the connection until it closes (by either
    /// side, by failure, or by cancelling the calling task). Never throws: failures are events.
    public func run() async {
        if state != .open {
            do {
                try await connect()
            } catch {
                eventContinuation.yield(.error(error))
                finish()
                return
            }
        }
        isRunning = true
        await withTaskGroup(of: Void.self) { group in
            group.addTask(executorPreference: loop.taskExecutor) {
                await self.readLoop()
                await self.post(.readerEnded)
            }
            // The ping task exists only while pinging is on: an idle connection holds just its reader.
            var hasPingTask = false
            while true {
                if pingInterval != nil && !hasPingTask {
                    hasPingTask = true
                    group.addTask(executorPreference: loop.taskExecutor) { await self.pingLoop() }
                }
                if await nextCommand() == .readerEnded { break }
            }
            state = .closed
            pingIntervalWaiter?.resume()
            pingIntervalWaiter = nil
            group.cancelAll()
        }
        isRunning = false
        stream?.close()
        let (code, reason) = ending ?? (.abnormalClosure, "connection ended")
        eventContinuation.yield(.disconnected(code, reason))
        finish()
    }

    /// What run()'s body reacts to while its children work.
    private enum Command { case pingingChanged, readerEnded }

    private var pendingCommands: [Command] = []
    private var commandWaiter: CheckedContinuation<Command, Never>?

    private func post(_ command: Command) {
        if let waiter = commandWaiter {
            commandWaiter = nil
            waiter.resume(returning: command)
        } else {
            pendingCommands.append(command)
        }
    }

    private func nextCommand() async -> Command {
        if !pendingCommands.isEmpty { return pendingCommands.removeFirst() }
        return await withCheckedContinuation { commandWaiter = $0 }
    }

    private func finish() {
        state = .closed
        connection.transportClosed()
        stream?.close()
        eventContinuation.finish()
        for waiter in pingWaiters.values {
            waiter.resume(throwing: WebSocketClientError(.notConnected, "connection closed before the pong"))
        }
        pingWaiters = [:]
        let waiters = closeWaiters
        closeWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Performs the opening handshake (TCP, TLS for wss, HTTP upgrade) within `handshakeTimeout`.
    /// ``run()`` calls it; call it directly only to drive the connection without `run`.
    public func connect() async throws(WebSocketClientError) {
        guard state == .idle else { throw WebSocketClientError(.invalidConfiguration, "connect() called twice") }
        state = .connecting
        var deadlineHit = false
        var target = url
        var headers = configuration.headers
        switch configuration.authentication {
        case .bearer(let token): headers.replaceOrAdd(name: "Authorization", value: "Bearer \(token)")
        case .header(let name, let value): headers.replaceOrAdd(name: name, value: value)
        case .query(let name, let token): target = url.addingQueryItem(name: name, value: token)
        case nil: break
        }
        let handshake = WebSocketClientHandshake(
            host: url.host, port: url.port, isSecure: url.isSecure, target: target.target, origin: configuration.origin,
            subprotocols: configuration.subprotocols, compression: configuration.compression, headers: headers)
        var deadline: ScheduledTimer?
        defer { deadline?.cancel() }
        do {
            if url.isSecure && configuration.tls == nil {
                throw WebSocketClientError(.invalidConfiguration, "wss:// needs a TLS context")
            }
            let started = clock.now
            let tcp = try await TCPConnection.connect(host: url.host, port: url.port, on: loop, options: configuration.tcp)
            let tcpConnected = clock.now
            var tlsDone: LoopClock.Instant?
            deadline = ScheduledTimer(on: loop, after: configuration.handshakeTimeout) {
                deadlineHit = true
                tcp.close()
            }
            var byteStream: any ByteStream = tcp
            stream = tcp
            if url.isSecure, let context = configuration.tls {
                byteStream = try await TLSConnection.connect(over: tcp, context: context, serverName: configuration.serverName ?? url.host)
                stream = byteStream
                tlsDone = clock.now
            }
            if configuration.faults.isConnectedBeforeHandshake {
                // The reference's bug, for the oracle's tests: `.connected` before the server said anything.
                state = .open
                connectedAt = clock.now
                eventContinuation.yield(.connected(subprotocol: nil))
            }
            try await byteStream.write(handshake.request.serialized())
            var parser = HTTPHeadParser()
            var buffer: [UInt8] = []
            while true {
                if try await byteStream.read(into: &buffer, maxBytes: 16 * 1024) == 0 {
                    throw WebSocketClientError(.handshake, "the server closed the connection before answering the handshake")
                }
                guard let (head, length) = try parser.parseResponse(buffer) else { continue }
                let result = try handshake.validate(head)
                var limits = configuration.limits
                limits.compression = result.compression
                var connection = WebSocketConnection(role: .client, configuration: limits)
                connection.receive(buffer[length...])
                self.connection = connection
                negotiatedSubprotocol = result.subprotocol
                negotiatedCompression = result.compression
                handshakeTimings = HandshakeTimings(
                    tcpConnect: started.duration(to: tcpConnected),
                    tlsHandshake: tlsDone.map { tcpConnected.duration(to: $0) },
                    upgrade: (tlsDone ?? tcpConnected).duration(to: clock.now), completedAt: clock.now)
                break
            }
        } catch {
            stream?.close()
            state = .closed
            throw Self.classify(error, deadlineHit: deadlineHit, timeout: configuration.handshakeTimeout)
        }
        if configuration.faults.isConnectedBeforeHandshake && state == .open { return }
        guard state == .connecting else {
            // disconnect() was called while the handshake ran.
            stream?.close()
            state = .closed
            throw WebSocketClientError(.notConnected, "disconnected during the handshake")
        }
        state = .open
        connectedAt = clock.now
        eventContinuation.yield(.connected(subprotocol: negotiatedSubprotocol))
    }

    private static func classify(_ error: any Error, deadlineHit: Bool, timeout: Duration) -> WebSocketClientError {
        if deadlineHit { return WebSocketClientError(.handshakeTimeout, "no complete handshake within \(timeout)") }
        switch error {
        case let error as WebSocketClientError: return error
        case let error as RuntimeError: return .from(error, during: .connect)
        case let error as WebSocketHandshakeError: return WebSocketClientError(.handshake, error.detail, handshakeError: error)
        case let error as HTTPParseError: return WebSocketClientError(.handshake, "malformed response: \(error)")
        case is CancellationError: return WebSocketClientError(.notConnected, "cancelled during the handshake")
        default: return WebSocketClientError(.connect, "\(error)")
        }
    }

    // MARK: Reading

    /// The next message, read by the calling task itself, like `URLSessionWebSocketTask.receive()`:
    /// the fastest path (no reader task, no stream hop), for drivers that alternate send and receive.
    /// Pings are answered and pongs matched while it reads. Use either this (after ``connect()``) or
    /// ``run()``, not both.
    /// - Throws: `protocol` after a violation (the connection is failed with its close code);
    ///   `not_connected` once the connection has closed (``events()`` then ends with `.disconnected`).
    public func receive() async throws(WebSocketClientError) -> WebSocketConnection.Message {
        guard !isRunning else { throw WebSocketClientError(.invalidConfiguration, "receive() while run() reads") }
        guard let stream, state == .open || state == .closing else {
            if state == .closed && configuration.faults.isDeliveringAfterClose && !hasDeliveredAfterClose {
                hasDeliveredAfterClose = true  // the fault: a message after `.disconnected`
                return .text("late")
            }
            throw WebSocketClientError(.notConnected, "receive on a connection that is \(state)")
        }
        do {
            while true {
                while let event = connection.nextEvent() {
                    if case .message(let message) = event { return message }
                    if try await handle(event) {
                        throw WebSocketClientError(.notConnected, "closed: \(ending.map { "\($0.code)" } ?? "")")
                    }
                }
                try await flush()
                // Reuse one buffer across calls (an actor property cannot be passed inout across an await).
                var buffer: [UInt8] = []
                swap(&buffer, &receiveBuffer)
                buffer.removeAll(keepingCapacity: true)
                let count = try await stream.read(into: &buffer, maxBytes: 64 * 1024)
                if count == 0 {
                    if ending == nil { ending = (.abnormalClosure, "the connection closed without a closing handshake") }
                    throw WebSocketClientError(.notConnected, "the connection closed without a closing handshake")
                }
                connection.receive(buffer)
                receiveBuffer = buffer
            }
        } catch {
            let failure: WebSocketClientError
            switch error {
            case let error as WebSocketClientError: failure = error
            case let error as RuntimeError: failure = .from(error, during: .transport)
            default: failure = WebSocketClientError(.transport, "\(error)")
            }
            if case .failed(let protocolError)? = lastFailure {
                lastFailure = nil
                endReceiving()
                throw WebSocketClientError(.protocolViolation, protocolError.description, protocolError: protocolError)
            }
            if ending == nil { ending = (.abnormalClosure, failure.detail) }
            endReceiving()
            throw failure
        }
    }

    /// After ``receive()`` saw the end: emit `.disconnected` and finish, as run() would.
    private func endReceiving() {
        guard state != .closed else { return }
        stream?.close()
        let (code, reason) = ending ?? (.abnormalClosure, "connection ended")
        eventContinuation.yield(.disconnected(code, reason))
        finish()
    }

    private func readLoop() async {
        guard let stream else { return }
        // Grows to what reads deliver; no up-front reservation (idle connections must stay small).
        var buffer: [UInt8] = []
        do {
            while true {
                while let event = connection.nextEvent() {
                    if try await handle(event) { return }
                }
                try await flush()
                buffer.removeAll(keepingCapacity: true)
                if try await stream.read(into: &buffer, maxBytes: 64 * 1024) == 0 {
                    if ending == nil { ending = (.abnormalClosure, "the connection closed without a closing handshake") }
                    return
                }
                connection.receive(buffer)
            }
        } catch {
            guard ending == nil else { return }
            if isPeerDead {
                ending = (.abnormalClosure, "no pong within \(configuration.pongTimeout)")
            } else if error is CancellationError || Task.isCancelled {
                ending = (.abnormalClosure, "cancelled")
            } else {
                let failure = (error as? RuntimeError).map { WebSocketClientError.from($0, during: .transport) }
                    ?? WebSocketClientError(.transport, "\(error)")
                eventContinuation.yield(.error(failure))
                ending = (.abnormalClosure, failure.detail)
            }
        }
    }

    /// Handles one protocol event; true when the connection is over.
    private func handle(_ event: WebSocketConnection.Event) async throws -> Bool {
        switch event {
        case .message(.text(let text)):
            eventContinuation.yield(.text(text))
        case .message(.binary(let bytes)):
            eventContinuation.yield(.data(bytes))
        case .ping:
            try await flush()  // The pong is queued.
        case .pong(let payload):
            didReceivePong(payload)
        case .closeReceived(let code, let reason):
            ending = (code ?? .noStatusReceived, reason.isEmpty ? nil : reason)
            state = .closing
            try? await flush()  // Our reply, if the peer started the close.
            await awaitServerClose()
            return true
        case .failed(let error):
            lastFailure = event
            eventContinuation.yield(.error(WebSocketClientError(.protocolViolation, error.description, protocolError: error)))
            ending = (error.closeCode, error.reason)
            try? await flush()  // The close frame with the error's code.
            return true
        }
        return false
    }

    /// RFC 6455 §7.1.1: the server closes TCP first; wait for its FIN for at most `closeTimeout`.
    private func awaitServerClose() async {
        guard let stream else { return }
        let timer = ScheduledTimer(on: loop, after: configuration.closeTimeout) { stream.close() }
        var buffer: [UInt8] = []
        while let count = try? await stream.read(into: &buffer, maxBytes: 4096), count > 0 {
            buffer.removeAll(keepingCapacity: true)
        }
        timer.cancel()
    }

    private func flush() async throws {
        guard let stream, connection.hasOutput else { return }
        try await stream.write(connection.takeOutput())
    }

    // MARK: Sending

    /// Sends a text message. - Throws: `not_connected` unless open; `transport` if the write fails.
    public func send(text: String) async throws(WebSocketClientError) {
        try await send(.text(text))
    }

    /// Sends a binary message.
    public func send(data: [UInt8]) async throws(WebSocketClientError) {
        try await send(.binary(data))
    }

    public func send(_ message: WebSocketConnection.Message) async throws(WebSocketClientError) {
        guard state == .open, connection.state == .open else {
            throw WebSocketClientError(.notConnected, "send on a connection that is \(state)")
        }
        connection.send(message)
        do {
            try await flush()
        } catch {
            throw (error as? RuntimeError).map { WebSocketClientError.from($0, during: .transport) }
                ?? WebSocketClientError(.transport, "\(error)")
        }
    }

    // MARK: Heartbeats

    /// Sends a ping and returns the round trip when its pong arrives (needs ``run()`` to be reading).
    public func sendPing() async throws -> Duration {
        let id = try await transmitPing()
        if let roundTrip = answeredPings.removeValue(forKey: id) { return roundTrip }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if let roundTrip = answeredPings.removeValue(forKey: id) {
                    continuation.resume(returning: roundTrip)
                } else if state != .open {
                    continuation.resume(throwing: WebSocketClientError(.notConnected, "connection closed before the pong"))
                } else {
                    pingWaiters[id] = continuation
                }
            }
        } onCancel: {
            // Deferred (never inline), so it cannot interleave with a running job of this actor.
            loop.execute { self.assumeIsolated { $0.cancelPingWait(id) } }
        }
    }

    private func cancelPingWait(_ id: UInt64) {
        pingWaiters.removeValue(forKey: id)?.resume(throwing: CancellationError())
        pingSentAt.removeValue(forKey: id)
    }

    /// Queues and writes a ping carrying a fresh 8-byte id; returns the id.
    private func transmitPing() async throws(WebSocketClientError) -> UInt64 {
        guard state == .open, connection.state == .open else {
            throw WebSocketClientError(.notConnected, "ping on a connection that is \(state)")
        }
        nextPingID += 1
        let id = nextPingID
        pingSentAt[id] = clock.now
        connection.sendPing((0..<8).map { UInt8(truncatingIfNeeded: id >> (56 - 8 * UInt64($0))) })
        do {
            try await flush()
        } catch {
            pingSentAt.removeValue(forKey: id)
            throw WebSocketClientError(.transport, "\(error)")
        }
        return id
    }

    private func didReceivePong(_ payload: [UInt8]) {
        guard payload.count == 8 else { return }  // Unsolicited pongs are allowed and ignored (§5.5.3).
        let id = payload.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard let sentAt = pingSentAt.removeValue(forKey: id) else { return }
        let roundTrip = sentAt.duration(to: clock.now)
        lastPingRoundTrip = roundTrip
        if let waiter = pingWaiters.removeValue(forKey: id) {
            waiter.resume(returning: roundTrip)
        } else {
            answeredPings[id] = roundTrip
        }
    }

    /// Pings every `interval` while one is set; a ping unanswered within `pongTimeout` declares the
    /// peer dead. Runs in ``run()``'s task group for the connection's whole life.
    private func pingLoop() async {
        let timeout = configuration.pongTimeout
        while state == .open {
            guard let interval = pingInterval else {
                await withCheckedContinuation { pingIntervalWaiter = $0 }
                continue
            }
            do {
                try await loop.sleep(for: interval)
                guard state == .open else { return }
                let id = try await transmitPing()
                try await loop.sleep(for: min(timeout, interval))
                if timeout > interval, pingSentAt[id] != nil { try await loop.sleep(for: timeout - interval) }
                if pingSentAt.removeValue(forKey: id) != nil && state == .open {
                    isPeerDead = true
                    eventContinuation.yield(.error(WebSocketClientError(.pongTimeout, "no pong within \(timeout)")))
                    stream?.close()
                    return
                }
                answeredPings.removeValue(forKey: id)
            } catch {
                return
            }
        }
    }

    /// Pings every `interval` from now on (replacing `configuration.pingInterval`); each ping must be
    /// answered within `configuration.pongTimeout` or the peer is declared dead. Needs ``run()``.
    public func startPinging(interval: Duration) {
        pingInterval = interval
        pingIntervalWaiter?.resume()
        pingIntervalWaiter = nil
        if isRunning { post(.pingingChanged) }
    }

    /// Stops periodic pings (after the current one).
    public func stopPinging() {
        pingInterval = nil
    }

    // MARK: Closing

    /// Starts an intentional close without reading: queues and writes the close frame and returns. For a
    /// driver whose own task is blocked in ``receive()``: that read then sees the rest of the messages in
    /// flight and the peer's close, and ends with `not_connected` (`.disconnected` carries the peer's code).
    /// Does nothing unless the connection is open.
    public func beginClosing(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        guard state == .open else { return }
        state = .closing
        connection.close(code: code, reason: reason)
        ending = nil
        try? await flush()
    }

    /// Drops the connection at once, without a closing handshake (the reader ends with 1006 and `reason`).
    public func abort(reason: String) {
        guard state != .closed, let stream else { return }
        if ending == nil { ending = (.abnormalClosure, reason) }
        stream.close()
    }

    /// Closes intentionally: sends a close frame, waits up to `closeTimeout` for the closing handshake,
    /// then closes the transport. Idempotent; returns when the connection is closed.
    public func disconnect(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        switch state {
        case .idle:
            state = .closed
            finish()
            return
        case .connecting:
            state = .closed
            stream?.close()
            return
        case .closed:
            return
        case .open:
            await beginClosing(code: code, reason: reason)
        case .closing:
            break
        }
        // Closing the socket ends whichever read is pending (run's reader or the loop below), which then
        // reports `.disconnected`. Timer callbacks run on the loop thread outside any job.
        let timer = ScheduledTimer(on: loop, after: configuration.closeTimeout) { [self] in
            self.assumeIsolated { $0.stream?.close() }
        }
        if isRunning {
            await withCheckedContinuation { continuation in
                if state == .closed { continuation.resume() } else { closeWaiters.append(continuation) }
            }
        } else {
            // Nobody else reads (the receive() mode): read until the peer's close ends the connection;
            // messages still in flight are dropped. The timer bounds it.
            while state != .closed {
                do { _ = try await receive() } catch { break }
            }
            endReceiving()
        }
        timer.cancel()
    }
}

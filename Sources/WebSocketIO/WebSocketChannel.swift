import Runtime
import WebSocket

/// One open WebSocket connection's transport and protocol state, and the one read loop that the client
/// (``next()`` driven by `WebSocketManager.run()` or by `receive()`) and the embedded server's session share.
///
/// ``next()`` turns the bytes the peer sends into events: messages are returned as they are parsed;
/// pings are answered (the pong is written before `.ping` is returned, RFC 6455 §5.5.2); pongs are handed
/// back for the owner to match; a close frame is answered and, for a client, followed by a bounded wait
/// for the server to close TCP first (§7.1.1); a protocol violation writes the close frame with its code.
/// Whatever the owner queues on ``connection`` is written by ``flush()``, and before every read.
///
/// Loop-confined like its stream: its owner is an actor on the stream's loop, and the async methods run
/// on the caller's executor (no hop). On the echo path a parsed message costs no call beyond the parser's:
/// ``next()``, ``flush()`` and the read are inlined into their callers; pings and closing are out of line.
/// Public rather than `package` for that reason alone: release builds inline `@inlinable public` bodies
/// across modules but not `@inlinable package` ones (measured with Swift 6.3: an async call, and its
/// task-allocator frame, per message).
public final class WebSocketChannel {
    /// The transport: TCP, or TLS over it.
    public let stream: any ByteStream
    /// The protocol state. Owners queue messages, pings and closes on it, then ``flush()``.
    ///
    /// Not checked for exclusive access at run time: the channel is confined to its loop and its owner's task, and
    /// every checked access in an async function keeps a 24-byte scratch in that function's frame (the read's held
    /// ten, 240 bytes per idle connection), besides the calls. The compiler's static checks still apply. The attribute
    /// holds for this module's code and its inlinable bodies only: another module's own access is checked after all
    /// (Swift 6.3 does not carry the attribute across modules), so a per-message access from there goes through a
    /// method of this type (``queueIfOpen(_:)``).
    @exclusivity(unchecked) public var connection: WebSocketConnection
    /// After a client received the server's close: how long it waits for the server to close TCP.
    public let closeTimeout: Duration
    /// When set, bytes that arrive are held back until then before they are parsed (the embedded server's
    /// stall); checked once per read, and cleared when it takes effect. Unchecked at run time, as are the two below:
    /// loop-confined, each access a plain read or store (``isReadableWithoutWaiting`` reads all three per read).
    @exclusivity(unchecked) public var readsHeldUntil: LoopClock.Instant?

    /// Set when a client has received the server's close: the next ``next()`` waits for the server's FIN.
    @exclusivity(unchecked) @usableFromInline var isAwaitingPeerClose = false
    /// An event ``nextIfAvailable()`` parsed but does not handle (a control frame, a failure): ``next()`` returns it
    /// first, as if it had just been parsed.
    @exclusivity(unchecked) @usableFromInline var handedOver: WebSocketConnection.Event?

    /// Bytes per read; what libuv's per-loop scratch buffer holds.
    @usableFromInline static let readSize = 64 * 1024

    /// - Parameters:
    ///   - connection: the state after the handshake, already fed any bytes read past the handshake.
    ///   - closeTimeout: how long a client waits for the server's FIN after the closing handshake.
    public init(stream: any ByteStream, connection: WebSocketConnection, closeTimeout: Duration = .seconds(5)) {
        self.stream = stream
        self.connection = connection
        self.closeTimeout = closeTimeout
    }

    /// The next event from the peer, reading as needed; nil once the transport has ended (EOF, or the end
    /// of the wait that follows a client's closing handshake). After `.closeReceived` and `.failed` the
    /// connection is closed: the next call returns nil (a client first waits for the server's FIN).
    /// - Throws: the transport's error if a read or write fails (the caller closes the stream), or
    ///   `CancellationError` if cancelled while waiting.
    @inlinable @inline(__always)
    public func next() async throws -> WebSocketConnection.Event? {
        // The echo hot path: a message already parsed is returned without another call.
        if let event = handedOver ?? connection.nextEvent() {
            handedOver = nil
            if case .message = event { return event }
            return try await complete(event)
        }
        return try await readMore()
    }

    /// The next message if one is parsed already, as a plain call, for a reader on the loop thread (``pullAvailable()``):
    /// nil when none is, or when the next event is not a message — that one is kept for ``next()``, which does what it
    /// asks of the transport (the pong, the close reply, the wait for the FIN) and returns it.
    @inlinable
    public func nextIfAvailable() -> WebSocketConnection.Message? {
        guard handedOver == nil, let event = connection.nextEvent() else { return nil }
        if case .message(let message) = event { return message }
        handedOver = event
        return nil
    }

    /// Whether a reader may take messages on the loop thread (``pullAvailable()``, ``nextIfAvailable()``): the connection
    /// is open, nothing is handed over and no stall holds reads; otherwise only ``next()`` reads.
    public var isReadableWithoutWaiting: Bool {
        handedOver == nil && readsHeldUntil == nil && !isAwaitingPeerClose && connection.state == .open
    }

    /// Appends what the transport received to the parser's buffer without waiting
    /// (``ByteStream/readIfAvailable(into:maxBytes:)``): the byte count, `0` at EOF, nil when nothing came. EOF and a
    /// failure stay with the transport: ``next()`` meets them again.
    @inlinable
    public func pullAvailable() throws -> Int? {
        var bytes = connection.lendReceiveBuffer()
        defer { connection.returnReceiveBuffer(bytes) }
        return try stream.readIfAvailable(into: &bytes, maxBytes: Self.readSize)
    }

    /// Writes whatever is queued on ``connection`` (replies, messages, pings, closes), in order. Below the transport's
    /// high-water mark that is a plain call (``ByteStream/writeIfReady(_:)``), not an async one through the existential.
    @inlinable @inline(__always)
    public func flush() async throws {
        if try flushIfReady() { return }
        let bytes = connection.takeOutput()
        try await stream.write(bytes)
        connection.recycleOutput(consume bytes)
    }

    /// ``flush()`` when the transport takes the bytes without waiting, as a plain call: true once what is queued is
    /// written (or there is nothing); false when it would wait, the bytes queued again on ``connection`` for
    /// ``flush()``.
    @inlinable
    public func flushIfReady() throws -> Bool {
        guard connection.hasOutput else { return true }
        let bytes = connection.takeOutput()
        guard try stream.writeIfReady(bytes) else {
            connection.restoreOutput(bytes)
            return false
        }
        connection.recycleOutput(consume bytes)
        return true
    }

    /// Queues `message` (framed, masked) on ``connection`` if it is open; false, with nothing queued, if not. Out of
    /// line, so the accesses are this module's and unchecked: written in the caller's module they were two checked
    /// accesses per message sent.
    public func queueIfOpen(_ message: WebSocketConnection.Message) -> Bool {
        guard connection.state == .open else { return false }
        connection.send(message)
        return true
    }

    /// Writes whatever is queued on ``connection`` without waiting (``ByteStream/writeWithoutWaiting(_:)``): for
    /// frames queued from a loop timer's callback, which has no task to suspend. A failure surfaces on the next read.
    public func flushWithoutWaiting() {
        guard connection.hasOutput else { return }
        let bytes = connection.takeOutput()
        stream.writeWithoutWaiting(bytes)
        connection.recycleOutput(consume bytes)
    }

    /// Flushes, then reads until an event is parsed or the transport ends. Out of line, and its rare waits too:
    /// an idle connection's task parks in this read, and this frame (with its callers') is what it holds.
    @usableFromInline @inline(never)
    func readMore() async throws -> WebSocketConnection.Event? {
        while true {
            guard connection.state != .closed else {
                if isAwaitingPeerClose {
                    isAwaitingPeerClose = false
                    await awaitPeerClose()
                }
                return nil
            }
            try await flush()
            // The read appends straight to the parser's buffer, lent for the read (a stored property must not be
            // held inout across the suspension): no copy through a buffer of the channel's own.
            var bytes = connection.lendReceiveBuffer()
            let count: Int
            do {
                count = try await stream.read(into: &bytes, maxBytes: Self.readSize)
            } catch {
                connection.returnReceiveBuffer(bytes)
                throw error
            }
            connection.returnReceiveBuffer(bytes)
            guard count > 0 else { return nil }
            if readsHeldUntil != nil { try await holdReads() }
            if let event = connection.nextEvent() {
                if case .message = event { return event }
                return try await complete(event)
            }
        }
    }

    /// The embedded server's stall: bytes that arrived wait until ``readsHeldUntil`` before they are parsed.
    @usableFromInline @inline(never)
    func holdReads() async throws {
        guard let until = readsHeldUntil else { return }
        readsHeldUntil = nil
        try await LoopClock().sleep(until: until)
    }

    /// Does what a control event or a failure asks of the transport, then returns the event.
    @usableFromInline
    func complete(_ event: WebSocketConnection.Event) async throws -> WebSocketConnection.Event {
        switch event {
        case .ping:
            try await flush()  // Its pong is queued: answer before reading on (§5.5.2).
        case .closeReceived:
            // Our close reply, if the peer started the close. Ignoring a failed write is safe: the closing
            // handshake is complete either way, and a peer that already closed TCP cannot read it.
            try? await flush()
            isAwaitingPeerClose = connection.role == .client
        case .failed:
            // The close frame with the error's code, best effort: the owner closes the transport next, and
            // a failed write cannot change the code it reports.
            try? await flush()
        case .message, .pong:
            break
        }
        return event
    }

    /// RFC 6455 §7.1.1: the server closes TCP first, so a client reads until the server's FIN, at most
    /// ``closeTimeout`` (then it closes the stream itself). What arrives after a close frame is discarded.
    @usableFromInline
    func awaitPeerClose() async {
        let stream = stream
        let timer = ScheduledTimer(on: stream.loop, after: closeTimeout) { stream.close() }
        defer { timer.cancel() }
        var bytes: [UInt8] = []
        // A read error ends the wait just as the FIN does: either way the server's side is gone.
        while let count = try? await stream.read(into: &bytes, maxBytes: 4096), count > 0 {
            bytes.removeAll(keepingCapacity: true)
        }
    }
}

import HTTP1
import Runtime
import WebSocket
import WebSocketIO

/// One WebSocket client connection as an actor pinned to an event loop, shaped like the
/// `URLSessionWebSocketTask` pattern of the reference (`events()`, `send`, `sendPing`, `disconnect`).
///
/// ``run()`` connects and then serves the connection until it closes: its reader and its ping task live
/// in run's task group and end with it. Events arrive on ``events()``: `.connected` only after a valid
/// 101, then messages, then exactly one `.disconnected` (or `.error` alone if the connection was never
/// made), after which the stream finishes — nothing follows `.disconnected`.
///
/// The pieces live by idea: the opening handshake in `WebSocketManager+Handshake.swift`, the read side
/// (both modes, over the shared `WebSocketChannel` read loop) in `+Reading`, sending in `+Sending`, pings in
/// `+Heartbeats`, the closing handshake in `+Closing`.
package actor WebSocketManager {
    /// What happened on the connection.
    package enum Event: Sendable {
        /// The handshake completed (a valid 101); carries the negotiated subprotocol.
        case connected(subprotocol: String?)
        case text(String)
        case data([UInt8])
        /// The connection ended: the peer's close code (1005 if its close had none; 1006 if there was no
        /// closing handshake) and reason.
        case disconnected(WebSocketCloseCode, String?)
        case error(WebSocketClientError)
    }

    /// Where the connection is in its life: idle until ``connect()``, open after a valid 101, closing
    /// once either side sent a close frame, closed at the end (never reopened).
    package enum State: Sendable, Hashable { case idle, connecting, open, closing, closed }

    package nonisolated let loop: EventLoop
    package nonisolated let url: WebSocketURL
    /// Read in place from the shared box (a `_read` accessor yields it without copying the struct).
    package nonisolated var configuration: WebSocketClientConfiguration { _read { yield sharedConfiguration.value } }
    package nonisolated let sharedConfiguration: SharedWebSocketConfiguration
    package nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    /// Not checked for exclusive access at run time, nor is ``channel``: isolated to the manager, each access a plain
    /// read or store, and every message sent or read asks both.
    @exclusivity(unchecked) package internal(set) var state: State = .idle
    /// The subprotocol the server chose, once connected.
    package internal(set) var negotiatedSubprotocol: String?
    /// The permessage-deflate parameters agreed, once connected.
    package internal(set) var negotiatedCompression: PerMessageDeflateParameters?
    /// The round trip of the last answered ping.
    package internal(set) var lastPingRoundTrip: Duration?
    /// Once closed: the code `.disconnected` carried (the peer's; 1005 if its close had none; 1006 if
    /// there was no closing handshake).
    package var closeCode: WebSocketCloseCode? { state == .closed ? (ending?.code ?? .abnormalClosure) : nil }
    /// Why it closed, once closed: the peer's close reason, or what went wrong when there was no closing
    /// handshake (1006). Nil while open, and when the peer's close carried no reason.
    package var closeReason: String? {
        guard state == .closed else { return nil }
        guard let faults = configuration.faults, let closeCode else { return ending?.reason }
        return faults.reportedCloseReason(ending?.reason, code: closeCode)
    }
    /// How long each phase of the opening handshake took, once connected.
    package internal(set) var handshakeTimings: HandshakeTimings?

    /// The phases of the opening handshake, as a load report splits them.
    package struct HandshakeTimings: Sendable, Hashable {
        /// DNS and the TCP handshake.
        package var tcpConnect: Duration
        /// The TLS handshake (wss only).
        package var tlsHandshake: Duration?
        /// From sending the upgrade request to a valid 101.
        package var upgrade: Duration
        /// When the 101 was validated (loop clock).
        package var completedAt: LoopClock.Instant
    }

    /// When `.connected` was emitted and the state became open (loop clock); the oracle checks it came
    /// after ``HandshakeTimings/completedAt``.
    package internal(set) var connectedAt: LoopClock.Instant?

    /// run()'s events, with backpressure on the reader (`WebSocketManager+Events.swift`).
    let eventQueue: EventQueue<Event>
    private let eventStream: AsyncStream<Event>
    /// Times the reader waited for the consumer (a pong unread meanwhile is no sign of a dead peer).
    var readerPauseCount = 0
    var isReaderPaused = false
    /// The transport from the TCP connect on (the handshake reads it before there is a channel).
    package internal(set) var stream: (any ByteStream)?
    /// The read loop and the protocol state, from a valid 101 on.
    @exclusivity(unchecked) var channel: WebSocketChannel?
    /// What `.disconnected` reports: the peer's close, or why there was no closing handshake.
    var ending: (code: WebSocketCloseCode, reason: String?)?
    var isPeerDead = false
    var closeWaiters: [CheckedContinuation<Void, Never>] = []
    var nextPingID: UInt64 = 0
    var pingSentAt: [UInt64: LoopClock.Instant] = [:]
    var pingWaiters: [UInt64: CheckedContinuation<Duration, any Error>] = [:]
    var answeredPings: [UInt64: Duration] = [:]
    /// Told each matched pong (its ping's id and round trip) that no ``sendPing()`` waits for: how a driver that
    /// pings from a loop timer (``sendPingWithoutWaiting()``) learns of it.
    package var pongObserver: ((_ id: UInt64, _ roundTrip: Duration) -> Void)?
    let clock = LoopClock()
    /// Whether ``run()`` serves the connection (its reader owns the read side; ``receive()`` is refused).
    var isRunning = false
    var pingInterval: Duration?
    var pingIntervalWaiter: CheckedContinuation<Void, Never>?
    /// Whether a fault seam was asked for a message after the close (it is asked once; never in real runs).
    var hasAskedForMessageAfterClose = false
    private var pendingCommands: [Command] = []
    private var commandWaiter: CheckedContinuation<Command, Never>?

    /// - Parameter loop: the loop this connection lives on (its socket, timers and this actor).
    package init(url: WebSocketURL, configuration: WebSocketClientConfiguration = .init(), loop: EventLoop) {
        self.init(url: url, sharedConfiguration: SharedWebSocketConfiguration(configuration), loop: loop)
    }

    /// A connection whose configuration others share (an engine's connections of one scenario).
    package init(url: WebSocketURL, sharedConfiguration: SharedWebSocketConfiguration, loop: EventLoop) {
        self.url = url
        self.sharedConfiguration = sharedConfiguration
        let configuration = sharedConfiguration.value
        self.loop = loop
        eventQueue = EventQueue(
            highWaterMark: configuration.maximumPendingMessages, byteHighWaterMark: configuration.maximumPendingBytes)
        eventStream = eventQueue.makeStream()
        pingInterval = configuration.pingInterval
    }

    /// What ``receive()`` on the closed connection returns instead of failing: nil, except once under a test's
    /// fault seam. Only the closed path asks, never a read.
    func messageAfterClose() -> WebSocketConnection.Message? {
        guard state == .closed, let faults = configuration.faults, !hasAskedForMessageAfterClose else { return nil }
        hasAskedForMessageAfterClose = true
        return faults.messageAfterClose()
    }

    /// The connection's events. One consumer; the stream finishes after `.disconnected` (or a
    /// connect `.error`).
    ///
    /// Backpressure: once the consumer has `configuration.maximumPendingMessages` messages (or
    /// `maximumPendingBytes` of them) not yet taken, run()'s reader stops reading the socket until it is back at
    /// half, so TCP pushes back on a server that floods a slow consumer and memory stays bounded; nothing is lost.
    /// Pings and the peer's close are not read meanwhile either (a pong left unread is not held against the
    /// peer). Once the connection is closing (a close frame sent or received) or dropped, the reader no longer
    /// waits: messages that arrive past the mark are discarded (``discardedMessageCount``). A consumer that
    /// stops iterating without cancelling its task stalls the reading until ``disconnect(code:reason:)``'s
    /// close timeout, ``abort(reason:)`` or cancelling ``run()``.
    package nonisolated func events() -> AsyncStream<Event> { eventStream }

    /// Messages on ``events()`` the consumer has not taken yet (at most about `maximumPendingMessages`).
    package nonisolated var pendingEventCount: Int { eventQueue.pendingCount }

    /// Messages discarded while closing because the consumer was `maximumPendingMessages` behind.
    package nonisolated var discardedMessageCount: Int { eventQueue.discardedCount }

    // MARK: Lifecycle

    /// Connects (unless ``connect()`` already did), then serves the connection until it closes (by either
    /// side, by failure, or by cancelling the calling task). Never throws: failures are events.
    package func run() async {
        if state != .open {
            do {
                try await connect()
            } catch {
                eventQueue.yield(.error(error))
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
        eventQueue.yield(.disconnected(code, reason))
        finish()
    }

    /// What run()'s body reacts to while its children work.
    enum Command { case pingingChanged, readerEnded }

    func post(_ command: Command) {
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

    /// The end of the connection, whichever mode served it: waiters are released, the stream finishes.
    func finish() {
        state = .closed
        channel?.connection.transportClosed()
        stream?.close()
        eventQueue.finish()
        for waiter in pingWaiters.values {
            waiter.resume(throwing: WebSocketClientError(.notConnected, "connection closed before the pong"))
        }
        pingWaiters = [:]
        let waiters = closeWaiters
        closeWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}

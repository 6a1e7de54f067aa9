import Lifecycle
import Runtime
import WebSocket

/// A WebSocket that reconnects after unintended disconnects, with ``ReconnectPolicy`` backoff: the
/// reference's `ReconnectingWebSocket`, with exact sub-second delays, an injected clock and RNG, and
/// events that say what it is doing.
///
/// ``run()`` drives a ``ConnectionLifecycle``, which decides: it connects, forwards the connection's events, and
/// on an unintended disconnect waits the delay the lifecycle drew and connects again; attempts reset after each
/// successful connection. It ends after
/// ``disconnect(code:reason:)`` (never reconnecting after it), when the attempts are used up, or when its
/// task is cancelled. One live connection at most, always.
package actor ReconnectingWebSocket<C: Clock> where C.Duration == Duration {
    /// What the socket reports: every connection's events in order, plus its own reconnects and give-up.
    package enum Event: Sendable {
        case connected(subprotocol: String?)
        case text(String)
        case data([UInt8])
        case disconnected(WebSocketCloseCode, String?)
        case error(WebSocketClientError)
        /// Waiting `delay` before attempt `attempt` (1-based since the last successful connection).
        case reconnecting(attempt: Int, delay: Duration)
        /// The policy's attempts are used up; the stream finishes next.
        case gaveUp(attempts: Int)
    }

    package nonisolated let loop: EventLoop
    package nonisolated let url: WebSocketURL
    package nonisolated let configuration: WebSocketClientConfiguration
    package nonisolated let policy: ReconnectPolicy
    package nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    private let clock: C
    private var random: any RandomNumberGenerator & Sendable
    private var current: WebSocketManager?
    /// Decides every connect, backoff and give-up; this actor only does the I/O and the sleeping.
    private var lifecycle: ConnectionLifecycle
    private var startedAt: C.Instant?
    /// The close ``disconnect(code:reason:)`` asked for, for a connection that opens after it.
    private var closeRequest: (code: WebSocketCloseCode, reason: String) = (.normalClosure, "")
    private var wakeUp: CheckedContinuation<Void, Never>?
    /// Forwarded events, with the manager's backpressure: while the consumer is behind, the forwarder stops
    /// taking the connection's events, so its reader stops reading the socket.
    private let eventQueue: EventQueue<Event>
    private let eventStream: AsyncStream<Event>
    /// Connections made so far (successful handshakes).
    package var connectionCount: Int { lifecycle.connectionCount }
    /// The lifecycle's most recent transitions (up to 64), oldest first: what it did and when, on the clock.
    package var transitions: [ConnectionLifecycle.Transition] { lifecycle.transitions }
    private static var transitionsKept: Int { 64 }

    package init(
        url: WebSocketURL, configuration: WebSocketClientConfiguration = .init(), policy: ReconnectPolicy = .init(),
        loop: EventLoop, clock: C, random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.url = url
        self.configuration = configuration
        self.policy = policy
        self.loop = loop
        self.clock = clock
        self.random = random
        lifecycle = ConnectionLifecycle(policy: policy, recordLimit: Self.transitionsKept)
        eventQueue = EventQueue(
            highWaterMark: configuration.maximumPendingMessages, byteHighWaterMark: configuration.maximumPendingBytes)
        eventStream = eventQueue.makeStream()
    }

    /// All connections' events in order, plus `reconnecting` and `gaveUp`. One consumer. Bounded like
    /// ``WebSocketManager/events()``: a consumer `maximumPendingMessages` behind pauses the reading.
    package nonisolated func events() -> AsyncStream<Event> { eventStream }

    /// Feeds `event` to the lifecycle at the clock's current instant.
    private func handle(_ event: ConnectionLifecycle.Event) -> ConnectionLifecycle.Action {
        let now = clock.now
        let start = startedAt ?? now
        startedAt = start
        return lifecycle.handle(event, at: start.duration(to: now), using: &random)
    }

    package func run() async {
        var action = handle(Task.isCancelled ? .stopRequested : .start)
        while true {
            switch action {
            case .connect:
                await connectOnce()
                if Task.isCancelled { _ = handle(.stopRequested) }
                switch lifecycle.state {
                case .connecting: action = handle(.connectFailed)
                case .open: action = handle(.dropped)
                case .draining: action = handle(.closeFinished)
                default: action = .none
                }
            case .wait(let delay, let attempt):
                eventQueue.yield(.reconnecting(attempt: attempt, delay: delay))
                await sleepUnlessWoken(delay)
                // A disconnect during the wait has stopped the lifecycle already; then this is ignored.
                action = handle(Task.isCancelled ? .stopRequested : .backoffElapsed)
            case .giveUp(let attempts):
                eventQueue.yield(.gaveUp(attempts: attempts))
                action = .none
            case .close:
                action = .none  // only from `disconnect`, which closes the connection itself
            case .none:
                // Nothing more to do: the lifecycle has ended (stopped, gave up, or cancelled).
                eventQueue.finish()
                return
            }
        }
    }

    /// One connection: connects, forwards its events, and returns when it has ended.
    private func connectOnce() async {
        let manager = WebSocketManager(url: url, configuration: configuration, loop: loop)
        current = manager
        await withTaskGroup(of: Void.self) { group in
            group.addTask(executorPreference: loop.taskExecutor) { await manager.run() }
            for await event in manager.events() {
                switch event {
                case .connected(let subprotocol):
                    let action = handle(.connected)
                    eventQueue.yield(.connected(subprotocol: subprotocol))
                    if action == .close { await manager.disconnect(code: closeRequest.code, reason: closeRequest.reason) }
                case .text(let text):
                    if eventQueue.yield(.text(text), messageBytes: text.utf8.count) { await eventQueue.waitForRoom() }
                case .data(let bytes):
                    if eventQueue.yield(.data(bytes), messageBytes: bytes.count) { await eventQueue.waitForRoom() }
                case .disconnected(let code, let reason): eventQueue.yield(.disconnected(code, reason))
                case .error(let error): eventQueue.yield(.error(error))
                }
            }
        }
        current = nil
    }

    /// Sleeps on the injected clock; ``disconnect(code:reason:)`` or cancellation ends it early.
    private func sleepUnlessWoken(_ delay: Duration) async {
        let clock = clock
        await withTaskGroup(of: Void.self) { group in
            // The only error is cancellation (the wake-up won the race), which ends the wait as intended.
            group.addTask { try? await clock.sleep(for: delay) }
            group.addTask(executorPreference: loop.taskExecutor) { await self.waitForWakeUp() }
            _ = await group.next()
            group.cancelAll()
            wakeUp?.resume()
            wakeUp = nil
        }
    }

    private func waitForWakeUp() async {
        guard !lifecycle.isStopRequested, !lifecycle.isEnded else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { wakeUp = $0 }
        } onCancel: {
            // Deferred, so it never interleaves with a running job of this actor.
            loop.execute { self.assumeIsolated { $0.wake() } }
        }
    }

    private func wake() {
        wakeUp?.resume()
        wakeUp = nil
    }

    /// Sends on the current connection. - Throws: `not_connected` between connections.
    package func send(text: String) async throws(WebSocketClientError) {
        guard let current else { throw WebSocketClientError(.notConnected, "reconnecting") }
        try await current.send(text: text)
    }

    package func send(data: [UInt8]) async throws(WebSocketClientError) {
        guard let current else { throw WebSocketClientError(.notConnected, "reconnecting") }
        try await current.send(data: data)
    }

    /// Closes for good: the current connection closes normally and no reconnect follows.
    package func disconnect(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        closeRequest = (code, reason)
        eventQueue.release()  // the forwarder must pass the close on, whatever the consumer does
        // Whatever the lifecycle says (close an open connection, stop a backoff, remember it mid-connect), the
        // connection in hand closes now and the sleeper wakes: no further attempt follows.
        _ = handle(.stopRequested)
        wake()
        await current?.disconnect(code: code, reason: reason)
    }
}

extension ReconnectingWebSocket where C == LoopClock {
    /// A reconnecting WebSocket on the runtime's clock with a system RNG for jitter.
    package init(url: WebSocketURL, configuration: WebSocketClientConfiguration = .init(), policy: ReconnectPolicy = .init(), loop: EventLoop) {
        self.init(url: url, configuration: configuration, policy: policy, loop: loop, clock: LoopClock())
    }
}

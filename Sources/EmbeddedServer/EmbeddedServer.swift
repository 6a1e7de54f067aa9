import Crypto
import Profile
import HTTP1
import Runtime
import Synchronization
import WebSocket

/// The embedded server (`wsload serve`): WebSocket echo (text stays text, binary stays binary, pings are
/// answered, permessage-deflate, ``ChaosOptions`` faults) and, on connections that do not upgrade, an
/// HTTP/1.1 file server with ranges and an upload sink (``HTTPService``, ``HTTPChaosOptions``); TLS for both.
///
/// Bind with ``bind(_:on:)``, then call ``run()`` inside a task group; cancelling that task stops the
/// server and closes every connection.
package final class EmbeddedServer: Sendable {
    package let configuration: ServerConfiguration
    private let listeners: RestartableListeners
    private var loops: [EventLoop] { listeners.loops }
    /// The live WebSocket sessions of each loop, for chaos actions (index: loop index).
    let registries: [SessionRegistry]
    package let statistics = ServerStatistics()
    /// The rooms of the `/chat` service, shared by every loop.
    package let chatRooms: ChatRooms

    /// The bound address (the real port when port 0 was asked for); a restart listens on it again.
    package var localAddress: SocketAddress { listeners.localAddress }

    /// `http://HOST:PORT` or `https://…` for this server's HTTP routes (no trailing slash).
    package var httpURL: String {
        let address = localAddress
        let host = address.family == .ipv6 ? "[\(address.ip)]" : address.ip
        return "\(configuration.tls == nil ? "http" : "https")://\(host):\(address.port)"
    }

    /// `ws://HOST:PORT/` or `wss://…` for this server.
    package var url: String {
        let address = localAddress
        let host = address.family == .ipv6 ? "[\(address.ip)]" : address.ip
        return "\(configuration.tls == nil ? "ws" : "wss")://\(host):\(address.port)/"
    }

    private init(configuration: ServerConfiguration, listeners: [TCPListener]) {
        self.configuration = configuration
        self.listeners = RestartableListeners(listeners, options: configuration.tcpOptions)
        registries = listeners.map { _ in SessionRegistry() }
        chatRooms = ChatRooms(limits: configuration.chatLimits)
        // Unnamed uploads number on past what an earlier run left: the first is not 1,000 failed opens then a 500.
        if let directory = configuration.uploadDirectory {
            statistics.uploadNames.store(highestUploadNumber(in: directory), ordering: .relaxed)
        }
    }

    /// Binds one listener per loop of `group` on the configured address.
    package static func bind(_ configuration: ServerConfiguration, on group: EventLoopGroup) async throws -> EmbeddedServer {
        let address = try SocketAddress(ip: configuration.host, port: configuration.port)
        let listeners = try await TCPListener.bind(address, on: group.loops, backlog: 4096, options: configuration.tcpOptions)
        return EmbeddedServer(configuration: configuration, listeners: listeners)
    }

    /// Serves until the calling task is cancelled; then closes the listeners and every connection.
    /// The executor to start ``run()`` on (`addTask(executorPreference: server.taskExecutor)`): the
    /// server then starts accepting at once, however busy the global pool is.
    package var taskExecutor: LoopTaskExecutor { loops[0].taskExecutor }

    package func run() async {
        await listeners.run(onRestart: { self.statistics.restarts.add(1, ordering: .relaxed) }) { index, listener, generation in
            await self.acceptLoop(listener, seed: self.configuration.chaos.seed.map { $0 &+ UInt64(index) &+ generation << 32 })
        }
    }

    /// Applies a chaos action to the live WebSocket sessions (or the listeners, for a restart).
    /// - Returns: how many connections it affected.
    @discardableResult
    package func perform(_ action: ServerChaosAction, seed: UInt64 = 0) async -> Int {
        if case .restart(let pause) = action { listeners.closeForRestart(pause: pause) }
        let registries = registries
        let affected = await applyOnEachLoop(loops, seed: seed) { index, loop, loopSeed in
            registries[index].apply(action, on: loop, seed: loopSeed)
        }
        statistics.chaosCloses.add(affected, ordering: .relaxed)
        return affected
    }

    private func acceptLoop(_ listener: TCPListener, seed: UInt64?) async {
        var random = SeededRandomNumberGenerator(seed: seed)
        await withDiscardingTaskGroup { connections in
            // accept fails only once the listener is closed (stop or restart): that ends the loop.
            while let tcp = try? await listener.accept() {
                statistics.accepted.add(1, ordering: .relaxed)
                let open = statistics.connections.add(1, ordering: .relaxed).newValue
                let cap = configuration.maximumConnections
                if cap > 0 && open > cap {
                    statistics.refused.add(1, ordering: .relaxed)
                    connections.addTask(executorPreference: listener.loop.taskExecutor) {
                        await self.refuseBusy(tcp)
                        self.statistics.connections.subtract(1, ordering: .relaxed)
                    }
                    continue
                }
                let session = ServerSession(tcp: tcp, server: self, random: random.split())
                connections.addTask(executorPreference: listener.loop.taskExecutor) {
                    await session.serve()
                    self.statistics.connections.subtract(1, ordering: .relaxed)
                }
            }
            listener.close()
        }
    }
}

extension EmbeddedServer {
    /// A connection past ``ServerConfiguration/maximumConnections``: `503` with `Connection: close` (plain
    /// HTTP and WebSocket clients both read it as a refused request), then closed; over TLS, closed at once.
    /// Bounded: whatever the client does, the socket is gone within 2 seconds. On the connection's loop.
    func refuseBusy(_ tcp: TCPConnection) async {
        let deadline = ScheduledTimer(on: tcp.loop, after: .seconds(2)) { tcp.close() }
        defer {
            deadline.cancel()
            tcp.close()
        }
        guard configuration.tls == nil else { return }
        let body = "busy: \(configuration.maximumConnections) connections are open (serve --max-connections)\n"
        let head = HTTPResponseHead(status: 503, reason: "Service Unavailable", headers: [
            "Content-Type": "text/plain; charset=utf-8", "Content-Length": String(body.utf8.count), "Connection": "close",
            "Retry-After": "1",
        ])
        do {
            try await tcp.write(head.serialized() + Array(body.utf8))
            try await tcp.shutdownWrite()
            // Read what the client sent until it closes, so the close does not reset away the answer.
            var sink: [UInt8] = []
            var drained = 0
            while drained < 1024 * 1024, try await tcp.read(into: &sink, maxBytes: 16 * 1024) > 0 {
                drained += sink.count
                sink.removeAll(keepingCapacity: true)
            }
        } catch {
            return  // The client went away or the deadline closed the socket: nothing more to say.
        }
    }
}

/// Counters a test or `serve` reads; updated with relaxed atomics from every loop.
package final class ServerStatistics: Sendable {
    package let accepted = Atomic<Int>(0)
    package let upgraded = Atomic<Int>(0)
    package let rejected = Atomic<Int>(0)
    package let active = Atomic<Int>(0)
    package let messagesEchoed = Atomic<Int>(0)
    package let messagesPushed = Atomic<Int>(0)
    package let chaosCloses = Atomic<Int>(0)
    package let protocolFailures = Atomic<Int>(0)
    package let restarts = Atomic<Int>(0)
    package let httpRequests = Atomic<Int>(0)
    package let bytesServed = Atomic<Int>(0)
    package let uploads = Atomic<Int>(0)
    package let bytesUploaded = Atomic<Int>(0)
    /// Connections open now (HTTP and WebSocket, refused ones until they are closed).
    package let connections = Atomic<Int>(0)
    /// Connections refused with 503 because ``ServerConfiguration/maximumConnections`` were open.
    package let refused = Atomic<Int>(0)
    /// Connections closed because a phase overran its timeout: the first head or TLS handshake, an HTTP idle,
    /// head, body or write phase, or an upgraded session's stalled writes.
    package let timeouts = Atomic<Int>(0)
    /// The last `upload-N` number handed out (unnamed uploads each take the next).
    package let uploadNames = Atomic<Int>(0)
    /// `/chat`: `say` requests broadcast to their room.
    package let chatSaid = Atomic<Int>(0)
    /// `/chat`: `said` messages queued for members (one `say` to a room of three counts three).
    package let chatDelivered = Atomic<Int>(0)
    /// `/chat`: `said` messages dropped for a member whose client had more than 1 MiB queued and unread.
    package let chatDropped = Atomic<Int>(0)
    /// `/chat`: requests answered with an `error` (bad JSON, bad fields, not in the room, a limit).
    package let chatErrors = Atomic<Int>(0)

    /// A one-line summary for logs.
    package var summary: String {
        "accepted \(accepted.load(ordering: .relaxed)), upgraded \(upgraded.load(ordering: .relaxed)), "
            + "rejected \(rejected.load(ordering: .relaxed)), active \(active.load(ordering: .relaxed)), "
            + "echoed \(messagesEchoed.load(ordering: .relaxed)), pushed \(messagesPushed.load(ordering: .relaxed)), chaos closes \(chaosCloses.load(ordering: .relaxed)), "
            + "protocol failures \(protocolFailures.load(ordering: .relaxed)), "
            + "refused (busy) \(refused.load(ordering: .relaxed)), timed out \(timeouts.load(ordering: .relaxed)), "
            + "chat said \(chatSaid.load(ordering: .relaxed)), delivered \(chatDelivered.load(ordering: .relaxed)), "
            + "dropped \(chatDropped.load(ordering: .relaxed)), errors \(chatErrors.load(ordering: .relaxed))"
    }
}

/// `fraction` of the items in `order` (rounded up), shuffled with `seed`: which connections a chaos event hits.
func chaosShare<Item>(of order: [ObjectIdentifier], in items: [ObjectIdentifier: Item], fraction: Double, seed: UInt64) -> [Item] {
    var random = SeededRandomNumberGenerator(seed: seed)
    let count = Int((Double(order.count) * fraction).rounded(.up))
    return order.shuffled(using: &random).prefix(count).compactMap { items[$0] }
}

/// Runs `apply(loop index, loop, seed for that loop)` on each loop and sums what it returns.
func applyOnEachLoop(
    _ loops: [EventLoop], seed: UInt64, _ apply: @escaping @Sendable (Int, EventLoop, UInt64) -> Int
) async -> Int {
    var total = 0
    for (index, loop) in loops.enumerated() {
        let loopSeed = seed &+ UInt64(index)
        // A loop already shut down has no sessions to hit: it counts 0.
        total += (try? await loop.submit { apply(index, loop, loopSeed) }) ?? 0
    }
    return total
}

/// The live sessions of one loop; loop-confined.
final class SessionRegistry: @unchecked Sendable {
    private var sessions: [ObjectIdentifier: ServerSession] = [:]
    private var order: [ObjectIdentifier] = []

    func insert(_ session: ServerSession) {
        let key = ObjectIdentifier(session)
        sessions[key] = session
        order.append(key)
    }

    func remove(_ session: ServerSession) {
        let key = ObjectIdentifier(session)
        guard sessions.removeValue(forKey: key) != nil else { return }
        order.removeAll { $0 == key }
    }

    /// Applies `action` to its share of the sessions (chosen with `seed`, in connection order); on the loop.
    func apply(_ action: ServerChaosAction, on loop: EventLoop, seed: UInt64) -> Int {
        let chosen = chaosShare(of: order, in: sessions, fraction: action.fraction, seed: seed)
        for session in chosen {
            switch action {
            case .kill, .restart:
                session.assumeIsolated { $0.drop() }
            case .reset:
                session.assumeIsolated { $0.drop(reset: true) }
            case .close(let code, _):
                Task(executorPreference: loop.taskExecutor) { await session.close(code: code) }
            case .stall(let duration, _):
                session.assumeIsolated { $0.stall(for: duration) }
            }
        }
        return chosen.count
    }
}

/// The listeners of a server that a chaos restart can close and open again on the same address.
final class RestartableListeners: Sendable {
    private let current: Lock<[TCPListener]>
    /// Set by a restart: how long ``run(onRestart:accept:)`` waits before listening again.
    private let restartPause = Lock<Duration?>(nil)
    let loops: [EventLoop]
    let localAddress: SocketAddress
    /// Applied to the connections a listener accepts, after a restart too.
    let options: TCPOptions

    init(_ listeners: [TCPListener], options: TCPOptions = TCPOptions()) {
        self.options = options
        current = Lock(listeners)
        loops = listeners.map(\.loop)
        localAddress = listeners[0].localAddress
    }

    /// Runs `accept(index, listener, generation)` for every listener, each on its loop, until they close;
    /// after a restart, listens again and goes on. Returns when cancelled (or the port is lost).
    func run(onRestart: @escaping @Sendable () -> Void, accept: @escaping @Sendable (Int, TCPListener, UInt64) async -> Void) async {
        var generation: UInt64 = 0
        while !Task.isCancelled {
            let listeners = current.withLock { $0 }
            let thisGeneration = generation
            await withDiscardingTaskGroup { tasks in
                for (index, listener) in listeners.enumerated() {
                    tasks.addTask(executorPreference: listener.loop.taskExecutor) { await accept(index, listener, thisGeneration) }
                }
            }
            // The listeners closed: a restart (listen again after the pause), or the end.
            guard !Task.isCancelled, let pause = restartPause.withLock({ pause in defer { pause = nil }; return pause }) else { return }
            guard let fresh = await relisten(on: localAddress, loops: loops, options: options, after: pause) else { return }
            current.withLock { $0 = fresh }
            onRestart()
            generation += 1
        }
    }

    /// Stops listening; ``run(onRestart:accept:)`` listens again after `pause`.
    func closeForRestart(pause: Duration) {
        restartPause.withLock { $0 = pause }
        for listener in current.withLock({ $0 }) { listener.close() }
    }
}

/// A restart's pause and return: holds the port (connects are refused) while down, then listens on it again.
/// Nil when cancelled, or when the port could not be had back within a few seconds.
func relisten(on address: SocketAddress, loops: [EventLoop], options: TCPOptions = TCPOptions(), after pause: Duration) async -> [TCPListener]? {
    let clock = LoopClock()
    var reservation: PortReservation?
    // The old listeners close on their loops' next turn: wait for the port to be free to hold it.
    for _ in 0..<100 where reservation == nil {
        // Polling for the port: a failed reservation or an interrupted sleep just means try again (bounded).
        reservation = try? PortReservation(address)
        if reservation == nil { try? await clock.sleep(until: clock.now.advanced(by: .milliseconds(10))) }
    }
    do {
        try await clock.sleep(until: clock.now.advanced(by: pause))
    } catch {
        return nil
    }
    for _ in 0..<100 {
        reservation = nil
        // Re-binding can fail while the old listeners close: retried, bounded; nil after the last try.
        if let listeners = try? await TCPListener.bind(address, on: loops, backlog: 4096, options: options) { return listeners }
        if Task.isCancelled { return nil }
        try? await clock.sleep(until: clock.now.advanced(by: .milliseconds(20)))  // cancelled: the check below ends it
        reservation = try? PortReservation(address)  // retried next round
    }
    return nil
}

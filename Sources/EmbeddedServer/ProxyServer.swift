import Runtime
import Profile
import Synchronization

/// How `wsload proxy` forwards and what it breaks.
package struct ProxyConfiguration: Sendable {
    package var listenHost: String
    package var listenPort: Int
    package var upstreamHost: String
    package var upstreamPort: Int
    /// Added to every chunk, each way (a slower network).
    package var delay: Duration?
    /// Bytes per second, each way, per connection; nil or 0: no cap.
    package var throttle: Int64?
    /// A forwarded connection with no byte either way for this long is closed (both sides); nil: no limit.
    package var idleTimeout: Duration? = .seconds(300)
    /// Forwarded connections at once; a client past it is closed at once, before any upstream connect
    /// (byte-transparent: the proxy cannot answer in the client's protocol). 0: no cap.
    package var maximumConnections: Int = 16_384
    /// The upstream connect must succeed within this, or the client's connection is closed.
    package var connectTimeout: Duration

    package init(
        listenHost: String = "127.0.0.1", listenPort: Int = 0, upstreamHost: String, upstreamPort: Int, delay: Duration? = nil,
        throttle: Int64? = nil, connectTimeout: Duration = .seconds(10)
    ) {
        self.listenHost = listenHost
        self.listenPort = listenPort
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
        self.delay = delay
        self.throttle = throttle
        self.connectTimeout = connectTimeout
    }
}

/// `wsload proxy`: a TCP proxy in front of a server we do not control, with the embedded server's chaos
/// actions (kill, reset, stall, restart) plus delay and throttle, so reconnect correctness can be checked
/// against any server. Byte-transparent (TLS passes through end to end); a close with a code needs
/// WebSocket framing and is the embedded server's alone.
package final class ProxyServer: Sendable {
    package let configuration: ProxyConfiguration
    private let listeners: RestartableListeners
    private var loops: [EventLoop] { listeners.loops }
    private let registries: [ProxyRegistry]
    package var localAddress: SocketAddress { listeners.localAddress }
    package let statistics = ProxyStatistics()

    private init(configuration: ProxyConfiguration, listeners: [TCPListener]) {
        self.configuration = configuration
        self.listeners = RestartableListeners(listeners)
        registries = listeners.map { _ in ProxyRegistry() }
    }

    package static func bind(_ configuration: ProxyConfiguration, on group: EventLoopGroup) async throws -> ProxyServer {
        let address = try SocketAddress(ip: configuration.listenHost, port: configuration.listenPort)
        return ProxyServer(configuration: configuration, listeners: try await TCPListener.bind(address, on: group.loops, backlog: 4096))
    }

    /// Start ``run()`` with this executor preference.
    package var taskExecutor: LoopTaskExecutor { loops[0].taskExecutor }

    /// Forwards until cancelled; a restart closes the listeners and listens again after its pause.
    package func run() async {
        await listeners.run(onRestart: { self.statistics.restarts.add(1, ordering: .relaxed) }) { index, listener, _ in
            await self.acceptLoop(listener, registry: self.registries[index])
        }
    }

    private func acceptLoop(_ listener: TCPListener, registry: ProxyRegistry) async {
        await withDiscardingTaskGroup { connections in
            // accept fails only once the listener is closed (the proxy stops): that ends the loop.
            while let client = try? await listener.accept() {
                statistics.accepted.add(1, ordering: .relaxed)
                let open = statistics.connections.add(1, ordering: .relaxed).newValue
                let cap = configuration.maximumConnections
                if cap > 0 && open > cap {
                    statistics.refused.add(1, ordering: .relaxed)
                    statistics.connections.subtract(1, ordering: .relaxed)
                    client.close()
                    continue
                }
                let loop = listener.loop
                connections.addTask(executorPreference: loop.taskExecutor) {
                    await self.forward(client, on: loop, registry: registry)
                    self.statistics.connections.subtract(1, ordering: .relaxed)
                }
            }
            listener.close()
        }
    }

    /// Connects upstream and pumps both ways until either side ends, then closes both.
    private func forward(_ client: TCPConnection, on loop: EventLoop, registry: ProxyRegistry) async {
        let upstream: TCPConnection
        do {
            var options = TCPOptions()
            options.connectTimeout = configuration.connectTimeout
            upstream = try await TCPConnection.connect(host: configuration.upstreamHost, port: configuration.upstreamPort, on: loop,
                                                       options: options)
        } catch {
            // The upstream is down: the client sees its connection close (as it would see the server's refusal).
            statistics.upstreamFailures.add(1, ordering: .relaxed)
            client.close()
            return
        }
        let pair = ProxyPair(client: client, upstream: upstream)
        let statistics = statistics
        let idle = configuration.idleTimeout.map { _ in
            ConnectionWatchdog(loop: loop) { _ in
                statistics.timeouts.add(1, ordering: .relaxed)
                pair.isBroken = true
                pair.close()
            }
        }
        idle?.arm(.idle, timeout: configuration.idleTimeout, resetsOnProgress: true)
        pair.watchdog = idle
        defer {
            idle?.disarm()
            pair.watchdog = nil
        }
        registry.insert(pair)
        statistics.active.add(1, ordering: .relaxed)
        defer {
            registry.remove(pair)
            statistics.active.subtract(1, ordering: .relaxed)
            pair.close()
        }
        await withTaskGroup(of: Void.self) { pumps in
            pumps.addTask(executorPreference: loop.taskExecutor) {
                await self.pump(from: client, to: upstream, pair: pair, isUpstream: true)
            }
            pumps.addTask(executorPreference: loop.taskExecutor) {
                await self.pump(from: upstream, to: client, pair: pair, isUpstream: false)
            }
            // When one direction fails (not a clean half-close), end the other too.
            for await _ in pumps where pair.isBroken { pumps.cancelAll() }
        }
    }

    private func pump(from source: TCPConnection, to destination: TCPConnection, pair: ProxyPair, isUpstream: Bool) async {
        var buffer: [UInt8] = []
        let clock = LoopClock()
        /// With a throttle: when the next chunk may go (each chunk takes its share of the rate after the one before).
        var nextWrite = clock.now
        do {
            while true {
                buffer.removeAll(keepingCapacity: true)
                guard try await source.read(into: &buffer, maxBytes: 64 * 1024) > 0 else {
                    try? await destination.shutdownWrite()  // pass the half-close on
                    return
                }
                if let until = pair.stalledUntil, until > clock.now { try await clock.sleep(until: until) }
                pair.watchdog?.progress()
                if let delay = configuration.delay { try await clock.sleep(until: clock.now.advanced(by: delay)) }
                try await destination.write(buffer)
                pair.watchdog?.progress()
                if isUpstream {
                    statistics.bytesUp.add(buffer.count, ordering: .relaxed)
                } else {
                    statistics.bytesDown.add(buffer.count, ordering: .relaxed)
                }
                if let rate = configuration.throttle, rate > 0 {
                    // From now, or from the previous chunk's due time if that is later: time spent idle is not
                    // banked, so a burst after a pause is held to the rate too.
                    nextWrite = max(nextWrite, clock.now).advanced(by: pacingDelay(bytes: Int64(buffer.count), bytesPerSecond: rate))
                    if nextWrite > clock.now { try await clock.sleep(until: nextWrite) }
                }
            }
        } catch {
            pair.isBroken = true
            pair.close()
        }
    }

    /// Applies a chaos action to the forwarded connections (or the listeners, for a restart).
    /// - Returns: how many connections it affected.
    @discardableResult
    package func perform(_ action: ServerChaosAction, seed: UInt64 = 0) async -> Int {
        if case .restart(let pause) = action { listeners.closeForRestart(pause: pause) }
        let registries = registries
        let affected = await applyOnEachLoop(loops, seed: seed) { index, _, loopSeed in registries[index].apply(action, seed: loopSeed) }
        statistics.chaos.add(affected, ordering: .relaxed)
        return affected
    }
}

/// One forwarded connection: the client's and the upstream's sockets. Loop-confined.
final class ProxyPair: @unchecked Sendable {
    let client: TCPConnection
    let upstream: TCPConnection
    var stalledUntil: LoopClock.Instant?
    var isBroken = false
    /// Closes the pair when neither side moves a byte for the idle timeout.
    var watchdog: ConnectionWatchdog?

    init(client: TCPConnection, upstream: TCPConnection) {
        self.client = client
        self.upstream = upstream
    }

    func close() {
        client.close()
        upstream.close()
    }
}

/// The forwarded connections of one loop; loop-confined.
final class ProxyRegistry: @unchecked Sendable {
    private var pairs: [ObjectIdentifier: ProxyPair] = [:]
    private var order: [ObjectIdentifier] = []

    func insert(_ pair: ProxyPair) {
        pairs[ObjectIdentifier(pair)] = pair
        order.append(ObjectIdentifier(pair))
    }

    func remove(_ pair: ProxyPair) {
        guard pairs.removeValue(forKey: ObjectIdentifier(pair)) != nil else { return }
        order.removeAll { $0 == ObjectIdentifier(pair) }
    }

    func apply(_ action: ServerChaosAction, seed: UInt64) -> Int {
        let chosen = chaosShare(of: order, in: pairs, fraction: action.fraction, seed: seed)
        for pair in chosen {
            switch action {
            case .kill, .restart, .close:
                pair.isBroken = true
                pair.close()
            case .reset:
                pair.isBroken = true
                pair.client.reset()
                pair.upstream.close()
            case .stall(let duration, _):
                pair.stalledUntil = LoopClock().now.advanced(by: duration)
            }
        }
        return chosen.count
    }
}

/// Counters `wsload proxy` prints; relaxed atomics.
package final class ProxyStatistics: Sendable {
    package let accepted = Atomic<Int>(0)
    package let active = Atomic<Int>(0)
    package let upstreamFailures = Atomic<Int>(0)
    package let bytesUp = Atomic<Int>(0)
    package let bytesDown = Atomic<Int>(0)
    package let chaos = Atomic<Int>(0)
    package let restarts = Atomic<Int>(0)
    /// Forwarded connections open now.
    package let connections = Atomic<Int>(0)
    /// Clients closed at once because ``ProxyConfiguration/maximumConnections`` were open.
    package let refused = Atomic<Int>(0)
    /// Connections closed by the idle timeout.
    package let timeouts = Atomic<Int>(0)

    package var summary: String {
        "accepted \(accepted.load(ordering: .relaxed)), active \(active.load(ordering: .relaxed)), "
            + "upstream failures \(upstreamFailures.load(ordering: .relaxed)), bytes up \(bytesUp.load(ordering: .relaxed)), "
            + "down \(bytesDown.load(ordering: .relaxed)), chaos \(chaos.load(ordering: .relaxed)), restarts \(restarts.load(ordering: .relaxed))"
            + ", refused (busy) \(refused.load(ordering: .relaxed)), timed out \(timeouts.load(ordering: .relaxed))"
    }
}

import Crypto
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
public final class EmbeddedServer: Sendable {
    public let configuration: ServerConfiguration
    private let listeners: [TCPListener]
    public let statistics = ServerStatistics()

    /// The bound address (the real port when port 0 was asked for).
    public var localAddress: SocketAddress { listeners[0].localAddress }

    /// `http://HOST:PORT` or `https://…` for this server's HTTP routes (no trailing slash).
    public var httpURL: String {
        let address = localAddress
        let host = address.family == .ipv6 ? "[\(address.ip)]" : address.ip
        return "\(configuration.tls == nil ? "http" : "https")://\(host):\(address.port)"
    }

    /// `ws://HOST:PORT/` or `wss://…` for this server.
    public var url: String {
        let address = localAddress
        let host = address.family == .ipv6 ? "[\(address.ip)]" : address.ip
        return "\(configuration.tls == nil ? "ws" : "wss")://\(host):\(address.port)/"
    }

    private init(configuration: ServerConfiguration, listeners: [TCPListener]) {
        self.configuration = configuration
        self.listeners = listeners
    }

    /// Binds one listener per loop of `group` on the configured address.
    public static func bind(_ configuration: ServerConfiguration, on group: EventLoopGroup) async throws -> EmbeddedServer {
        let address = try SocketAddress(ip: configuration.host, port: configuration.port)
        let listeners = try await TCPListener.bind(address, on: group.loops, backlog: 4096)
        return EmbeddedServer(configuration: configuration, listeners: listeners)
    }

    /// Serves until the calling task is cancelled; then closes the listeners and every connection.
    /// The executor to start ``run()`` on (`addTask(executorPreference: server.taskExecutor)`): the
    /// server then starts accepting at once, however busy the global pool is.
    public var taskExecutor: LoopTaskExecutor { listeners[0].loop.taskExecutor }

    public func run() async {
        await withDiscardingTaskGroup { tasks in
            for (index, listener) in listeners.enumerated() {
                tasks.addTask(executorPreference: listener.loop.taskExecutor) {
                    await self.acceptLoop(listener, seed: self.configuration.chaos.seed.map { $0 &+ UInt64(index) })
                }
            }
        }
    }

    private func acceptLoop(_ listener: TCPListener, seed: UInt64?) async {
        var random = SeededRandomNumberGenerator(seed: seed)
        await withDiscardingTaskGroup { connections in
            while let tcp = try? await listener.accept() {
                statistics.accepted.add(1, ordering: .relaxed)
                let session = ServerSession(tcp: tcp, server: self, random: random.split())
                connections.addTask(executorPreference: listener.loop.taskExecutor) { await session.serve() }
            }
            listener.close()
        }
    }
}

/// Counters a test or `serve` reads; updated with relaxed atomics from every loop.
public final class ServerStatistics: Sendable {
    public let accepted = Atomic<Int>(0)
    public let upgraded = Atomic<Int>(0)
    public let rejected = Atomic<Int>(0)
    public let active = Atomic<Int>(0)
    public let messagesEchoed = Atomic<Int>(0)
    public let messagesPushed = Atomic<Int>(0)
    public let chaosCloses = Atomic<Int>(0)
    public let protocolFailures = Atomic<Int>(0)
    public let httpRequests = Atomic<Int>(0)
    public let bytesServed = Atomic<Int>(0)
    public let uploads = Atomic<Int>(0)
    public let bytesUploaded = Atomic<Int>(0)

    /// A one-line summary for logs.
    public var summary: String {
        "accepted \(accepted.load(ordering: .relaxed)), upgraded \(upgraded.load(ordering: .relaxed)), "
            + "rejected \(rejected.load(ordering: .relaxed)), active \(active.load(ordering: .relaxed)), "
            + "echoed \(messagesEchoed.load(ordering: .relaxed)), pushed \(messagesPushed.load(ordering: .relaxed)), chaos closes \(chaosCloses.load(ordering: .relaxed)), "
            + "protocol failures \(protocolFailures.load(ordering: .relaxed))"
    }
}

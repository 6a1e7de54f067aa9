import Runtime
import Synchronization
import Testing

/// Runs `body` with a fresh group of `loopCount` loops, then checks that nothing leaked and stops the loops.
public func withLoopGroup<T: Sendable>(
    loopCount: Int = 2, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (EventLoopGroup) async throws -> T
) async throws -> T {
    let group = try EventLoopGroup(loopCount: loopCount)
    let result: T
    do {
        result = try await body(group)
    } catch {
        group.shutdown()
        throw error
    }
    // Handles close asynchronously (libuv close callbacks): give the loops a moment.
    try await waitUntil { group.liveHandleCount == 0 && group.waitingTaskCount == 0 }
    #expect(group.liveHandleCount == 0, "live handles after the test", sourceLocation: sourceLocation)
    #expect(group.waitingTaskCount == 0, "waiting tasks after the test", sourceLocation: sourceLocation)
    let leaked = group.shutdown()
    #expect(leaked == 0, "handles still open at shutdown", sourceLocation: sourceLocation)
    return result
}

/// Runs `body` in a task that prefers `loop`'s task executor, i.e. on the loop thread.
public func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await Task(executorPreference: loop.taskExecutor) { try await body() }.value
}

/// Polls `condition` every 10 ms for up to `limit`, a bound on a correctness wait, not a performance claim;
/// throws ``Deadline/Expired`` (naming the caller's line) when it still does not hold then.
public func waitUntil(
    limit: Duration = .seconds(30), file: StaticString = #fileID, line: UInt = #line, _ condition: () -> Bool
) async throws {
    try await Deadline.waitUntil("the condition at \(file):\(line)", timeout: limit, interval: .milliseconds(10)) { condition() }
}

/// An echo server on every loop of `group` (one listener per loop on one port).
public struct EchoServer {
    public let listeners: [TCPListener]
    public let task: Task<Void, Never>
    public var address: SocketAddress { listeners[0].localAddress }

    public static func start(on group: EventLoopGroup, address: String = "127.0.0.1") async throws -> EchoServer {
        let listeners = try await TCPListener.bind(try SocketAddress(ip: address, port: 0), on: group.loops)
        let task = Task {
            await withDiscardingTaskGroup { tasks in
                for listener in listeners {
                    tasks.addTask(executorPreference: listener.loop.taskExecutor) {
                        await withDiscardingTaskGroup { connections in
                            while let connection = try? await listener.accept() {
                                connections.addTask(executorPreference: listener.loop.taskExecutor) {
                                    var buffer: [UInt8] = []
                                    while let count = try? await connection.read(into: &buffer), count > 0 {
                                        guard (try? await connection.write(buffer)) != nil else { break }
                                        buffer.removeAll(keepingCapacity: true)
                                    }
                                    connection.close()
                                }
                            }
                        }
                    }
                }
            }
        }
        return EchoServer(listeners: listeners, task: task)
    }

    public func stop() async {
        task.cancel()
        await task.value
    }
}

/// A thread-safe counter for tests that count across tasks and loops.
public final class Counter: Sendable {
    private let storage = Atomic<Int>(0)
    public init() {}
    public func increment(by amount: Int = 1) { storage.add(amount, ordering: .relaxed) }
    public var value: Int { storage.load(ordering: .relaxed) }
}

/// A client and the server side of one loopback TCP connection on `loop` (call on its thread), plus
/// the listener that accepted it.
public func connectedPair(
    on loop: EventLoop, clientOptions: TCPOptions = TCPOptions()
) async throws -> (client: TCPConnection, server: TCPConnection, listener: TCPListener) {
    let listener = try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop)
    async let accepted = listener.accept()
    let client = try await TCPConnection.connect(to: listener.localAddress, on: loop, options: clientOptions)
    return (client, try await accepted, listener)
}

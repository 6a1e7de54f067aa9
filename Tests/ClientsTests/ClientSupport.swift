import Clients
import EmbeddedServer
import Runtime
import TestSupport
import WebSocket

/// Runs `body` against an embedded server on `group`, then stops the server.
func withEmbeddedServer<T: Sendable>(
    _ configuration: ServerConfiguration = ServerConfiguration(), on group: EventLoopGroup,
    _ body: @Sendable (EmbeddedServer) async throws -> T
) async throws -> T {
    let server = try await EmbeddedServer.bind(configuration, on: group)
    return try await withThrowingTaskGroup(of: T?.self) { tasks in
        tasks.addTask(executorPreference: server.taskExecutor) {
            await server.run()
            return nil
        }
        let result = try await body(server)
        tasks.cancelAll()
        while try await tasks.next() != nil {}
        return result
    }
}

/// Collects a manager's events while `run()` serves it; `script` drives the connection.
struct Session {
    let manager: WebSocketManager
    let events: EventLog
}

final class EventLog: Sendable {
    private let storage = Lock<[WebSocketManager.Event]>([])
    var all: [WebSocketManager.Event] { storage.withLock { $0 } }
    func append(_ event: WebSocketManager.Event) { storage.withLock { $0.append(event) } }

    /// Short names of the events, for exact sequence checks.
    var names: [String] {
        all.map { event in
            switch event {
            case .connected: "connected"
            case .text: "text"
            case .data: "data"
            case .disconnected(let code, _): "disconnected(\(code.rawValue))"
            case .error(let error): "error(\(error.code.rawValue))"
            }
        }
    }
}

/// Runs a manager for `url` on `loop`: `run()` and an event collector in a task group while `script`
/// drives it; returns the events once the stream finished.
func runSession(
    url: String, configuration: WebSocketClientConfiguration = .init(), loop: EventLoop,
    script: @escaping @Sendable (WebSocketManager, AsyncStream<WebSocketManager.Event>.Iterator) async throws -> Void = { _, _ in }
) async throws -> EventLog {
    let manager = WebSocketManager(url: try WebSocketURL(url), configuration: configuration, loop: loop)
    let log = EventLog()
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask(executorPreference: loop.taskExecutor) { await manager.run() }
        let (stream, continuation) = AsyncStream.makeStream(of: WebSocketManager.Event.self)
        tasks.addTask {
            for await event in manager.events() {
                log.append(event)
                continuation.yield(event)
            }
            continuation.finish()
        }
        tasks.addTask(executorPreference: loop.taskExecutor) {
            // The script starts once the connection is up (or not at all if it never comes up).
            var iterator = stream.makeAsyncIterator()
            guard case .connected? = await iterator.next() else { return }
            try await script(manager, iterator)
        }
        // next() rethrows the first failure at once, and leaving the group then cancels the rest
        // (waitForAll would wait for a session that never ends).
        while try await tasks.next() != nil {}
    }
    return log
}

extension AsyncStream<WebSocketManager.Event>.Iterator {
    /// The next text or data message, skipping other events.
    mutating func nextMessage() async -> WebSocketManager.Event? {
        while let event = await next() {
            switch event {
            case .text, .data: return event
            case .disconnected, .error: return event
            case .connected: continue
            }
        }
        return nil
    }
}

/// A thread-safe list that escaping closures can append to.
final class Collected<Element: Sendable>: Sendable {
    private let storage = Lock<[Element]>([])
    func append(_ element: Element) { storage.withLock { $0.append(element) } }
    var all: [Element] { storage.withLock { $0 } }
}

import Clients
import EmbeddedServer
import Profile
import Runtime
import Testing
import TestSupport
import WebSocket


/// A client's events with the instant each was seen.
final class TimedLog: Sendable {
    let events = EventLog()
    private let instants = Collected<ContinuousClock.Instant>()
    func append(_ event: WebSocketManager.Event) {
        instants.append(.now)
        events.append(event)
    }
    var names: [String] { events.names }
    /// When the first event called `name` was seen.
    func instant(of name: String) -> ContinuousClock.Instant? {
        let names = names
        let instants = instants.all
        return names.firstIndex(of: name).flatMap { $0 < instants.count ? instants[$0] : nil }
    }
}

/// `count` clients of `server`, each run with its events collected, while `body` acts on the server once
/// all of them are up; then the clients still open are closed and their event logs returned.
private func withClients(
    _ count: Int, of server: EmbeddedServer, on loop: EventLoop, _ body: @Sendable ([WebSocketManager], [TimedLog]) async throws -> Void
) async throws -> [TimedLog] {
    let managers = try (0..<count).map { _ in WebSocketManager(url: try WebSocketURL(server.url), loop: loop) }
    let logs = managers.map { _ in TimedLog() }
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        for (manager, log) in zip(managers, logs) {
            tasks.addTask(executorPreference: loop.taskExecutor) { await manager.run() }
            tasks.addTask(executorPreference: loop.taskExecutor) { for await event in manager.events() { log.append(event) } }
        }
        try await waitUntil(limit: .seconds(20)) { server.statistics.active.load(ordering: .relaxed) == count }
        try #require(server.statistics.active.load(ordering: .relaxed) == count, "all \(count) clients connected")
        try await body(managers, logs)
        for manager in managers { try await onLoop(loop) { await manager.disconnect() } }
        try await tasks.waitForAll()
    }
    return logs
}

@Suite("Embedded server chaos: restart, stall, reset and kill", .serialized, .timeLimit(.minutes(2)))
struct ServerChaosTests {
    @Test("restart drops every session and stops listening for its `for`: a connect is refused, then accepted again after")
    func restart() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                let loop = group.loops[0]
                let port = server.localAddress.port
                let downFor: Duration = .seconds(2)
                let logs = try await withClients(3, of: server, on: loop) { _, logs in
                    #expect(try await canConnect(port: port, on: loop), "listening before the restart")
                    let before = ContinuousClock.now
                    let affected = await server.perform(.restart(downFor: downFor))
                    #expect(affected == 3)
                    // From the listener's close (on the loop's next turn, before perform returns) until `for` has
                    // passed, nothing listens: every probe until then is refused, the first accepted one comes after.
                    let probes = try #require(try await probeUntilAccepted(port: port, on: loop), "the server listened again after its restart")
                    #expect(probes.accepted - before >= downFor, "listening again \(probes.accepted - before) after a restart down for \(downFor)")
                    if probes.firstStart - before < downFor {
                        #expect(probes.refused > 0, "the first probe went out while the server was down, and was refused")
                    }
                    try await waitUntil(limit: .seconds(20)) { logs.allSatisfy { $0.names.last?.hasPrefix("disconnected") == true } }
                }
                // Every session was dropped without a closing handshake.
                for log in logs { #expect(log.names.last == "disconnected(1006)", "\(log.names)") }
                try await waitUntil(limit: .seconds(20)) { server.statistics.restarts.load(ordering: .relaxed) == 1 }
                #expect(server.statistics.restarts.load(ordering: .relaxed) == 1)
                // A WebSocket opened after the restart is served.
                let after = try await runSession(url: server.url, loop: loop) { manager, events in
                    try await manager.send(text: "after the restart")
                    var events = events
                    guard case .text(let text)? = await events.nextMessage() else { Issue.record("no echo after the restart"); return }
                    #expect(text == "after the restart")
                    await manager.disconnect()
                }
                #expect(after.names == ["connected", "text", "disconnected(1000)"], "\(after.names)")
            }
        }
    }

    @Test("stall holds the sessions it hits: their echoes come back no sooner than `for` after it, the connections stay open")
    func stall() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                let loop = group.loops[0]
                let stallFor: Duration = .seconds(2)
                let logs = try await withClients(4, of: server, on: loop) { managers, logs in
                    let before = ContinuousClock.now
                    let affected = await server.perform(.stall(duration: stallFor, fraction: 0.5), seed: 1)
                    #expect(affected == 2)
                    for manager in managers { try await onLoop(loop) { try await manager.send(text: "during the stall") } }
                    try await waitUntil(limit: .seconds(20)) { logs.allSatisfy { $0.names.contains("text") } }
                    let echoed = logs.compactMap { $0.instant(of: "text") }
                    #expect(echoed.count == 4, "every echo came back once the stall ended: \(logs.map(\.names))")
                    // A stalled session reads nothing until its stall ends: its echo can come no sooner. (The spared
                    // ones echo at once on an idle box, but no bound is put on them: a busy CPU may delay them too.)
                    let held = echoed.filter { $0 - before >= stallFor }.count
                    #expect(held >= affected, "\(held) echoes held for \(stallFor), of \(affected) stalled sessions")
                }
                // Stalled, not dropped: every connection was still open when the client closed it.
                for log in logs { #expect(log.names == ["connected", "text", "disconnected(1000)"], "\(log.names)") }
            }
        }
    }

    @Test("reset sends an RST (the client's read fails with `reset`); kill sends a FIN (a plain 1006, no error)",
          arguments: [true, false])
    func resetAndKill(isReset: Bool) async throws {
        let action: ServerChaosAction = isReset ? .reset(fraction: 1) : .kill(fraction: 1)
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                let logs = try await withClients(2, of: server, on: group.loops[0]) { _, logs in
                    #expect(await server.perform(action) == 2)
                    try await waitUntil(limit: .seconds(20)) { logs.allSatisfy { $0.names.last?.hasPrefix("disconnected") == true } }
                }
                for log in logs {
                    let errors = log.events.all.compactMap { event -> WebSocketClientError? in
                        if case .error(let error) = event { error } else { nil }
                    }
                    if isReset {
                        #expect(errors.map(\.runtimeError?.code) == [.connectionReset], "\(errors)")
                        #expect(log.names == ["connected", "error(transport)", "disconnected(1006)"], "\(log.names)")
                    } else {
                        #expect(log.names == ["connected", "disconnected(1006)"], "\(log.names)")
                    }
                }
            }
        }
    }
}

import EmbeddedServer
import LoadEngine
import Profile
import Reporting
import Runtime
import WebSocket

/// Runs a ``LoadRun`` where its profile says: for an `embedded` target, starts the embedded server (with
/// every subprotocol the profile's scenarios ask for) on loops of its own, hands the run its URL, HTTP
/// origin and chaos controller, and stops it afterwards; a URL target runs as it is.
///
/// The composition layer the engine does not contain: `LoadEngine` knows a target and a ``ChaosController``,
/// never the server.
package struct RunHost: Sendable {
    package var run: LoadRun
    /// Where the embedded server of an `embedded` profile already runs, in a process of its own (`wsload run
    /// --processes` starts it, and it runs the chaos timeline itself): the run connects there and starts none.
    package var embeddedServer: WebSocketURL?

    package init(_ run: LoadRun, embeddedServer: WebSocketURL? = nil) {
        self.run = run
        self.embeddedServer = embeddedServer
    }

    /// Runs the load. - Throws: ``LoadRunError`` when the embedded server cannot start, or whatever
    /// ``LoadRun/run()`` throws.
    package func run() async throws -> RunResult {
        guard run.profile.target == .embedded else { return try await run.run() }
        if let embeddedServer { return try await run.run(target: RunTarget(url: embeddedServer)) }
        let servers: EventLoopGroup
        let server: EmbeddedServer
        let url: WebSocketURL
        do {
            servers = try EventLoopGroup(loopCount: run.profile.loops ?? EventLoopGroup.defaultLoopCount)
        } catch {
            throw LoadRunError(description: "could not start the embedded server: \(error)")
        }
        do {
            server = try await EmbeddedServer.bind(Self.serverConfiguration(for: run.profile), on: servers)
            url = try WebSocketURL(server.url)
        } catch {
            _ = servers.shutdown()
            throw LoadRunError(description: "could not start the embedded server: \(error)")
        }
        let target = RunTarget(url: url, httpOrigin: server.httpURL, chaos: EmbeddedChaos(server: server), isInProcess: true)
        let outcome = await withTaskGroup(of: Void.self) { serverTasks -> Result<RunResult, any Error> in
            serverTasks.addTask(executorPreference: server.taskExecutor) { await server.run() }
            defer { serverTasks.cancelAll() }
            do {
                return .success(try await run.run(target: target))
            } catch {
                return .failure(error)
            }
        }
        _ = servers.shutdown()
        return try outcome.get()
    }

    /// The embedded server a run with `profile` starts: it serves the run, not the open network, so none of
    /// `serve`'s guards against strangers may refuse or cut the run's own clients. No connection cap (profiles
    /// open up to a million connections), no upload limit (a run's uploads are only digested, never stored),
    /// and no idle, head, body or write timeout (idle pattern connections and kept-alive transfer connections
    /// wait as long as the run says; `bandwidthLimit` transfers read and send slowly). The handshake timeout
    /// stays: it only bounds a connection that never sends a request.
    package static func serverConfiguration(for profile: Profile) -> ServerConfiguration {
        var configuration = ServerConfiguration(subprotocols: subprotocols(of: profile))
        configuration.maximumConnections = 0
        configuration.maximumUploadSize = .max
        configuration.idleTimeout = nil
        configuration.headTimeout = nil
        configuration.bodyTimeout = nil
        configuration.writeTimeout = nil
        return configuration
    }

    /// Every subprotocol any scenario asks for, in first-seen order: the server accepts them all.
    private static func subprotocols(of profile: Profile) -> [String] {
        var seen: [String] = []
        for scenario in profile.scenarios {
            for name in scenario.websocket.subprotocols where !seen.contains(name) { seen.append(name) }
        }
        return seen
    }
}

/// The embedded server as the run's chaos controller.
private struct EmbeddedChaos: ChaosController {
    let server: EmbeddedServer

    func apply(_ action: ServerChaosAction, seed: UInt64) async -> Int { await server.perform(action, seed: seed) }
}

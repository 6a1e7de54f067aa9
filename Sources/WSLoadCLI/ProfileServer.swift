import EmbeddedServer
import Foundation
import JSON
import Profile
import RunHost
import Runtime

/// `wsload serve --profile-server PROFILE`: the embedded server of a `wsload run --processes` run, in a process of its
/// own so the clients and the server do not share one open-file limit. It serves what `RunHost` would serve in
/// process (``RunHost/serverConfiguration(for:)``), on `--host` (127.0.0.x) and a free port, writes one ready line on
/// stdout, and runs the profile's chaos timeline itself from the run's zero (the `start` control message): each event
/// at its moment, seeded as the coordinator seeds it (``ChaosEvent/seed(run:index:)``), reported as one stdout line
/// that the parent puts in the merged report. It stops on SIGINT/SIGTERM, a `stop` message or the control pipe's
/// end (the parent gone). Not a user's command: `serve --help` does not list it.
enum ProfileServer {
    /// What the server writes on stdout, one JSON line each.
    enum Line: Equatable, Sendable {
        /// Listening: the WebSocket URL and the HTTP origin.
        case ready(url: String, httpOrigin: String)
        /// The timeline's `index`-th event fired `firedAt` after the run's zero and hit `affected` connections.
        case chaos(index: Int, firedAt: Duration, affected: Int)

        var text: String {
            let value: JSONValue = switch self {
            case .ready(let url, let origin): ["ready": ["url": .string(url), "http": .string(origin)]]
            case .chaos(let index, let firedAt, let affected):
                ["chaos": ["index": JSONValue(index), "firedAt": .number(firedAt.seconds), "affected": JSONValue(affected)]]
            }
            return value.formatted(pretty: false) + "\n"
        }

        init(ready url: String, httpOrigin: String) { self = .ready(url: url, httpOrigin: httpOrigin) }
        init(chaos index: Int, firedAt: Duration, affected: Int) { self = .chaos(index: index, firedAt: firedAt, affected: affected) }

        /// Parses a line; nil for anything else.
        init?(parsing line: String) {
            guard let value = try? JSONValue(parsing: line) else { return nil }  // not a line of ours: not a ready or chaos line
            if let ready = value["ready"], let url = ready["url"]?.stringValue, let origin = ready["http"]?.stringValue {
                self = .ready(url: url, httpOrigin: origin)
            } else if let chaos = value["chaos"], let index = chaos["index"]?.integerValue, index >= 0,
                let firedAt = chaos["firedAt"]?.numberValue, firedAt.isFinite, firedAt >= 0,
                let affected = chaos["affected"]?.integerValue, affected >= 0
            {
                self = .chaos(index: index, firedAt: .seconds(firedAt), affected: affected)
            } else {
                return nil
            }
        }
    }

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        let options: Arguments
        let overrides: ProfileOverrides
        let control: Int32?
        do {
            options = try Arguments(arguments, valueOptions: Arguments.profileOverrideOptions.union(
                [ProcessControl.profileServer, "host", ProcessControl.controlDescriptor]), flagOptions: [])
            overrides = try options.profileOverrides()
            control = try ProcessControl.descriptor(options, ProcessControl.controlDescriptor)
        } catch {
            output.printError("Error: \(error)")
            return .usage
        }
        let path = options.value(ProcessControl.profileServer) ?? ""
        let profile: Profile
        switch loadProfile(path, overrides: overrides) {
        case .failure(let failure):
            failure.print(to: output, path: path)
            return failure.exitCode
        case .success(let loaded): profile = loaded
        }
        var configuration = RunHost.serverConfiguration(for: profile)
        configuration.host = options.value("host") ?? "127.0.0.1"
        configuration.port = 0
        ResourceLimits.raiseOpenFileLimit()
        let group: EventLoopGroup
        let server: EmbeddedServer
        do {
            group = try EventLoopGroup(loopCount: profile.loops ?? EventLoopGroup.defaultLoopCount)
        } catch {
            output.printError("Error: cannot start event loops: \(error)")
            return .failure
        }
        defer { group.shutdown() }
        do {
            server = try await EmbeddedServer.bind(configuration, on: group)
        } catch {
            output.printError("Error: cannot listen on \(configuration.host): \(error)")
            return .failure
        }
        let start = StartSignal()
        output.writeOutput(Line(ready: server.url, httpOrigin: server.httpURL).text)
        let seed = profile.seed ?? UInt64.random(in: 0...UInt64(Int64.max))
        _ = try? await withShutdownSignals(on: group.loops[0]) { shutdown in  // signal handlers that cannot be installed: the control pipe still stops it
            if let control {
                ProcessControl.watch(control) { message in
                    switch message {
                    case .stop(let signal): shutdown.request(signal: signal)
                    case .start(let milliseconds): start.set(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
                    }
                }
            }
            await withTaskGroup(of: Void.self) { tasks in
                tasks.addTask(executorPreference: server.taskExecutor) { await server.run() }
                tasks.addTask { _ = await shutdown.wait() }
                tasks.addTask {
                    await runTimeline(profile, seed: seed, start: start, server: server, output: output)
                    try? await Task.sleep(for: .seconds(365 * 24 * 3600))  // done firing: serve until stopped (cancelled)
                }
                await tasks.next()
                tasks.cancelAll()
            }
        }
        return .success
    }

    /// Fires the timeline's events that fall within the duration, each at the run's zero + its moment (none before
    /// the zero is known), one at a time in order; a restart's pause runs in the server, not here.
    private static func runTimeline(_ profile: Profile, seed: UInt64, start: StartSignal, server: EmbeddedServer,
                                    output: CommandOutput) async {
        guard !profile.chaos.isEmpty, let zero = await start.value() else { return }
        for (index, event) in profile.chaos.enumerated() where event.at < profile.duration {
            let wait = zero.addingTimeInterval(event.at.seconds).timeIntervalSinceNow
            if wait > 0 {
                do { try await Task.sleep(for: .seconds(wait)) } catch { return }  // cancelled: the server stops
            }
            let firedAt = Duration.seconds(max(event.at.seconds, Date().timeIntervalSince(zero)))
            let affected = await server.perform(event.action, seed: ChaosEvent.seed(run: seed, index: index))
            output.writeOutput(Line(chaos: index, firedAt: firedAt, affected: affected).text)
        }
    }
}

/// The run's zero, set once from the control thread and awaited by the timeline.
private final class StartSignal: Sendable {
    private struct State {
        var date: Date?
        var waiters: [CheckedContinuation<Date?, Never>] = []
    }
    private let state = Lock(State())

    func set(_ date: Date) {
        let waiters = state.withLock { state -> [CheckedContinuation<Date?, Never>] in
            guard state.date == nil else { return [] }
            state.date = date
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: date) }
    }

    /// The zero once it is set (at once if it is).
    func value() async -> Date? {
        await withCheckedContinuation { continuation in
            let known = state.withLock { state -> Date? in
                if let date = state.date { return date }
                state.waiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }
}

import EmbeddedServer
import LoadEngine
import Profile
import Reporting
import Runtime

/// `wsload proxy`: a TCP proxy with faults in front of a server we do not control.
enum ProxyCommand: Subcommand {
    static let name = "proxy"
    static let summary = "Forward to a server, injecting delay, throttling and chaos (kill, reset, stall, restart)."
    static let helpText = """
        OVERVIEW: Forward to a server, injecting delay, throttling and chaos (kill, reset, stall, restart).

        A TCP proxy (byte-transparent: ws, wss, http and https pass through) so reconnect correctness can be
        checked against servers we do not control: point `wsload run --target` at the proxy and give it a chaos
        timeline. Events fire at their time after the proxy starts; each prints what it hit. Listens on loopback
        unless told otherwise. Stops on SIGINT/SIGTERM (or after --duration) and prints counts.

        USAGE: wsload proxy --upstream <url|host:port> [options]

        OPTIONS:
          --upstream <url>        Where to forward: ws://, wss://, http://, https:// URL or HOST:PORT (required).
          --listen <host:port>    Address to listen on. (default: 127.0.0.1:9000)
          --delay <duration>      Add this to every chunk, each way.
          --throttle <size>       At most this many bytes per second, each way, per connection (0: no cap).
          --max-connections <n>   Forward at most n connections at once; a client past it is closed at once.
                                  0: no cap. (default: 16384)
          --idle-timeout <duration>
                                  Close a connection that moves no byte either way for this long (0s: never).
                                  (default: 300s)
          --chaos <json>          A timeline: [{"at": "20s", "action": "kill"}, {"at": "40s", "action": "restart",
                                  "for": "2s"}, {"at": "60s", "action": "stall", "for": "5s", "fraction": 0.5},
                                  {"at": "80s", "action": "reset", "fraction": 0.1}] (as a profile's chaos).
          --chaos-file <file>     The timeline from a file.
          --seed <n>              Seed for choosing the connections a fractional event hits.
          --loops <n>             Event loops (threads). (default: one per core)
          --duration <duration>   Stop after this long.
          -h, --help              Show help information.

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        let configuration: ProxyConfiguration
        let timeline: [ChaosEvent]
        let parsed: Arguments
        do {
            parsed = try Arguments(
                arguments, valueOptions: ["upstream", "listen", "delay", "throttle", "chaos", "chaos-file", "seed", "loops", "duration",
                                           "max-connections", "idle-timeout"],
                flagOptions: [])
            guard let upstream = parsed.value("upstream") else { throw UsageError("--upstream is required") }
            let (upstreamHost, upstreamPort) = try hostAndPort(upstream, option: "upstream")
            let (listenHost, listenPort) = try hostAndPort(parsed.value("listen") ?? "127.0.0.1:9000", option: "listen")
            var proxy = ProxyConfiguration(listenHost: listenHost, listenPort: listenPort, upstreamHost: upstreamHost, upstreamPort: upstreamPort)
            proxy.delay = try parsed.duration("delay")
            // 0 means no cap, as the clients' bandwidth caps do (not a division by zero).
            proxy.throttle = try parsed.byteSize("throttle").flatMap { $0 > 0 ? $0 : nil }
            if let count = try parsed.integer("max-connections", in: 0...1_000_000) { proxy.maximumConnections = count }
            if let timeout = try parsed.timeout("idle-timeout") { proxy.idleTimeout = timeout }
            configuration = proxy
            var text = parsed.value("chaos")
            if let file = parsed.value("chaos-file") {
                guard text == nil else { throw UsageError("give --chaos or --chaos-file, not both") }
                // An unreadable file is reported below as unreadable; a short read yields JSON that fails to parse, with its place.
                guard let size = FileSystem.size(of: file), size < 1 << 20, let handle = try? DataFile.open(file, mode: .read) else {
                    throw UsageError("--chaos-file: cannot read \(file)")
                }
                var bytes: [UInt8] = []
                try? handle.read(into: &bytes, count: Int(size), at: 0)  // a short read fails to parse, with its place
                text = String(decoding: bytes, as: UTF8.self)
            }
            timeline = try text.map { try ProfileDecoder.decodeChaos(Array($0.utf8)) } ?? []
            if timeline.contains(where: { if case .close = $0.action { true } else { false } }) {
                throw UsageError("--chaos: close with a code needs WebSocket framing; the proxy can kill, reset, stall and restart")
            }
        } catch let error as ProfileError {
            output.printError("Error: --chaos: \(error.problems.map(\.description).joined(separator: "; "))\nSee 'wsload proxy --help'.")
            return .usage
        } catch {
            output.printError("Error: \(error)\nSee 'wsload proxy --help'.")
            return .usage
        }
        let loopCount: Int
        let duration: Duration?
        let seed: UInt64
        do {
            loopCount = try parsed.integer("loops", in: 1...256) ?? EventLoopGroup.defaultLoopCount
            duration = try parsed.duration("duration")
            seed = UInt64(try parsed.integer("seed", in: 0...Int.max) ?? 0)
        } catch {
            output.printError("Error: \(error)\nSee 'wsload proxy --help'.")
            return .usage
        }
        ResourceLimits.raiseOpenFileLimit()
        let group: EventLoopGroup
        do {
            group = try EventLoopGroup(loopCount: loopCount)
        } catch {
            output.printError("Error: cannot start event loops: \(error)")
            return .failure
        }
        defer { group.shutdown() }
        let proxy: ProxyServer
        do {
            proxy = try await ProxyServer.bind(configuration, on: group)
        } catch {
            output.printError("Error: cannot listen on \(configuration.listenHost):\(configuration.listenPort): \(error)")
            return .failure
        }
        output.print("wsload proxy: listening on \(proxy.localAddress), forwarding to \(configuration.upstreamHost):\(configuration.upstreamPort)")
        let reason = await serveUntilStopped(on: group.loops[0], duration: duration, serve: {
            await withTaskExecutorPreference(proxy.taskExecutor) { await proxy.run() }
        }, alongside: {
            // The timeline, on the proxy's first loop, so a busy global pool does not delay the events.
            await withTaskExecutorPreference(proxy.taskExecutor) {
                let clock = LoopClock()
                let start = clock.now
                for (index, event) in timeline.enumerated() {
                    guard (try? await clock.sleep(until: start.advanced(by: event.at))) != nil else { return }  // cancelled: the proxy is stopping
                    let affected = await proxy.perform(event.action, seed: seed &+ UInt64(index))
                    output.print("wsload proxy: \(event.action) at \(formatDuration(start.duration(to: clock.now))): \(affected) connections")
                }
            }
        })
        output.print("wsload proxy: stopped \(reason); \(proxy.statistics.summary)")
        return .success
    }

    /// `ws://host:port/…` (any of ws, wss, http, https; default ports by scheme) or `host:port`; IPv6 in brackets.
    static func hostAndPort(_ text: String, option: String) throws -> (String, Int) {
        var rest = Substring(text)
        var defaultPort: Int?
        for (scheme, port) in [("ws://", 80), ("wss://", 443), ("http://", 80), ("https://", 443)] where rest.lowercased().hasPrefix(scheme) {
            rest = rest.dropFirst(scheme.count)
            defaultPort = port
        }
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        var host = rest
        var portText: Substring?
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        }
        guard !host.isEmpty else { throw UsageError("--\(option): \"\(text)\" has no host") }
        let port: Int? = portText.map { Int($0) } ?? defaultPort
        guard let port, (0...65535).contains(port) else {
            throw UsageError("--\(option): \"\(text)\" needs a port (HOST:PORT or a URL)")
        }
        return (String(host), port)
    }
}

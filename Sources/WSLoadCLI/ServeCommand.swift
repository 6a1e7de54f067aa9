import EmbeddedServer
import Profile
import Foundation
import Runtime
import WebSocket

/// `wsload serve`: the embedded WebSocket echo server, with chaos options.
enum ServeCommand: Subcommand {
    static let name = "serve"
    static let summary = "Run the embedded WebSocket echo and HTTP file server (with chaos options)."
    static let helpText = """
        OVERVIEW: Run the embedded WebSocket echo and HTTP file server (with chaos options).

        Echoes text as text and binary as binary, answers pings, negotiates permessage-deflate. Requests that do
        not upgrade get HTTP/1.1: GET|HEAD /bytes/<size>?seed=S (generated content), GET|HEAD /files/<name>
        (from --files), PUT|POST /upload[/<name>] (digested; stored with --upload-dir). Single ranges, If-Range,
        ETag, Last-Modified and keep-alive; per-request chaos with ?drop_after=N&throttle=BPS&fail_rate=P&ranges=0.
        Listens on loopback unless told otherwise. Stops on SIGINT/SIGTERM (or after --duration) and prints counts.

        USAGE: wsload serve [options]

        OPTIONS:
          --host <address>        Address to listen on. (default: 127.0.0.1)
          --port <port>           Port; 0 picks a free one. (default: 8765)
          --loops <n>             Event loops (threads). (default: one per core)
          --subprotocol <name>    Accept this subprotocol (repeatable, in preference order).
          --no-compression        Do not answer permessage-deflate offers.
          --tls                   Serve wss:// with a generated self-signed certificate.
          --cert <file>           Serve wss:// with this PEM certificate chain (needs --key).
          --key <file>            The PEM private key for --cert.
          --write-certificate <file>
                                  With --tls: write the generated certificate (PEM) here for clients to trust.
          --close-after <duration>
                                  Close each connection this long after its handshake.
          --close-probability <p> Close instead of echoing, with probability p per message.
          --close-code <code>     Close code for chaos closes. (default: 1001)
          --close-mode <mode>     close (close frame), drop (TCP FIN, no frame) or reset (RST). (default: close)
          --echo-delay <duration> Wait before each echo.
          --stop-reading          After the handshake, read nothing (a stalled server).
          --files <dir>           Serve the files in this directory at /files/<name>.
          --upload-dir <dir>      Store uploads here (otherwise they are only digested).
          --http-drop-after <size>
                                  Close HTTP responses after this many body bytes.
          --http-throttle <size>  Send HTTP bodies at most this many bytes per second (0: no cap).
          --http-fail-rate <p>    Answer HTTP requests 503 with probability p.
          --http-no-ranges        Ignore Range headers (always 200 with the whole file).
          --max-upload <size>     Refuse uploads larger than this with 413. (default: 1GiB)
          --max-connections <n>   Serve at most n connections at once; one more is answered 503 with
                                  Connection: close (over TLS: closed). 0: no cap. (default: 16384)
          --idle-timeout <duration>
                                  Close a kept-alive HTTP connection idle this long between requests. (default: 60s)
          --head-timeout <duration>
                                  A request head (and the TLS handshake, for the first) must arrive whole
                                  within this. (default: 10s)
          --body-timeout <duration>
                                  Close an HTTP connection whose request body sends nothing for this long.
                                  (default: 30s)
          --write-timeout <duration>
                                  Close a connection (HTTP or WebSocket) whose client takes no byte of what is
                                  queued for it for this long; a slow reader is never cut. (default: 30s)
                                  A timeout of 0s means no limit.
          --seed <n>              Seed for chaos draws.
          --duration <duration>   Stop after this long.
          -h, --help              Show help information.

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        // The server process of a `run --processes` run: its own mode (ProfileServer), not a user's option.
        if arguments.contains(where: { $0 == "--\(ProcessControl.profileServer)" }) {
            return await ProfileServer.run(arguments: arguments, output: output)
        }
        let parsed: Arguments
        let configuration: ServerConfiguration
        let loopCount: Int
        let duration: Duration?
        let certificateOutput: String?
        do {
            parsed = try Arguments(
                arguments,
                valueOptions: ["host", "port", "loops", "subprotocol", "cert", "key", "write-certificate", "close-after",
                               "close-probability", "close-code", "close-mode", "echo-delay", "seed", "duration", "files", "upload-dir",
                               "http-drop-after", "http-throttle", "http-fail-rate", "max-upload", "max-connections",
                               "idle-timeout", "head-timeout", "body-timeout", "write-timeout"],
                flagOptions: ["no-compression", "tls", "stop-reading", "http-no-ranges"])
            loopCount = try parsed.integer("loops", in: 1...256) ?? EventLoopGroup.defaultLoopCount
            duration = try parsed.duration("duration")
            certificateOutput = parsed.value("write-certificate")
            var chaos = ChaosOptions()
            chaos.closeAfter = try parsed.duration("close-after")
            chaos.closeProbability = try parsed.fraction("close-probability") ?? 0
            if let code = try parsed.integer("close-code", in: 1000...4999) {
                let closeCode = WebSocketCloseCode(rawValue: UInt16(code))
                guard closeCode.isValidOnWire else { throw UsageError("--close-code: \(code) may not be sent in a close frame") }
                chaos.closeCode = closeCode
            }
            if let mode = parsed.value("close-mode") {
                guard let closeMode = ChaosOptions.CloseMode(rawValue: mode) else {
                    throw UsageError("--close-mode: \"\(mode)\" is not close, drop or reset")
                }
                chaos.closeMode = closeMode
            }
            chaos.echoDelay = try parsed.duration("echo-delay")
            chaos.isReadingStopped = parsed.has("stop-reading")
            chaos.seed = (try parsed.integer("seed", in: 0...Int.max)).map(UInt64.init)
            if (parsed.value("cert") == nil) != (parsed.value("key") == nil) {
                throw UsageError("--cert and --key go together")
            }
            if certificateOutput != nil && !parsed.has("tls") {
                throw UsageError("--write-certificate needs --tls")
            }
            var server = ServerConfiguration(
                host: parsed.value("host") ?? "127.0.0.1", port: try parsed.integer("port", in: 0...65535) ?? 8765,
                subprotocols: parsed.values("subprotocol"), isCompressionEnabled: !parsed.has("no-compression"), chaos: chaos)
            for (option, directory) in [("files", parsed.value("files")), ("upload-dir", parsed.value("upload-dir"))] {
                if let directory, !FileSystem.isDirectory(directory) { throw UsageError("--\(option): \(directory) is not a directory") }
            }
            server.filesDirectory = parsed.value("files")
            server.uploadDirectory = parsed.value("upload-dir")
            // A throttle of 0 means no cap, as the clients' bandwidth caps do (not a division by zero).
            let throttle = try parsed.byteSize("http-throttle").flatMap { $0 > 0 ? $0 : nil }
            server.httpChaos = HTTPChaosOptions(
                dropAfterBytes: try parsed.byteSize("http-drop-after"), throttleBytesPerSecond: throttle,
                errorRate: try parsed.fraction("http-fail-rate") ?? 0, ignoresRanges: parsed.has("http-no-ranges"))
            if let size = try parsed.byteSize("max-upload") { server.maximumUploadSize = size }
            if let count = try parsed.integer("max-connections", in: 0...1_000_000) { server.maximumConnections = count }
            if let timeout = try parsed.timeout("idle-timeout") { server.idleTimeout = timeout }
            if let timeout = try parsed.timeout("head-timeout") {
                server.headTimeout = timeout
                server.handshakeTimeout = timeout ?? .seconds(365 * 24 * 3600)
            }
            if let timeout = try parsed.timeout("body-timeout") { server.bodyTimeout = timeout }
            if let timeout = try parsed.timeout("write-timeout") { server.writeTimeout = timeout }
            configuration = server
        } catch {
            output.printError("Error: \(error)\nSee 'wsload serve --help'.")
            return .usage
        }

        var serverConfiguration = configuration
        do {
            if let certificate = parsed.value("cert"), let key = parsed.value("key") {
                serverConfiguration.tls = try TLSContext(
                    role: .server, configuration: TLSConfiguration(certificateChainFile: certificate, privateKeyFile: key))
            } else if parsed.has("tls") {
                let generated = try SelfSignedCertificate.generate()
                serverConfiguration.tls = try TLSContext(role: .server, configuration: TLSConfiguration(certificateAndKey: generated))
                output.printError("wsload serve: self-signed certificate, SHA-256 \(generated.fingerprint)")
                if let path = certificateOutput {
                    do {
                        try Data(generated.certificatePEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                    } catch {
                        output.printError("Error: cannot write the certificate to \(path): \(error.localizedDescription)")
                        return .ioError
                    }
                }
            }
        } catch {
            output.printError("Error: TLS: \(error)")
            return .noInput
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
        let server: EmbeddedServer
        do {
            server = try await EmbeddedServer.bind(serverConfiguration, on: group)
        } catch {
            output.printError("Error: cannot listen on \(serverConfiguration.host):\(serverConfiguration.port): \(error)")
            return .failure
        }
        output.print("wsload serve: listening on \(server.url) and \(server.httpURL)/ (\(group.loops.count) loops)")
        let reason = await serveUntilStopped(on: group.loops[0], duration: duration) {
            await withTaskExecutorPreference(server.taskExecutor) { await server.run() }
        }
        output.print("wsload serve: stopped \(reason); \(server.statistics.summary)")
        return .success
    }
}

extension Arguments {
    /// A timeout option: nil when absent, `.some(nil)` for 0 (no limit), else the duration.
    func timeout(_ name: String) throws(UsageError) -> Duration?? {
        guard let duration = try duration(name) else { return nil }
        return .some(duration > .zero ? duration : nil)
    }
}

/// Runs `serve` until SIGINT/SIGTERM, `duration`, or until it returns; `alongside` runs beside it and is
/// cancelled with it. Shared by `serve` and `proxy`.
/// - Returns: why it stopped, for the closing line ("after SIGINT", "after 3.0s").
func serveUntilStopped(
    on loop: EventLoop, duration: Duration?, serve: @escaping @Sendable () async -> Void,
    alongside: (@Sendable () async -> Void)? = nil
) async -> String {
    // Signal handlers that cannot be installed leave the server running until its duration or a kill: nil signal.
    let stopSignal = try? await withShutdownSignals(on: loop) { shutdown -> Int32? in
        await withTaskGroup(of: Int32?.self) { tasks in
            tasks.addTask { await serve(); return nil }
            tasks.addTask { await shutdown.wait() }
            if let alongside {
                tasks.addTask {
                    await alongside()
                    // Finishing early must not end the run: wait to be cancelled.
                    try? await Task.sleep(for: .seconds(365 * 24 * 3600))  // cancellation is the expected end
                    return nil
                }
            }
            if let duration {
                tasks.addTask {
                    try? await Task.sleep(for: duration)  // cancelled when the server stops first
                    return nil
                }
            }
            let first = await tasks.next() ?? nil
            tasks.cancelAll()
            return first
        }
    }
    return (stopSignal ?? nil).map { "after \(signalName($0))" } ?? "after \(duration.map { "\($0)" } ?? "stop")"
}

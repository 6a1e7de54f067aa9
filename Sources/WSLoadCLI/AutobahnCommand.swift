import Clients
import Runtime
import WebSocket

/// `wsload autobahn`: the client side of the Autobahn|Testsuite fuzzing-server protocol (echo testee).
enum AutobahnCommand: Subcommand {
    static let name = "autobahn"
    static let summary = "Run the Autobahn|Testsuite client cases against a fuzzing server."
    static let helpText = """
        OVERVIEW: Run the Autobahn|Testsuite client cases against a fuzzing server.

        Asks the server for its case count (/getCaseCount), runs every case (/runCase?case=N&agent=NAME)
        echoing each message back unchanged until the server closes, then asks it to write its reports
        (/updateReports?agent=NAME). The verdicts are in the server's report.

        USAGE: wsload autobahn --server <url> [--agent <name>] [--case-timeout <duration>]

        OPTIONS:
          --server <url>          The fuzzing server, e.g. ws://127.0.0.1:9001.
          --agent <name>          The agent name in the reports. (default: wsload)
          --case-timeout <duration>
                                  Give up on a case after this long. (default: 60s)
          --no-compression        Do not offer permessage-deflate.
          -h, --help              Show help information.

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        let server: WebSocketURL
        let agent: String
        let caseTimeout: Duration
        let isCompressionOffered: Bool
        do {
            let parsed = try Arguments(arguments, valueOptions: ["server", "agent", "case-timeout"], flagOptions: ["no-compression"])
            guard let text = parsed.value("server") else { throw UsageError("--server is required") }
            do {
                server = try WebSocketURL(text.hasSuffix("/") ? String(text.dropLast()) : text)
            } catch {
                throw UsageError("--server: \(error)")
            }
            agent = parsed.value("agent") ?? "wsload"
            guard !agent.isEmpty, agent.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: "&") && $0 != UInt8(ascii: "#") })
            else { throw UsageError("--agent: \"\(agent)\" must be printable ASCII without spaces, & or #") }
            caseTimeout = try parsed.duration("case-timeout") ?? .seconds(60)
            isCompressionOffered = !parsed.has("no-compression")
        } catch {
            output.printError("Error: \(error)\nSee 'wsload autobahn --help'.")
            return .usage
        }

        let group: EventLoopGroup
        do {
            group = try EventLoopGroup(loopCount: 1)
        } catch {
            output.printError("Error: cannot start an event loop: \(error)")
            return .failure
        }
        defer { group.shutdown() }
        let loop = group.loops[0]
        let base = server.target == "/" ? "" : server.target
        func url(_ path: String) -> WebSocketURL {
            var url = server
            url.target = base + path
            return url
        }
        var configuration = WebSocketClientConfiguration(compression: isCompressionOffered ? PerMessageDeflateOffer() : nil)
        configuration.closeTimeout = .seconds(2)

        let counting = await session(url("/getCaseCount"), configuration: configuration, loop: loop, timeout: caseTimeout, isEcho: false)
        guard let countText = counting.firstText, let count = Int(countText), count >= 0 else {
            output.printError("Error: \(server) did not answer /getCaseCount: \(counting.failure ?? "no count received")")
            return .failure
        }
        output.print("autobahn: \(count) cases on \(server) as agent \(agent)")
        for number in 1...max(1, count) where count > 0 {
            let result = await session(url("/runCase?case=\(number)&agent=\(agent)"), configuration: configuration, loop: loop,
                                       timeout: caseTimeout, isEcho: true)
            var line = "case \(number)/\(count): \(result.echoed) echoed, closed \(result.closeCode.map { String($0.rawValue) } ?? "-")"
            if let failure = result.failure { line += " (\(failure))" }
            output.print(line)
        }
        let report = await session(url("/updateReports?agent=\(agent)"), configuration: configuration, loop: loop,
                                   timeout: caseTimeout, isEcho: false)
        if let failure = report.failure, report.closeCode == nil {
            output.printError("Error: /updateReports failed: \(failure)")
            return .failure
        }
        output.print("autobahn: done; reports updated for \(agent)")
        return .success
    }

    private struct Outcome: Sendable {
        var firstText: String?
        var echoed = 0
        var closeCode: WebSocketCloseCode?
        var failure: String?
    }

    /// One connection: echo every message (or just collect the first text), bounded by `timeout`.
    ///
    /// The driver alternates `receive()` and `send`, as an Autobahn testee's synchronous `onMessage` does: the
    /// next frame is parsed only after the echo of the last message was written, so a message that precedes a
    /// protocol violation is echoed before the close frame that reports it (strict, Autobahn 3.2, 4.x, 5.15).
    private static func session(
        _ url: WebSocketURL, configuration: WebSocketClientConfiguration, loop: EventLoop, timeout: Duration, isEcho: Bool
    ) async -> Outcome {
        let manager = WebSocketManager(url: url, configuration: configuration, loop: loop)
        return await withTaskGroup(of: Outcome?.self) { tasks in
            tasks.addTask(executorPreference: loop.taskExecutor) {
                var outcome = Outcome()
                do {
                    try await manager.connect()
                    while true {
                        let message = try await manager.receive()
                        if case .text(let text) = message, outcome.firstText == nil { outcome.firstText = text }
                        guard isEcho else { continue }
                        try await manager.send(message)
                        outcome.echoed += 1
                    }
                } catch {
                    // The normal end of a case is the peer's close (not_connected after it); anything else is reported.
                    let failure = error as? WebSocketClientError
                    if failure?.code != .notConnected { outcome.failure = failure?.description ?? "\(error)" }
                }
                outcome.closeCode = await manager.closeCode
                if outcome.closeCode == nil, outcome.failure == nil { outcome.failure = "the connection did not close" }
                return outcome
            }
            tasks.addTask(executorPreference: loop.taskExecutor) {
                guard (try? await loop.sleep(for: timeout)) != nil else { return nil }  // cancelled: the case finished first
                await manager.abort(reason: "case timeout")
                return nil
            }
            var outcome = Outcome(failure: "no result")
            while let result = await tasks.next() {
                if let result {
                    outcome = result
                    tasks.cancelAll()
                }
            }
            return outcome
        }
    }
}

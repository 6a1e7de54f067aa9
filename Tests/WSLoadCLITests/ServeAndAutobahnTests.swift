import Clients
import EmbeddedServer
import Foundation
import Runtime
import TestSupport
import Testing
import WebSocket
import WSLoadCLI

/// The first line `child` printed that contains `text`, waiting up to `limit` for it; nil if none came.
private func outputLine(of child: ChildProcess, containing text: String, limit: Duration = .seconds(20)) async throws -> String? {
    let deadline = ContinuousClock.now + limit
    while true {
        if let line = child.output.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
        guard child.process.isRunning && ContinuousClock.now < deadline else { return nil }
        try await Task.sleep(for: .milliseconds(10))
    }
}

@Suite("wsload serve and autobahn", .serialized, .timeLimit(.minutes(2)))
struct ServeAndAutobahnTests {
    @Test("serve echoes, applies a chaos close code after --close-after, and prints counts when stopped")
    func serve() async throws {
        // A child process stopped by SIGINT once the close arrived: no --duration race, and 4 s for the echo to
        // come back before the chaos close, however busy the box.
        let serve = try await ServeChild(["--close-after", "4s", "--close-code", "4003"])
        defer { serve.child.stop() }
        try await withLoopGroup(loopCount: 1) { group in
            let manager = WebSocketManager(url: try WebSocketURL(serve.url), loop: group.loops[0])
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask(executorPreference: group.loops[0].taskExecutor) { await manager.run() }
                var names: [String] = []
                var isSendTooLate = false
                for await event in manager.events() {
                    switch event {
                    case .connected:
                        do {
                            try await manager.send(text: "ping through serve")
                        } catch let error as WebSocketClientError where error.code == .notConnected {
                            // Seen on one CPU shared with a busy loop: this task ran more than 4 s after the
                            // upgrade, and the chaos close had already ended the connection.
                            isSendTooLate = true
                        }
                    case .text(let text): names.append(text)
                    case .disconnected(let code, _): names.append("closed \(code.rawValue)")
                    default: break
                    }
                }
                #expect(names == (isSendTooLate ? [] : ["ping through serve"]) + ["closed 4003"], "\(names)")
                while try await tasks.next() != nil {}
                let output = try await serve.stop()
                #expect(output.contains("listening on ws://127.0.0.1:"))
                #expect(output.contains("upgraded 1"), "\(output)")
                #expect(output.contains(isSendTooLate ? "echoed 0" : "echoed 1"), "\(output)")
                #expect(output.contains("chaos closes 1"), "\(output)")
            }
        }
    }

    @Test("serve --tls generates a certificate, writes it where asked, and a client trusting it connects")
    func serveTLS() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-serve-\(getpid()).pem").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let serve = try await ServeChild(["--tls", "--write-certificate", path])
        defer { serve.child.stop() }
        #expect(serve.url.hasPrefix("wss://127.0.0.1:"), "\(serve.url)")
        try await withLoopGroup(loopCount: 1) { group in
            let tls = try TLSContext(role: .client, configuration: TLSConfiguration(caFile: path))
            let manager = WebSocketManager(url: try WebSocketURL(serve.url), configuration: .init(tls: tls), loop: group.loops[0])
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask(executorPreference: group.loops[0].taskExecutor) { await manager.run() }
                var isConnected = false
                for await event in manager.events() {
                    if case .connected = event {
                        isConnected = true
                        await manager.disconnect()
                    }
                    if case .error(let error) = event { Issue.record("\(error)") }
                }
                #expect(isConnected)
                while try await tasks.next() != nil {}
            }
        }
        try await serve.stop()
        #expect(serve.child.errors.contains("self-signed certificate, SHA-256"), "\(serve.child.errors)")
    }

    @Test("serve --duration stops by itself, exits 0 and says so")
    func serveDuration() async throws {
        let start = ContinuousClock.now
        let result = try await ChildProcess.run([wsloadExecutable, "serve", "--port", "0", "--loops", "1", "--duration", "1s"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("stopped after 1"), "\(result.output)")
        #expect(ContinuousClock.now - start >= .milliseconds(900), "it stopped before its --duration")
    }

    @Test("serve rejects bad options with exit 64, naming the option", arguments: [
        (["--port", "70000"], "--port"), (["--close-after", "10x"], "not a duration"), (["--close-code", "1005"], "--close-code"),
        (["--close-mode", "explode"], "--close-mode"), (["--cert", "a.pem"], "--cert and --key"), (["--frobnicate"], "unknown option"),
        (["--close-probability", "2"], "probability"), (["--write-certificate", "x.pem"], "needs --tls"),
    ])
    func serveUsageErrors(arguments: [String], message: String) async {
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["serve"] + arguments, output: captured.commandOutput)
        #expect(code == .usage)
        #expect(captured.error.contains(message), "\(captured.error)")
    }

    @Test("autobahn runs every case of a fuzzing server, echoing, then updates reports")
    func autobahn() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers/websockets_server.py").path
        let server = try ChildProcess("/usr/bin/env", ["python3", script], holdsInput: true)
        defer { server.stop() }
        let listening = try await outputLine(of: server, containing: "listening")
        let port = try #require(listening.flatMap { $0.split(separator: " ").last }, "the fuzzing server did not start: \(server.errors)")
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["autobahn", "--server", "ws://127.0.0.1:\(port)", "--agent", "wsload-test"],
                                     output: captured.commandOutput)
        #expect(code == .success, "\(captured.error)")
        #expect(captured.output.contains("autobahn: 3 cases"))
        #expect(captured.output.contains("case 3/3: 4 echoed, closed 1000"))
        for number in 1...3 {
            #expect(try await outputLine(of: server, containing: "case \(number) ") == "case \(number) ok agent=wsload-test")
        }
        #expect(try await outputLine(of: server, containing: "reports") == "reports wsload-test")
    }

    @Test("autobahn against a strict fuzzing server: every case OK, none NON-STRICT or FAILED (3.2, 4.x, 5.x, 6.4.x)")
    func autobahnStrict() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers/autobahn_strict.py").path
        // A generous patience: a fail-fast client answers an invalid chop in milliseconds, a late one never does.
        let server = try ChildProcess("/usr/bin/env", ["python3", script, "--patience", "5"], holdsInput: true)
        defer { server.stop() }
        let listening = try await outputLine(of: server, containing: "listening")
        let port = try #require(listening.flatMap { $0.split(separator: " ").last }, "the fuzzing server did not start: \(server.errors)")
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["autobahn", "--server", "ws://127.0.0.1:\(port)", "--agent", "strict",
                                                 "--case-timeout", "30s"], output: captured.commandOutput)
        #expect(code == .success, "\(captured.error)")
        let summary = try await outputLine(of: server, containing: "reports strict")
        #expect(summary == "reports strict cases=16 ok=16 non-strict=0 failed=0", "\(captured.output)")
    }

    @Test("autobahn without a reachable server fails with exit 1; without --server exits 64")
    func autobahnFailures() async {
        let captured = CapturedOutput()
        #expect(await WSLoad.main(arguments: ["autobahn", "--server", "ws://127.0.0.1:1"], output: captured.commandOutput) == .failure)
        #expect(captured.error.contains("getCaseCount"))
        #expect(await WSLoad.main(arguments: ["autobahn"], output: CapturedOutput().commandOutput) == .usage)
    }
}

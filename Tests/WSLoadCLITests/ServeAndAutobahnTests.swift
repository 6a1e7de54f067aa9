import Clients
import EmbeddedServer
import Foundation
import Runtime
import TestSupport
import Testing
import WebSocket
import WSLoadCLI

/// Runs `wsload serve` in-process for `duration` on a free port, while `body` talks to it.
private func withServe(
    _ extra: [String], duration: String = "3s", _ body: @escaping @Sendable (String) async throws -> Void
) async throws -> (code: ExitCode, output: String, error: String) {
    let captured = CapturedOutput()
    // Pick a free port first: serve prints its URL, but we need it before the run returns.
    let group = try EventLoopGroup(loopCount: 1)
    let loop = group.loops[0]
    let port = try await loop.submit {
        let listener = try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop)
        defer { listener.close() }
        return listener.localAddress.port
    }
    group.shutdown()
    async let code = WSLoad.main(arguments: ["serve", "--port", String(port), "--loops", "1", "--duration", duration] + extra,
                                 output: captured.commandOutput)
    while !captured.output.contains("listening on") && !captured.error.contains("Error") {
        try await Task.sleep(for: .milliseconds(10))
    }
    let scheme = extra.contains("--tls") ? "wss" : "ws"
    try await body("\(scheme)://127.0.0.1:\(port)/")
    return (await code, captured.output, captured.error)
}

@Suite("wsload serve and autobahn", .serialized)
struct ServeAndAutobahnTests {
    @Test("serve echoes, applies chaos close codes, stops after --duration and prints counts")
    func serve() async throws {
        let result = try await withServe(["--close-after", "2s", "--close-code", "4003"], duration: "6s") { url in
            try await withLoopGroup(loopCount: 1) { group in
                let manager = WebSocketManager(url: try WebSocketURL(url), loop: group.loops[0])
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    tasks.addTask(executorPreference: group.loops[0].taskExecutor) { await manager.run() }
                    var names: [String] = []
                    for await event in manager.events() {
                        switch event {
                        case .connected: try await manager.send(text: "ping through serve")
                        case .text(let text): names.append(text)
                        case .disconnected(let code, _): names.append("closed \(code.rawValue)")
                        default: break
                        }
                    }
                    #expect(names == ["ping through serve", "closed 4003"])
                    while try await tasks.next() != nil {}
                }
            }
        }
        #expect(result.code == .success)
        #expect(result.output.contains("listening on ws://127.0.0.1:"))
        #expect(result.output.contains("upgraded 1"))
        #expect(result.output.contains("echoed 1"))
        #expect(result.output.contains("chaos closes 1"))
    }

    @Test("serve --tls generates a certificate, writes it where asked, and a client trusting it connects")
    func serveTLS() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-serve-\(getpid()).pem").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try await withServe(["--tls", "--write-certificate", path]) { url in
            try await withLoopGroup(loopCount: 1) { group in
                let tls = try TLSContext(role: .client, configuration: TLSConfiguration(caFile: path))
                let manager = WebSocketManager(url: try WebSocketURL(url), configuration: .init(tls: tls), loop: group.loops[0])
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    tasks.addTask(executorPreference: group.loops[0].taskExecutor) { await manager.run() }
                    for await event in manager.events() {
                        if case .connected = event { await manager.disconnect() }
                        if case .error(let error) = event { Issue.record("\(error)") }
                    }
                    while try await tasks.next() != nil {}
                }
            }
        }
        #expect(result.code == .success)
        #expect(result.error.contains("self-signed certificate, SHA-256"))
        #expect(result.output.contains("listening on wss://"))
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
        let server = try BackgroundProcess(["python3", script])
        defer { server.stop() }
        guard let line = server.waitForLine(containing: "listening"), let port = line.split(separator: " ").last else {
            Issue.record("the fuzzing server did not start")
            return
        }
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: ["autobahn", "--server", "ws://127.0.0.1:\(port)", "--agent", "wsload-test"],
                                     output: captured.commandOutput)
        #expect(code == .success, "\(captured.error)")
        #expect(captured.output.contains("autobahn: 3 cases"))
        #expect(captured.output.contains("case 3/3: 4 echoed, closed 1000"))
        for number in 1...3 { #expect(server.waitForLine(containing: "case \(number)")?.contains("case \(number) ok agent=wsload-test") == true) }
        #expect(server.waitForLine(containing: "reports") == "reports wsload-test")
    }

    @Test("autobahn without a reachable server fails with exit 1; without --server exits 64")
    func autobahnFailures() async {
        let captured = CapturedOutput()
        #expect(await WSLoad.main(arguments: ["autobahn", "--server", "ws://127.0.0.1:1"], output: captured.commandOutput) == .failure)
        #expect(captured.error.contains("getCaseCount"))
        #expect(await WSLoad.main(arguments: ["autobahn"], output: CapturedOutput().commandOutput) == .usage)
    }
}

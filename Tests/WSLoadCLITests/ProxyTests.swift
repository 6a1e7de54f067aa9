import Clients
import EmbeddedServer
import Foundation
import Runtime
import TestSupport
import Testing
import WebSocket
import WSLoadCLI

/// The `wsload` executable built beside this test bundle (`.build/<config>/wsload`).
private let wsloadPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("wsload").path

/// A real `wsload proxy` process listening on a free loopback port; killed by ``stop()``.
private final class ProxyProcess: Sendable {
    let process: BackgroundProcess
    let port: Int
    /// Taken before the process was started: its timeline cannot have begun any earlier.
    let spawnedAt: ContinuousClock.Instant

    private init(process: BackgroundProcess, port: Int, spawnedAt: ContinuousClock.Instant) {
        self.process = process
        self.port = port
        self.spawnedAt = spawnedAt
    }

    static func start(upstream: String, _ options: [String]) async throws -> ProxyProcess {
        let spawnedAt = ContinuousClock.now
        let process = try BackgroundProcess([wsloadPath, "proxy", "--upstream", upstream, "--listen", "127.0.0.1:0", "--loops", "1"] + options)
        let proxy = ProxyProcess(process: process, port: 0, spawnedAt: spawnedAt)
        // "wsload proxy: listening on 127.0.0.1:PORT, forwarding to …"
        guard let line = await proxy.line(containing: "listening on"),
              let address = line.split(separator: " ").first(where: { $0.hasPrefix("127.0.0.1:") }),
              let port = Int(address.dropFirst("127.0.0.1:".count).prefix { $0.isNumber })
        else {
            process.stop()
            throw TestProcess.Failure(description: "wsload proxy did not start")
        }
        return ProxyProcess(process: process, port: port, spawnedAt: spawnedAt)
    }

    /// The next line of its output containing `text`, read on a thread of its own (the read blocks); nil if
    /// the output ended, or nothing came within `limit` (the process is killed then).
    func line(containing text: String, limit: Duration = .seconds(30)) async -> String? {
        let process = process
        let done = Box(false)
        let watchdog = Thread {
            let deadline = ContinuousClock.now + limit
            while !done.value && ContinuousClock.now < deadline { usleep(20_000) }
            if !done.value { process.stop() }
        }
        watchdog.start()
        return await withCheckedContinuation { continuation in
            Thread {
                let line = process.waitForLine(containing: text)
                done.value = true
                continuation.resume(returning: line)
            }.start()
        }
    }

    func stop() { process.stop() }
}

/// A value set from one task and read from another.
private final class Box<Value: Sendable>: Sendable {
    private let storage: Lock<Value>
    init(_ value: Value) { storage = Lock(value) }
    var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
    func modify(_ body: (inout Value) -> Void) { storage.withLock { body(&$0) } }
}

/// Serves an embedded echo server on a one-loop group while `body` runs with it and the loop.
private func withUpstream(_ body: @Sendable (EmbeddedServer, EventLoop) async throws -> Void) async throws {
    try await withLoopGroup(loopCount: 1) { group in
        let server = try await EmbeddedServer.bind(ServerConfiguration(), on: group)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask(executorPreference: server.taskExecutor) { await server.run() }
            try await body(server, group.loops[0])
            tasks.cancelAll()
            try await tasks.waitForAll()
        }
    }
}

/// A client's event stream, read by one task at a time; every event read is named in `names`.
private final class EventFeed: @unchecked Sendable {
    private var iterator: AsyncStream<WebSocketManager.Event>.Iterator
    let names = Box<[String]>([])

    init(_ stream: AsyncStream<WebSocketManager.Event>) { iterator = stream.makeAsyncIterator() }

    func next() async -> WebSocketManager.Event? {
        let event = await iterator.next()
        if let event { names.modify { $0.append(name(event)) } }
        return event
    }

    /// Sends `text` and returns the name of the next event (the echo, if all is well), or nil when the stream ended.
    func echo(_ text: String, _ manager: WebSocketManager) async throws -> String? {
        try await manager.send(text: text)
        return await next().map(name)
    }
}

/// A WebSocket client through `port`: once connected, `script` drives it on the loop with its events;
/// returns the names of every event it saw, in order.
private func session(
    port: Int, loop: EventLoop, _ script: @escaping @Sendable (WebSocketManager, EventFeed) async throws -> Void
) async throws -> [String] {
    let manager = WebSocketManager(url: try WebSocketURL("ws://127.0.0.1:\(port)/"), loop: loop)
    let feed = EventFeed(manager.events())
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask(executorPreference: loop.taskExecutor) { await manager.run() }
        tasks.addTask(executorPreference: loop.taskExecutor) {
            guard case .connected? = await feed.next() else { return }
            try await script(manager, feed)
            while await feed.next() != nil {}
        }
        while try await tasks.next() != nil {}
    }
    return feed.names.value
}

private func name(_ event: WebSocketManager.Event) -> String {
    switch event {
    case .connected: "connected"
    case .text(let text): "text \(text)"
    case .data(let data): "data \(data.count)"
    case .disconnected(let code, _): "closed \(code.rawValue)"
    case .error(let error): "error \(error.code.rawValue)"
    }
}


@Suite("wsload proxy", .serialized, .timeLimit(.minutes(2)))
struct ProxyCommandTests {
    @Test("usage errors exit 64 and name the problem")
    func usage() async {
        #expect(await runCLI("proxy").error.contains("--upstream is required"))
        let close = await runCLI("proxy", "--upstream", "127.0.0.1:1", "--chaos", #"[{"at": "1s", "action": "close", "code": 1012}]"#)
        #expect(close.code == .usage && close.error.contains("close with a code needs WebSocket framing"), "\(close.error)")
        let bad = await runCLI("proxy", "--upstream", "127.0.0.1:1", "--chaos", #"[{"at": "1s", "action": "stall"}]"#)
        #expect(bad.code == .usage && bad.error.contains("chaos[0].for: is required for stall"), "\(bad.error)")
        #expect(await runCLI("proxy", "--upstream", "host-without-port").code == .usage)
    }

    @Test("forwards a WebSocket to the embedded server (the echo comes back), kills it on the timeline, prints what it hit")
    func forwardAndKill() async throws {
        let captured = CapturedOutput()
        try await withUpstream { server, loop in
            let port = try await loop.submit {
                let listener = try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop)
                defer { listener.close() }
                return listener.localAddress.port
            }
            async let code = WSLoad.main(arguments: [
                "proxy", "--upstream", server.url, "--listen", "127.0.0.1:\(port)", "--loops", "1", "--duration", "6s",
                "--chaos", #"[{"at": "4s", "action": "kill"}]"#,
            ], output: captured.commandOutput)
            try await waitUntil(limit: .seconds(20)) { captured.output.contains("listening on") }
            try #require(captured.output.contains("listening on"), "\(captured.error)")
            let names = try await session(port: port, loop: loop) { manager, events in
                let reply = try await events.echo("through the proxy", manager)
                #expect(reply == "text through the proxy")
            }
            #expect(names == ["connected", "text through the proxy", "closed 1006"], "\(names)")
            #expect(await code == .success)
        }
        #expect(captured.output.contains("kill 100% at 4."), "\(captured.output)")
        #expect(captured.output.contains(": 1 connections"), "\(captured.output)")
        #expect(captured.output.contains("accepted 1"), "\(captured.output)")
    }

    @Test("--delay: the upgrade and a round trip through the proxy each take at least the delay each way")
    func delay() async throws {
        try await withUpstream { server, loop in
            let proxy = try await ProxyProcess.start(upstream: server.url, ["--delay", "300ms"])
            defer { proxy.stop() }
            let started = ContinuousClock.now
            let roundTrip = Box<Duration?>(nil)
            let names = try await session(port: proxy.port, loop: loop) { manager, events in
                // The upgrade request waited going up, the response coming down.
                #expect(ContinuousClock.now - started >= .milliseconds(600), "connected after \(ContinuousClock.now - started)")
                let sent = ContinuousClock.now
                let reply = try await events.echo("slowly", manager)
                #expect(reply == "text slowly")
                roundTrip.value = ContinuousClock.now - sent
                await manager.disconnect()
            }
            #expect(names == ["connected", "text slowly", "closed 1000"], "\(names)")
            let measured = try #require(roundTrip.value)
            #expect(measured >= .milliseconds(600), "a round trip through a 300 ms delay took \(measured)")
        }
    }

    @Test("--throttle: a transfer through the proxy takes at least its size over the rate, even after an idle pause")
    func throttle() async throws {
        let rate = 300_000
        let size = 300_000
        try await withUpstream { server, loop in
            let proxy = try await ProxyProcess.start(upstream: server.url, ["--throttle", String(rate)])
            defer { proxy.stop() }
            let took = Box<Duration?>(nil)
            var generator = SystemRandomNumberGenerator()
            let payload = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }  // incompressible
            let names = try await session(port: proxy.port, loop: loop) { manager, events in
                // Idle first: a throttle that banked this time would let the transfer through in a burst.
                try await Task.sleep(for: .seconds(1))
                let sent = ContinuousClock.now
                try await manager.send(data: payload)
                guard case .data(let echoed)? = await events.next() else { Issue.record("no echo"); return }
                took.value = ContinuousClock.now - sent
                #expect(echoed == payload)
                await manager.disconnect()
            }
            #expect(names == ["connected", "data \(size)", "closed 1000"], "\(names)")
            // Each way the proxy forwards a chunk (64 KiB at most) and then waits for its share of the rate:
            // all but the last chunk's worth cannot pass sooner.
            let bound = Duration.seconds(Double(size - 65_536) / Double(rate))
            let measured = try #require(took.value)
            #expect(measured >= bound, "\(size) bytes at \(rate) B/s took \(measured)")
        }
    }

    @Test("chaos stall on the proxy's timeline holds what the connections send until it ends")
    func stall() async throws {
        let at = Duration.seconds(4)
        let stallFor = Duration.seconds(3)
        try await withUpstream { server, loop in
            let proxy = try await ProxyProcess.start(upstream: server.url, ["--chaos", #"[{"at": "4s", "action": "stall", "for": "3s"}]"#])
            defer { proxy.stop() }
            let echoedAt = Box<ContinuousClock.Instant?>(nil)
            let names = try await session(port: proxy.port, loop: loop) { manager, events in
                let reply = try await events.echo("before", manager)
                #expect(reply == "text before")
                let line = try #require(await proxy.line(containing: "stall"), "the proxy printed the stall")
                #expect(line.hasSuffix(": 1 connections"), "\(line)")
                let during = try await events.echo("during", manager)
                #expect(during == "text during")
                echoedAt.value = .now
                await manager.disconnect()
            }
            #expect(names == ["connected", "text before", "text during", "closed 1000"], "\(names)")
            // The stall began no sooner than `at` after the process started, and held the message until it ended
            // (or the message came after it ended): either way its echo cannot be earlier.
            let echoed = try #require(echoedAt.value)
            #expect(echoed - proxy.spawnedAt >= at + stallFor, "echoed \(echoed - proxy.spawnedAt) after the proxy started")
        }
    }

    @Test("chaos restart on the proxy's timeline drops the connections and refuses new ones for its `for`, then forwards again")
    func restart() async throws {
        let at = Duration.seconds(4)
        let downFor = Duration.seconds(3)
        try await withUpstream { server, loop in
            let proxy = try await ProxyProcess.start(upstream: server.url, ["--chaos", #"[{"at": "4s", "action": "restart", "for": "3s"}]"#])
            defer { proxy.stop() }
            let names = try await session(port: proxy.port, loop: loop) { manager, events in
                let reply = try await events.echo("before", manager)
                #expect(reply == "text before")
            }
            #expect(names == ["connected", "text before", "closed 1006"], "the restart dropped the connection: \(names)")
            let line = try #require(await proxy.line(containing: "restart"), "the proxy printed the restart")
            #expect(line.hasSuffix(": 1 connections"), "\(line)")
            // The restart began before the client saw its connection drop, so before the first probe; it ends no
            // sooner than `at` + `for` after the process started. A probe sent before then is refused.
            let probes = try #require(try await probeUntilAccepted(port: proxy.port, on: loop), "the proxy listened again after its restart")
            #expect(probes.accepted - proxy.spawnedAt >= at + downFor, "listening again \(probes.accepted - proxy.spawnedAt) after the proxy started")
            if probes.firstStart - proxy.spawnedAt < at + downFor {
                #expect(probes.refused > 0, "the first probe went out while the proxy was down, and was refused")
            }
            let after = try await session(port: proxy.port, loop: loop) { manager, events in
                let reply = try await events.echo("after", manager)
                #expect(reply == "text after")
                await manager.disconnect()
            }
            #expect(after == ["connected", "text after", "closed 1000"], "\(after)")
        }
    }
}

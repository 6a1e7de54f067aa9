import EmbeddedServer
import Foundation
import Runtime
import TestSupport
import Testing

/// Runs an in-process embedded server with `configuration` on one loop of its own for the body's duration.
private func withEmbeddedServer<T: Sendable>(
    _ configuration: ServerConfiguration, _ body: (EmbeddedServer, EventLoop) async throws -> T
) async throws -> T {
    try await withLoopGroup(loopCount: 2) { group in
        let servers = try EventLoopGroup(loopCount: 1)
        defer { _ = servers.shutdown() }
        let server = try await EmbeddedServer.bind(configuration, on: servers)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask(executorPreference: server.taskExecutor) { await server.run() }
            defer { tasks.cancelAll() }
            return try await body(server, group.loops[0])
        }
    }
}

/// Runs Tests/Peers/hostile_serve.py with `arguments` off the cooperative pool; returns its `result` line (nil if
/// it printed none within 90 s: it is then killed).
private func hostileClient(_ arguments: [String]) async throws -> String? {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Peers/hostile_serve.py").path
    let process = try BackgroundProcess(["python3", path] + arguments)
    defer { process.stop() }
    return await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: process.waitForLine(containing: "result", timeout: .seconds(90))) }.start()
    }
}

private func field(_ name: String, in line: String?) -> Int? {
    line?.split(separator: " ").first { $0.hasPrefix(name + "=") }.flatMap { Int($0.dropFirst(name.count + 1)) }
}

/// A small write queue (2 KiB high-water mark), so a 512 KiB body already backs up into it: what a slow
/// download of a big file does with the default 1 MiB queue.
private func stallConfiguration(writeTimeout: Duration) -> ServerConfiguration {
    var configuration = ServerConfiguration()
    configuration.writeTimeout = writeTimeout
    configuration.tcpOptions = TCPOptions(writeHighWaterMark: 2048, writeLowWaterMark: 1024)
    return configuration
}

/// The write timeout is an inactivity limit: a client that reads slowly gets everything; one that stops reading
/// (HTTP or an upgraded WebSocket) is closed, counted.
@Suite("Hostile readers: write stalls against the embedded server", .serialized, .timeLimit(.minutes(4)))
struct HostileWriteStallTests {
    @Test("a client reading /bytes at 24 KiB/s with a 2 s write timeout gets its whole 512 KiB body (it was cut after 2 s)")
    func slowReaderGetsEverything() async throws {
        try await withEmbeddedServer(stallConfiguration(writeTimeout: .seconds(2))) { server, _ in
            // 100–200 KB go to the kernel at once; the rest waits in the write queue, for ~15 s.
            let size = 512 * 1024
            let line = try await hostileClient(["slow-read", String(server.localAddress.port), "/bytes/\(size)", "24576"])
            let received = try #require(field("received", in: line), "\(line ?? "no result")")
            #expect(received > size + 100, "the whole body and its head: \(line ?? "")")
            #expect(server.statistics.timeouts.load(ordering: .relaxed) == 0)
        }
    }

    @Test("a WebSocket client that sends and never reads an echo is closed by the write timeout, counted (it held its slot forever)")
    func webSocketNonReaderIsClosed() async throws {
        try await withEmbeddedServer(stallConfiguration(writeTimeout: .seconds(1))) { server, loop in
            let line = try await hostileClient(["ws-no-read", String(server.localAddress.port), "20"])
            #expect(field("closed", in: line) == 1, "\(line ?? "no result")")
            #expect(server.statistics.timeouts.load(ordering: .relaxed) == 1)
            #expect(server.statistics.messagesEchoed.load(ordering: .relaxed) > 0)
            // The server goes on serving.
            let peer = try await RawPeer.connect(port: server.localAddress.port, on: loop,
                                                 sending: "GET /bytes/16 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            try await peer.read()
            peer.close()
            #expect(peer.statuses == [200])
        }
    }

    @Test("an idle upgraded WebSocket session is never cut by the write timeout")
    func idleWebSocketStays() async throws {
        try await withEmbeddedServer(stallConfiguration(writeTimeout: .milliseconds(200))) { server, loop in
            let peer = try await RawPeer.connect(port: server.localAddress.port, on: loop, sending:
                "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            #expect(try await peer.read(within: .seconds(2)) == false, "an idle session was closed: \(peer.text.prefix(200))")
            peer.close()
            #expect(peer.statuses == [101])
            #expect(server.statistics.timeouts.load(ordering: .relaxed) == 0)
        }
    }

    @Test("a first head that never comes is closed by the handshake timeout and counted (it was closed uncounted)")
    func firstHeadTimeoutCounted() async throws {
        var configuration = ServerConfiguration(handshakeTimeout: .milliseconds(300))
        configuration.writeTimeout = nil
        try await withEmbeddedServer(configuration) { server, loop in
            let peer = try await RawPeer.connect(port: server.localAddress.port, on: loop)
            #expect(try await peer.read(within: .seconds(20)), "a silent connection was not closed")
            peer.close()
            try await waitUntil { server.statistics.timeouts.load(ordering: .relaxed) == 1 }
            #expect(server.statistics.timeouts.load(ordering: .relaxed) == 1)
        }
    }

    @Test("an upgrade request with Content-Length or Transfer-Encoding is refused with 400 (it was upgraded)")
    func upgradeWithBodyRefused() async throws {
        try await withEmbeddedServer(ServerConfiguration()) { server, loop in
            for framing in ["Content-Length: 5", "Transfer-Encoding: chunked"] {
                let peer = try await RawPeer.connect(port: server.localAddress.port, on: loop, sending:
                    "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\(framing)\r\n\r\n")
                #expect(try await peer.read(within: .seconds(20)), "the connection stayed open")
                peer.close()
                #expect(peer.statuses == [400], "\(framing): \(peer.text.prefix(200))")
            }
            #expect(server.statistics.upgraded.load(ordering: .relaxed) == 0)
        }
    }
}

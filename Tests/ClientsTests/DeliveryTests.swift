import Clients
import EmbeddedServer
import Runtime
import TestSupport
import Testing
import WebSocket

/// What a handler saw: the messages in order, and how many of them it was handed with no task running (in the
/// transport's read callback on the loop thread, the parked task not woken).
private final class Seen: @unchecked Sendable {
    var texts: [String] = []
    var inReadCallback = 0

    func record(_ message: WebSocketConnection.Message) {
        if case .text(let text) = message { texts.append(text) } else { texts.append("binary \(message)") }
        if withUnsafeCurrentTask(body: { $0 == nil }) { inReadCallback += 1 }
    }
}

/// `receiveEach`: messages handed to a plain handler where they are read, the rest on receive()'s path.
@Suite("WebSocketManager receiveEach: messages where they are read", .serialized, .timeLimit(.minutes(2)))
struct DeliveryTests {
    /// Echo `count` messages through receiveEach: the handler sends the next as each reply comes, and stops at the last.
    private func echo(_ count: Int, url: String, configuration: WebSocketClientConfiguration = .init(), loop: EventLoop)
        async throws -> (seen: Seen, manager: WebSocketManager)
    {
        let manager = WebSocketManager(url: try WebSocketURL(url), configuration: configuration, loop: loop)
        let seen = Seen()
        try await onLoop(loop) {
            try await manager.connect()
            try await manager.send(text: "m0")
            try await manager.receiveEach { manager, message throws(WebSocketClientError) in
                seen.record(message)
                guard seen.texts.count < count else { return false }
                _ = try manager.sendIfReady(.text("m\(seen.texts.count)"))  // queued if not: the read path flushes it
                return true
            }
            // The stretch ended cleanly: the connection goes on as before.
            try await manager.send(text: "after")
            #expect(try await manager.receive() == .text("after"))
            await manager.disconnect()
        }
        return (seen, manager)
    }

    /// Connects and records every message through receiveEach until the connection ends: what was seen, and the error
    /// that ended it (nil if receiveEach returned, which a handler that never stops should not let happen).
    private func receiveAll(_ manager: WebSocketManager, on loop: EventLoop) async throws -> (Seen, WebSocketClientError?) {
        let seen = Seen()
        let error = try await onLoop(loop) { () async throws -> WebSocketClientError? in
            try await manager.connect()
            do throws(WebSocketClientError) {
                try await manager.receiveEach { _, message throws(WebSocketClientError) in
                    seen.record(message)
                    return true
                }
                return nil
            } catch {
                return error
            }
        }
        return (seen, error)
    }

    @Test("over TCP: every reply in order, handed over in the read callback (the task not woken), the connection usable after")
    func tcpEcho() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                let (seen, manager) = try await echo(1000, url: server.url, loop: group.loops[0])
                #expect(seen.texts == (0..<1000).map { "m\($0)" })
                // The first reply comes through receive() (the task reads it); the rest where they are read.
                #expect(seen.inReadCallback >= 990, "\(seen.inReadCallback) of 1000 in the read callback")
                var last: WebSocketManager.Event?
                for await event in manager.events() { last = event }
                guard case .disconnected(let code, _)? = last else { Issue.record("\(String(describing: last))"); return }
                #expect(code == .normalClosure)
            }
        }
    }

    @Test("over TLS (a record is decrypted by the reading task): the same messages, each read by the task")
    func tlsEcho() async throws {
        let certificates = try TestCertificates.shared.get()
        try await withLoopGroup(loopCount: 2) { group in
            let serverTLS = try TLSContext(role: .server, configuration: TLSConfiguration(
                certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
            try await withEmbeddedServer(ServerConfiguration(tls: serverTLS), on: group) { server in
                let trusted = WebSocketClientConfiguration(
                    tls: try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile)))
                let (seen, _) = try await echo(
                    200, url: "wss://localhost:\(server.localAddress.port)/", configuration: trusted, loop: group.loops[1])
                #expect(seen.texts == (0..<200).map { "m\($0)" })
                #expect(seen.inReadCallback == 0)
            }
        }
    }

    @Test("a flood of 2,000 messages then the server's close: all in order across reads, then not_connected and code 1000")
    func floodThenClose() async throws {
        let peer = try startPythonPeer("hostile_ws.py")
        defer { peer.process.stop() }
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let manager = WebSocketManager(url: try WebSocketURL("ws://127.0.0.1:\(peer.port)/flood?n=2000"), loop: loop)
            let (seen, error) = try await receiveAll(manager, on: loop)
            #expect(seen.texts == (0..<2000).map { "m\($0)" })
            #expect(seen.inReadCallback > 1000, "\(seen.inReadCallback) of 2000 in the read callback")
            #expect(error?.code == .notConnected)
            var last: WebSocketManager.Event?
            for await event in manager.events() { last = event }
            guard case .disconnected(let code, _)? = last else { Issue.record("\(String(describing: last))"); return }
            #expect(code == .normalClosure)
        }
    }

    @Test("a ping before every echo: each answered with its pong while the messages go on to the handler")
    func pingsBetweenMessages() async throws {
        let peer = try startPythonPeer("hostile_ws.py")
        defer { peer.process.stop() }
        try await withLoopGroup(loopCount: 1) { group in
            let (seen, _) = try await echo(300, url: "ws://127.0.0.1:\(peer.port)/ping-echo", loop: group.loops[0])
            #expect(seen.texts == (0..<300).map { "m\($0)" })
            let line = peer.process.waitForLine(containing: "pongs", timeout: .seconds(30))
            #expect(line == "pongs 301 of 301", "the peer counted: \(line ?? "nothing")")
        }
    }

    @Test("a message trickled a byte at a time: assembled across a thousand reads, handed over once")
    func trickle() async throws {
        let peer = try startPythonPeer("hostile_ws.py")
        defer { peer.process.stop() }
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let manager = WebSocketManager(url: try WebSocketURL("ws://127.0.0.1:\(peer.port)/trickle"), loop: loop)
            let (seen, error) = try await receiveAll(manager, on: loop)
            #expect(seen.texts == [String((0..<1000).map { Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8($0 % 26))) })])
            #expect(error?.code == .notConnected)
        }
    }

    @Test("a server close while the task is parked: receiveEach throws not_connected, the stream ends with the server's code")
    func serverClose() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let chaos = ChaosOptions(closeProbability: 1, closeCode: WebSocketCloseCode(rawValue: 4005))
            try await withEmbeddedServer(ServerConfiguration(chaos: chaos), on: group) { server in
                let loop = group.loops[0]
                let manager = WebSocketManager(url: try WebSocketURL(server.url), loop: loop)
                let error = try await onLoop(loop) { () async throws -> WebSocketClientError? in
                    try await manager.connect()
                    try await manager.send(text: "closes instead of echoing")
                    do throws(WebSocketClientError) {
                        try await manager.receiveEach { _, _ throws(WebSocketClientError) in true }
                        return nil
                    } catch {
                        return error
                    }
                }
                #expect(error?.code == .notConnected)
                var last: WebSocketManager.Event?
                for await event in manager.events() { last = event }
                guard case .disconnected(let code, let reason)? = last else { Issue.record("\(String(describing: last))"); return }
                #expect(code.rawValue == 4005)
                #expect(reason == "chaos")
            }
        }
    }

    @Test("cancelling the task parked between messages ends receiveEach at once and closes the connection")
    func cancellation() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                let loop = group.loops[0]
                let manager = WebSocketManager(url: try WebSocketURL(server.url), loop: loop)
                try await onLoop(loop) { try await manager.connect() }
                let seen = Seen()
                let ended = Lock<WebSocketClientError??>(nil)
                let parked = Task(executorPreference: loop.taskExecutor) {
                    do throws(WebSocketClientError) {
                        // One echo first, so the task parks in a stretch on the loop thread, not in receive()'s read.
                        try await manager.send(text: "one")
                        try await manager.receiveEach { _, message throws(WebSocketClientError) in
                            seen.record(message)
                            return true
                        }
                        ended.withLock { $0 = .some(nil) }
                    } catch {
                        ended.withLock { $0 = .some(error) }
                    }
                }
                try await Deadline.waitUntil("the echo to be handed over") { try await onLoop(loop) { seen.texts.count } == 1 }
                try await Task.sleep(for: .milliseconds(50))
                parked.cancel()
                do {
                    try await Deadline.waitUntil("receiveEach to end once cancelled", timeout: .seconds(10)) {
                        ended.withLock { $0 } != nil
                    }
                } catch {
                    await manager.abort(reason: "the test gives up")  // so the parked task and the test can end
                    throw error
                }
                let thrown = ended.withLock { $0 }.flatMap { $0 }
                #expect(thrown != nil, "receiveEach returned instead of throwing")
                try await Deadline.waitUntil("the connection to close") { await manager.state == .closed }
            }
        }
    }

    @Test("the handler's error ends receiveEach with that error; the connection stays open for the caller")
    func handlerError() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                let loop = group.loops[0]
                let manager = WebSocketManager(url: try WebSocketURL(server.url), loop: loop)
                let seen = Seen()
                let error = try await onLoop(loop) { () async throws -> WebSocketClientError? in
                    try await manager.connect()
                    try await manager.send(text: "m0")
                    var thrown: WebSocketClientError?
                    do throws(WebSocketClientError) {
                        try await manager.receiveEach { manager, message throws(WebSocketClientError) in
                            seen.record(message)
                            if seen.texts.count == 5 { throw WebSocketClientError(.invalidConfiguration, "the fifth") }
                            _ = try manager.sendIfReady(.text("m\(seen.texts.count)"))
                            return true
                        }
                    } catch {
                        thrown = error
                    }
                    #expect(await manager.state == .open)
                    try await manager.send(text: "still open")
                    #expect(try await manager.receive() == .text("still open"))
                    await manager.disconnect()
                    return thrown
                }
                #expect(seen.texts == ["m0", "m1", "m2", "m3", "m4"])
                #expect(error?.code == .invalidConfiguration)
                #expect(error?.detail == "the fifth")
            }
        }
    }
}

import Clients
import Crypto
import Foundation
import Runtime
import TestSupport
import Testing
import WebSocket

@Suite("Interop with Python websockets", .serialized, .timeLimit(.minutes(2)))
struct InteropTests {
    @Test("ws: text, binary, fragmented and 16 MiB messages, ping, subprotocol, compression, close 4000")
    func plain() async throws {
        let server = try PythonWebSocketServer(arguments: ["--subprotocol", "chat.v2"])
        defer { server.process.stop() }
        try await withLoopGroup(loopCount: 1) { group in
            var configuration = WebSocketClientConfiguration(subprotocols: ["chat.v1", "chat.v2"], compression: PerMessageDeflateOffer())
            configuration.limits.outgoingFragmentSize = 64 * 1024
            // Random bytes: a periodic 16 MiB payload would (rightly) trip the 100:1 inflation-ratio cap.
            let big = Crypto.randomBytes(16 << 20)
            let log = try await runSession(url: "ws://127.0.0.1:\(server.port)/", configuration: configuration, loop: group.loops[0]) { manager, events in
                var events = events
                #expect(await manager.negotiatedSubprotocol == "chat.v2")
                #expect(await manager.negotiatedCompression != nil)
                let long = String(repeating: "fragmented κόσμε ", count: 20_000)  // ~380 KB: 6 fragments
                try await manager.send(text: long)
                guard case .text(let text)? = await events.nextMessage() else { Issue.record("no text"); return }
                #expect(text == long)
                try await manager.send(data: [9, 8, 7])
                guard case .data([9, 8, 7])? = await events.nextMessage() else { Issue.record("no binary"); return }
                try await manager.send(data: big)
                guard case .data(let echoed)? = await events.nextMessage() else { Issue.record("no 16 MiB echo"); return }
                #expect(echoed == big)
                #expect(try await manager.sendPing() > .zero)
                await manager.disconnect(code: WebSocketCloseCode(rawValue: 4000), reason: "client done")
            }
            #expect(log.names == ["connected", "text", "data", "data", "disconnected(4000)"])
            for case .error(let error) in log.all { Issue.record("client error: \(error)") }
        }
    }

    @Test("the server closes with its code and reason; the auth header is what the server saw")
    func serverCloseAndAuth() async throws {
        let server = try PythonWebSocketServer()
        defer { server.process.stop() }
        try await withLoopGroup(loopCount: 1) { group in
            let closed = try await runSession(url: "ws://127.0.0.1:\(server.port)/close/4002", loop: group.loops[0]) { manager, _ in
                try await manager.send(text: "trigger")
            }
            #expect(closed.names == ["connected", "text", "disconnected(4002)"])
            if case .disconnected(_, let reason)? = closed.all.last { #expect(reason == "bye") }

            let authenticated = try await runSession(
                url: "ws://127.0.0.1:\(server.port)/whoami", configuration: .init(authentication: .bearer("token-123")), loop: group.loops[0]
            ) { manager, events in
                var events = events
                guard case .text(let seen)? = await events.nextMessage() else { Issue.record("no whoami answer"); return }
                #expect(seen == "Bearer token-123")
                await manager.disconnect()
            }
            #expect(authenticated.names.last == "disconnected(1000)")
        }
    }

    @Test("wss against Python with the test CA")
    func secure() async throws {
        let certificates = try TestCertificates.shared.get()
        let server = try PythonWebSocketServer(arguments: ["--cert", certificates.leafCertificate, "--key", certificates.leafKey])
        defer { server.process.stop() }
        try await withLoopGroup(loopCount: 1) { group in
            let tls = try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile))
            let log = try await runSession(url: "wss://localhost:\(server.port)/", configuration: .init(tls: tls), loop: group.loops[0]) { manager, events in
                var events = events
                try await manager.send(text: "secure hello")
                guard case .text("secure hello")? = await events.nextMessage() else { Issue.record("no echo"); return }
                await manager.disconnect()
            }
            #expect(log.names == ["connected", "text", "disconnected(1000)"])
        }
    }
}

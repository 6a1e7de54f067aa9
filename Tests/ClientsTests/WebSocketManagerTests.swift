import Clients
import EmbeddedServer
import HTTP1
import Runtime
import TestSupport
import Testing
import WebSocket

@Suite("WebSocketManager against the embedded server", .serialized, .timeLimit(.minutes(2)))
struct WebSocketManagerTests {
    @Test("connects, echoes text as text and binary as binary (incl. fragmented and 16 MiB), pings, closes 1000")
    func echo() async throws {
        try await withLoopGroup(loopCount: 2) { group in
            try await withEmbeddedServer(ServerConfiguration(subprotocols: ["chat.v2"]), on: group) { server in
                let big = (0..<(16 * 1024 * 1024 - 64)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
                var configuration = WebSocketClientConfiguration(subprotocols: ["chat.v1", "chat.v2"])
                configuration.limits.outgoingFragmentSize = 1 << 20
                let log = try await runSession(url: server.url, configuration: configuration, loop: group.loops[1]) { manager, events in
                    var events = events
                    #expect(await manager.negotiatedSubprotocol == "chat.v2")
                    try await manager.send(text: "hello κόσμε")
                    guard case .text("hello κόσμε")? = await events.nextMessage() else { Issue.record("no text echo"); return }
                    try await manager.send(data: [0, 1, 2, 255])
                    guard case .data([0, 1, 2, 255])? = await events.nextMessage() else { Issue.record("no binary echo"); return }
                    try await manager.send(data: big)
                    guard case .data(let echoed)? = await events.nextMessage() else { Issue.record("no 16 MiB echo"); return }
                    #expect(echoed == big)
                    let roundTrip = try await manager.sendPing()
                    #expect(roundTrip > .zero)
                    await manager.disconnect()
                }
                #expect(log.names == ["connected", "text", "data", "data", "disconnected(1000)"])
                #expect(server.statistics.messagesEchoed.load(ordering: .relaxed) == 3)
            }
        }
    }

    @Test("permessage-deflate is negotiated and round-trips")
    func compression() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                let configuration = WebSocketClientConfiguration(compression: PerMessageDeflateOffer(requestClientNoContextTakeover: true))
                let text = String(repeating: "squeeze me ", count: 2000)
                let log = try await runSession(url: server.url, configuration: configuration, loop: group.loops[0]) { manager, events in
                    var events = events
                    #expect(await manager.negotiatedCompression?.clientNoContextTakeover == true)
                    for _ in 0..<3 {
                        try await manager.send(text: text)
                        guard case .text(let echoed)? = await events.nextMessage() else { Issue.record("no echo"); return }
                        #expect(echoed == text)
                    }
                    await manager.disconnect(code: WebSocketCloseCode(rawValue: 4000), reason: "done")
                }
                #expect(log.names.last == "disconnected(4000)")
            }
        }
    }

    @Test("the auth header reaches the server; a query token is percent-encoded; neither is in errors")
    func authentication() async throws {
        let seen = Lock<[HTTPRequestHead]>([])
        try await withLoopGroup(loopCount: 1) { group in
            let configuration = ServerConfiguration(onHandshake: { request in seen.withLock { $0.append(request) } })
            try await withEmbeddedServer(configuration, on: group) { server in
                for authentication in [WebSocketClientConfiguration.Authentication.bearer("s3cret"), .query(name: "token", token: "a b&c")] {
                    _ = try await runSession(url: server.url + "path?x=1", configuration: .init(authentication: authentication),
                                             loop: group.loops[0]) { manager, _ in await manager.disconnect() }
                }
            }
        }
        let requests = seen.withLock { $0 }
        #expect(requests.count == 2)
        #expect(requests.first?.headers["Authorization"] == "Bearer s3cret")
        #expect(requests.first?.target == "/path?x=1")
        #expect(requests.last?.target == "/path?x=1&token=a%20b%26c")
        #expect(requests.last?.headers["Authorization"] == nil)
    }

    @Test("server-initiated close code reaches the client; drop and reset are 1006")
    func serverCloses() async throws {
        for (mode, expected) in [(ChaosOptions.CloseMode.closeFrame, "disconnected(4001)"), (.drop, "disconnected(1006)"), (.reset, "disconnected(1006)")] {
            try await withLoopGroup(loopCount: 1) { group in
                let chaos = ChaosOptions(closeAfter: .milliseconds(50), closeCode: WebSocketCloseCode(rawValue: 4001), closeMode: mode)
                try await withEmbeddedServer(ServerConfiguration(chaos: chaos), on: group) { server in
                    let log = try await runSession(url: server.url, loop: group.loops[0])
                    #expect(log.names.first == "connected")
                    #expect(log.names.last == expected, "\(mode): \(log.names)")
                    if mode == .closeFrame, case .disconnected(_, let reason)? = log.all.last { #expect(reason == "chaos") }
                }
            }
        }
    }

    @Test("a stalled server is declared dead by the pong timeout")
    func pongTimeout() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(ServerConfiguration(chaos: ChaosOptions(isReadingStopped: true)), on: group) { server in
                let configuration = WebSocketClientConfiguration(pingInterval: .milliseconds(50), pongTimeout: .milliseconds(150))
                let log = try await runSession(url: server.url, configuration: configuration, loop: group.loops[0])
                #expect(log.names == ["connected", "error(pong_timeout)", "disconnected(1006)"])
            }
        }
    }

    @Test("startPinging keeps a healthy connection alive and measures RTT")
    func startPinging() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                let log = try await runSession(url: server.url, configuration: .init(pongTimeout: .milliseconds(500)), loop: group.loops[0]) { manager, _ in
                    await manager.startPinging(interval: .milliseconds(20))
                    try await Deadline.waitUntil("a ping's round trip") { await manager.lastPingRoundTrip != nil }
                    await manager.disconnect()
                }
                #expect(log.names == ["connected", "disconnected(1000)"])
            }
        }
    }

    @Test("connection failures: refused, handshake timeout, non-101, bad URL scheme")
    func failures() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            // Refused: a port nobody listens on.
            let closedPort = try await loop.submit {
                let listener = try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop)
                defer { listener.close() }
                return listener.localAddress.port
            }
            var log = try await runSession(url: "ws://127.0.0.1:\(closedPort)/", loop: loop)
            #expect(log.names == ["error(connect)"])
            if case .error(let error)? = log.all.first { #expect(error.runtimeError?.code == .connectionRefused) }

            // A server that accepts and never answers: the handshake deadline fires.
            let silent = try await loop.submit { try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop) }
            let holder = Task(executorPreference: loop.taskExecutor) { () async -> TCPConnection? in try? await silent.accept() }
            log = try await runSession(url: "ws://127.0.0.1:\(silent.localAddress.port)/",
                                       configuration: .init(handshakeTimeout: .milliseconds(100)), loop: loop)
            #expect(log.names == ["error(handshake_timeout)"])
            (await holder.value)?.close()
            silent.close()

            #expect(throws: WebSocketURL.ParseError.self) { _ = try WebSocketURL("http://example.com/") }
            #expect(throws: WebSocketURL.ParseError.self) { _ = try WebSocketURL("ws://example.com/#frag") }
            #expect(throws: WebSocketURL.ParseError.self) { _ = try WebSocketURL("ws://example.com:0/") }
        }
    }

    @Test("wss with a verified certificate, and a refused one")
    func secure() async throws {
        let certificates = try TestCertificates.shared.get()
        try await withLoopGroup(loopCount: 2) { group in
            let serverTLS = try TLSContext(role: .server, configuration: TLSConfiguration(
                certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
            try await withEmbeddedServer(ServerConfiguration(tls: serverTLS), on: group) { server in
                let url = "wss://localhost:\(server.localAddress.port)/"
                let trusted = WebSocketClientConfiguration(tls: try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile)))
                let log = try await runSession(url: url, configuration: trusted, loop: group.loops[1]) { manager, events in
                    var events = events
                    try await manager.send(text: "over tls")
                    guard case .text("over tls")? = await events.nextMessage() else { Issue.record("no echo over TLS"); return }
                    await manager.disconnect()
                }
                #expect(log.names == ["connected", "text", "disconnected(1000)"])
                let untrusted = WebSocketClientConfiguration(tls: try TLSContext(role: .client))
                let refused = try await runSession(url: url, configuration: untrusted, loop: group.loops[1])
                #expect(refused.names == ["error(tls)"])
                if case .error(let error)? = refused.all.first { #expect(error.runtimeError?.code == .tlsVerificationFailed) }
            }
        }
    }
}

import Clients
import EmbeddedServer
import Runtime
import TestSupport
import Testing
import WebSocket

@Suite("WebSocketManager pull mode (receive)", .serialized, .timeLimit(.minutes(2)))
struct ReceiveModeTests {
    @Test("send and receive in turn; a clean disconnect completes the closing handshake without waiting for the timeout")
    func echo() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                let loop = group.loops[0]
                let manager = WebSocketManager(url: try WebSocketURL(server.url), configuration: .init(closeTimeout: .seconds(30)), loop: loop)
                let clock = LoopClock()
                let elapsed = try await onLoop(loop) {
                    try await manager.connect()
                    for index in 0..<100 {
                        try await manager.send(text: "message \(index)")
                        #expect(try await manager.receive() == .text("message \(index)"))
                    }
                    try await manager.send(data: [1, 2, 3])
                    #expect(try await manager.receive() == .binary([1, 2, 3]))
                    let start = clock.now
                    await manager.disconnect()
                    return start.duration(to: clock.now)
                }
                #expect(elapsed < .seconds(30), "disconnect waited for the close timeout")
                #expect(await manager.state == .closed)
                var events: [String] = []
                for await event in manager.events() { events.append("\(event)") }
                #expect(events.first?.hasPrefix("connected") == true)
                #expect(events.last?.hasPrefix("disconnected") == true && events.last?.contains("1000") == true, "\(events)")
            }
        }
    }

    @Test("a server close ends receive() with not_connected and the stream with the server's code")
    func serverClose() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let chaos = ChaosOptions(closeProbability: 1, closeCode: WebSocketCloseCode(rawValue: 4005))
            try await withEmbeddedServer(ServerConfiguration(chaos: chaos), on: group) { server in
                let loop = group.loops[0]
                let manager = WebSocketManager(url: try WebSocketURL(server.url), loop: loop)
                let error = try await onLoop(loop) { () async throws -> WebSocketClientError? in
                    try await manager.connect()
                    try await manager.send(text: "closes instead of echoing")
                    do {
                        _ = try await manager.receive()
                        return nil
                    } catch let error as WebSocketClientError {
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

    @Test("disconnect against a server that never answers the close: bounded by closeTimeout, still reports")
    func disconnectTimesOut() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(ServerConfiguration(chaos: ChaosOptions(isReadingStopped: true)), on: group) { server in
                let loop = group.loops[0]
                let manager = WebSocketManager(url: try WebSocketURL(server.url), configuration: .init(closeTimeout: .milliseconds(100)), loop: loop)
                try await onLoop(loop) {
                    try await manager.connect()
                    await manager.disconnect()
                }
                #expect(await manager.state == .closed)
                var last: WebSocketManager.Event?
                for await event in manager.events() { last = event }
                guard case .disconnected(let code, _)? = last else { Issue.record("\(String(describing: last))"); return }
                #expect(code == .abnormalClosure)
            }
        }
    }

    @Test("receive() is refused while run() reads")
    func exclusive() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                _ = try await runSession(url: server.url, loop: group.loops[0]) { manager, _ in
                    let error = await #expect(throws: WebSocketClientError.self) { _ = try await manager.receive() }
                    #expect(error?.code == .invalidConfiguration)
                    await manager.disconnect()
                }
            }
        }
    }
}

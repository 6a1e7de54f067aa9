import Clients
import Flow
import JSON
import Runtime
import TestSupport
import Testing
import WebSocket

/// The preset codecs against the real servers the presets target (python-socketio, strawberry-graphql), driven by
/// hand over ``WebSocketManager``: no engine, so a failure here is the codec's (or the server's contract's).
@Suite("Preset codecs against real servers", .serialized, .timeLimit(.minutes(3)))
struct PresetServerTests {
    @Test("Socket.IO: open packet, namespace connect, welcome, echo ack, join/say/said, a clean disconnect")
    func socketIOConversation() async throws {
        let server = try startPythonPeer("socketio_server.py", arguments: ["--ping-interval", "20", "--ping-timeout", "20"])
        defer { server.process.stop() }
        let log = try await PresetSession.run(url: "ws://127.0.0.1:\(server.port)/socket.io/?EIO=4&transport=websocket") {
            session in
            guard case .open(let handshake) = try await session.nextEngineIO() else { throw Unexpected("no open packet") }
            #expect(handshake.pingInterval == .seconds(20) && handshake.pingTimeout == .seconds(20))
            #expect(!handshake.sid.isEmpty && handshake.maxPayload > 0)

            try await session.sendSocketIO(.connect(namespace: "/", payload: nil))
            guard case .connect("/", let payload?) = try await session.nextSocketIO(),
                let sid = payload["sid"]?.stringValue, !sid.isEmpty
            else { throw Unexpected("no namespace connect") }
            #expect(try await session.nextSocketIO() == .event(namespace: "/", ackID: nil, arguments: ["welcome", ["sid": .string(sid)]]))

            let data: JSONValue = ["text": "κόσμε \"quoted\"", "n": 7, "list": [1, nil, true]]
            try await session.sendSocketIO(.event(namespace: "/", ackID: 41, arguments: ["echo", data]))
            #expect(try await session.nextSocketIO() == .ack(namespace: "/", ackID: 41, arguments: [data]))

            try await session.sendSocketIO(.event(namespace: "/", ackID: 42, arguments: ["join", ["room": "r1"]]))
            #expect(try await session.nextSocketIO() == .ack(namespace: "/", ackID: 42, arguments: [["joined": "r1"]]))
            try await session.sendSocketIO(.event(namespace: "/", ackID: 43, arguments: ["say", ["room": "r1", "text": "hi"]]))
            // The broadcast (to the sender too) and the ack, in either order.
            let answers = [try await session.nextSocketIO(), try await session.nextSocketIO()]
            #expect(answers.contains(.event(namespace: "/", ackID: nil,
                arguments: ["said", ["room": "r1", "text": "hi", "from": .string(sid)]])))
            #expect(answers.contains(.ack(namespace: "/", ackID: 43, arguments: [["ok": true]])))

            try await session.sendSocketIO(.disconnect(namespace: "/"))
            await session.manager.disconnect()
        }
        #expect(log.names.last == "disconnected(1000)")
        #expect(!log.names.contains { $0.hasPrefix("error") })
    }

    @Test("Socket.IO heartbeat: a client answering 2 with 3 stays past two intervals; one that does not is dropped")
    func socketIOHeartbeat() async throws {
        // A short interval and a generous timeout: answering in time must not depend on the box's speed.
        let server = try startPythonPeer("socketio_server.py", arguments: ["--ping-interval", "1", "--ping-timeout", "10"])
        defer { server.process.stop() }
        let url = "ws://127.0.0.1:\(server.port)/socket.io/?EIO=4&transport=websocket"
        let answered = try await PresetSession.run(url: url) { session in
            guard case .open(let handshake) = try await session.nextEngineIO() else { throw Unexpected("no open packet") }
            #expect(handshake.pingInterval == .seconds(1))
            try await session.sendSocketIO(.connect(namespace: "/", payload: nil))
            var pings = 0
            while pings < 3 {
                switch try await session.nextEngineIO(within: .seconds(30)) {
                case .ping(let data):
                    pings += 1
                    try await session.manager.send(text: EngineIOPacket.pong(data).encoded)
                case .message: continue
                case let other: throw Unexpected("unexpected Engine.IO packet \(other)")
                }
            }
            #expect(!session.log.names.contains { $0.hasPrefix("disconnected") })
            await session.manager.disconnect()
        }
        #expect(answered.names.last == "disconnected(1000)")

        let silentServer = try startPythonPeer("socketio_server.py", arguments: ["--ping-interval", "1", "--ping-timeout", "1"])
        defer { silentServer.process.stop() }
        let silent = try await PresetSession.run(url: "ws://127.0.0.1:\(silentServer.port)/socket.io/?EIO=4&transport=websocket") {
            session in
            guard case .open = try await session.nextEngineIO() else { throw Unexpected("no open packet") }
            try await session.sendSocketIO(.connect(namespace: "/", payload: nil))
            // Never answer: the server must give up on us (pingInterval + pingTimeout = 2 s; 60 s of slack).
            try await Deadline.waitUntil("the server to drop a client that never answers its pings", timeout: .seconds(60),
                                         interval: .milliseconds(50)) {
                session.log.names.contains { $0.hasPrefix("disconnected") }
            }
        }
        #expect(silent.all.contains { if case .text("2") = $0 { true } else { false } })
        #expect(silent.names.contains { $0.hasPrefix("disconnected") })
    }

    @Test("graphql-transport-ws: subprotocol, init/ack, query hello, mutation ids, count to 3, client complete")
    func graphQLConversation() async throws {
        let server = try startPythonPeer("graphql_server.py")
        defer { server.process.stop() }
        let configuration = WebSocketClientConfiguration(subprotocols: [GraphQLWSMessage.subprotocol])
        let log = try await PresetSession.run(url: "ws://127.0.0.1:\(server.port)/graphql", configuration: configuration) {
            session in
            #expect(await session.manager.negotiatedSubprotocol == GraphQLWSMessage.subprotocol)
            try await session.sendGraphQL(.connectionInit(payload: ["token": "t"]))
            guard case .connectionAck = try await session.nextGraphQL() else { throw Unexpected("no connection_ack") }

            try await session.sendGraphQL(.ping(payload: nil))
            guard case .pong = try await session.nextGraphQL() else { throw Unexpected("no pong") }

            try await session.sendGraphQL(.subscribe(id: "q", query: "query { hello }", variables: nil, operationName: nil, extensions: nil))
            #expect(try await session.nextGraphQL() == .next(id: "q", payload: ["data": ["hello": "world"]]))
            #expect(try await session.nextGraphQL() == .complete(id: "q"))

            var ids: [Int] = []
            for index in 0..<2 {
                try await session.sendGraphQL(.subscribe(
                    id: "m\(index)", query: "mutation($t: String!) { post(text: $t) { id text } }",
                    variables: ["t": .string("post \(index)")], operationName: nil, extensions: nil))
                guard case .next("m\(index)", let payload) = try await session.nextGraphQL(),
                    let id = payload["data"]?["post"]?["id"]?.integerValue,
                    payload["data"]?["post"]?["text"] == .string("post \(index)")
                else { throw Unexpected("no mutation result") }
                ids.append(id)
                #expect(try await session.nextGraphQL() == .complete(id: "m\(index)"))
            }
            #expect(ids[1] > ids[0])

            try await session.sendGraphQL(.subscribe(
                id: "c", query: "subscription($n: Int) { count(to: $n, everyMs: 10) }", variables: ["n": 3],
                operationName: nil, extensions: nil))
            for value in 0..<3 {
                #expect(try await session.nextGraphQL() == .next(id: "c", payload: ["data": ["count": .number(Double(value))]]))
            }
            #expect(try await session.nextGraphQL() == .complete(id: "c"))

            // A long subscription stopped by the client: nothing of it after the server answered a later query.
            try await session.sendGraphQL(.subscribe(
                id: "long", query: "subscription { count(to: 100000, everyMs: 20) }", variables: nil, operationName: nil,
                extensions: nil))
            guard case .next("long", _) = try await session.nextGraphQL() else { throw Unexpected("no first count") }
            try await session.sendGraphQL(.complete(id: "long"))
            try await session.sendGraphQL(.subscribe(id: "after", query: "{ hello }", variables: nil, operationName: nil, extensions: nil))
            var message = try await session.nextGraphQL()
            while case .next("long", _) = message { message = try await session.nextGraphQL() }  // in flight before it
            #expect(message == .next(id: "after", payload: ["data": ["hello": "world"]]))
            #expect(try await session.nextGraphQL() == .complete(id: "after"))
            try await Task.sleep(for: .milliseconds(500))  // 25 more counts' worth, had the complete been ignored
            #expect(session.unread.isEmpty)
            await session.manager.disconnect()
        }
        #expect(log.names.last == "disconnected(1000)")
    }

    @Test("graphql-transport-ws: a client not offering the subprotocol is closed with 4406")
    func graphQLRefusesAClientWithoutTheSubprotocol() async throws {
        let server = try startPythonPeer("graphql_server.py")
        defer { server.process.stop() }
        let log = try await PresetSession.run(url: "ws://127.0.0.1:\(server.port)/graphql") { session in
            // strawberry completes the handshake with no subprotocol, then closes 4406 (subprotocol not acceptable):
            // the engine must check the negotiated subprotocol itself rather than rely on a refused upgrade.
            #expect(await session.manager.negotiatedSubprotocol == nil)
            try await Deadline.waitUntil("the server to close", interval: .milliseconds(20)) {
                session.log.names.contains { $0.hasPrefix("disconnected") }
            }
        }
        #expect(log.names == ["connected", "disconnected(4406)"])
    }
}

/// The test found something other than what the protocol says comes next.
private struct Unexpected: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A manager's session with its event log and a read cursor; every read has a deadline.
private final class PresetSession: Sendable {
    let manager: WebSocketManager
    let log = EventLog()
    private let cursor = Lock(0)

    init(manager: WebSocketManager) { self.manager = manager }

    /// Runs a manager for `url` while `script` drives it; returns the events once the connection ended.
    static func run(
        url: String, configuration: WebSocketClientConfiguration = .init(),
        script: @escaping @Sendable (PresetSession) async throws -> Void
    ) async throws -> EventLog {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let session = PresetSession(manager: WebSocketManager(url: try WebSocketURL(url), configuration: configuration, loop: loop))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask(executorPreference: loop.taskExecutor) { await session.manager.run() }
                tasks.addTask {
                    for await event in session.manager.events() { session.log.append(event) }
                }
                tasks.addTask(executorPreference: loop.taskExecutor) {
                    try await Deadline.waitUntil("the connection to open or fail", interval: .milliseconds(10)) {
                        session.log.names.contains { $0 == "connected" || $0.hasPrefix("disconnected") || $0.hasPrefix("error") }
                    }
                    guard session.log.names.contains("connected") else { return }
                    do { try await script(session) } catch {
                        await session.manager.disconnect()
                        throw error
                    }
                }
                while try await tasks.next() != nil {}
            }
            return session.log
        }
    }

    /// Text messages not yet read.
    var unread: [String] {
        let position = cursor.withLock { $0 }
        return log.all.compactMap { if case .text(let text) = $0 { text } else { nil } }.dropFirst(position).map { $0 }
    }

    /// The next text message, within `timeout`; a disconnect or a binary message first is an error.
    func nextText(within timeout: Duration = .seconds(30)) async throws -> String {
        var found: String?
        try await Deadline.waitUntil("a text message", timeout: timeout, interval: .milliseconds(2)) {
            let position = cursor.withLock { $0 }
            var texts = 0
            for event in log.all {
                switch event {
                case .text(let text):
                    if texts == position { found = text; return true }
                    texts += 1
                case .data: throw Unexpected("a binary message")
                case .disconnected, .error: throw Unexpected("the connection ended: \(log.names)")
                case .connected: continue
                }
            }
            return false
        }
        cursor.withLock { $0 += 1 }
        return found ?? ""
    }

    func nextEngineIO(within timeout: Duration = .seconds(30)) async throws -> EngineIOPacket {
        try EngineIOPacket.decode(try await nextText(within: timeout)).get()
    }

    /// The next Socket.IO packet, answering the server's pings on the way.
    func nextSocketIO() async throws -> SocketIOPacket {
        while true {
            switch try await nextEngineIO() {
            case .message(let text): return try SocketIOPacket.decode(text).get()
            case .ping(let data): try await manager.send(text: EngineIOPacket.pong(data).encoded)
            case let other: throw Unexpected("unexpected Engine.IO packet \(other)")
            }
        }
    }

    func sendSocketIO(_ packet: SocketIOPacket) async throws {
        try await manager.send(text: EngineIOPacket.message(packet.encoded).encoded)
    }

    func nextGraphQL() async throws -> GraphQLWSMessage { try GraphQLWSMessage.decode(try await nextText()).get() }

    func sendGraphQL(_ message: GraphQLWSMessage) async throws { try await manager.send(text: message.encoded) }
}

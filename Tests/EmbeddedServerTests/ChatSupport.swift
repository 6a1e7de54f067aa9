import EmbeddedServer
import HTTP1
import JSON
import Runtime
import TestSupport
import Testing
import WebSocket
import WebSocketIO

/// A WebSocket client of `/chat` for the tests, on one loop; every receive has a deadline.
final class ChatClient: @unchecked Sendable {
    let loop: EventLoop
    private let channel: WebSocketChannel

    private init(loop: EventLoop, channel: WebSocketChannel) {
        self.loop = loop
        self.channel = channel
    }

    /// Connects to `/chat` on `port` and completes the upgrade.
    static func connect(port: Int, on loop: EventLoop) async throws -> ChatClient {
        try await onLoop(loop) {
            let tcp = try await TCPConnection.connect(to: try SocketAddress(ip: "127.0.0.1", port: port), on: loop)
            let handshake = WebSocketClientHandshake(host: "127.0.0.1", port: port, isSecure: false, target: "/chat")
            try await tcp.write(handshake.request.serialized())
            var parser = HTTPHeadParser()
            var buffer: [UInt8] = []
            while true {
                guard try await tcp.read(into: &buffer, maxBytes: 16 * 1024) > 0 else { throw ChatClientError("EOF in the upgrade") }
                guard let (response, length) = try parser.parseResponse(buffer) else { continue }
                _ = try handshake.validate(response)
                var connection = WebSocketConnection(role: .client)
                connection.receive(buffer[length...])
                return ChatClient(loop: loop, channel: WebSocketChannel(stream: tcp, connection: connection))
            }
        }
    }

    func send(_ text: String) async throws {
        try await onLoop(loop) {
            self.channel.connection.send(.text(text))
            try await self.channel.flush()
        }
    }

    func sendBinary(_ bytes: [UInt8]) async throws {
        try await onLoop(loop) {
            self.channel.connection.send(.binary(bytes))
            try await self.channel.flush()
        }
    }

    /// The next text message, or nil if the connection ended (or `limit` passed: the connection is then closed).
    func receive(within limit: Duration = .seconds(20)) async throws -> String? {
        try await onLoop(loop) {
            let stream = self.channel.stream
            let timer = ScheduledTimer(on: self.loop, after: limit) { stream.close() }
            defer { timer.cancel() }
            do {
                while let event = try await self.channel.next() {
                    switch event {
                    case .message(.text(let text)): return text
                    case .message(.binary): throw ChatClientError("a binary message")
                    case .ping, .pong: continue
                    case .closeReceived, .failed: return nil
                    }
                }
            } catch { return nil }
            return nil
        }
    }

    /// The next message as a JSON object (fails the test when there is none).
    func receiveJSON(within limit: Duration = .seconds(20), sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSONObject {
        let text = try #require(try await receive(within: limit), "no message within \(limit)", sourceLocation: sourceLocation)
        return try #require(try JSONValue(parsing: text).objectValue, "not an object: \(text)", sourceLocation: sourceLocation)
    }

    /// Joins `room`; returns the server's id for this connection.
    func join(_ room: String) async throws -> Int {
        try await send(#"{"type":"join","room":"\#(room)"}"#)
        let reply = try await receiveJSON()
        #expect(reply["type"] == "joined" && reply["room"] == .string(room), "\(reply)")
        return try #require(reply["id"]?.integerValue)
    }

    /// A closing handshake (best effort), then the socket closed.
    func close() async {
        // Best effort: a peer that is already gone needs no close frame.
        try? await onLoop(loop) {
            if self.channel.connection.state == .open {
                self.channel.connection.close(code: .normalClosure, reason: "")
                try? await self.channel.flush()  // the socket closes next either way
            }
            self.channel.stream.close()
        }
    }

    /// The socket closed at once, without a close frame (the server sees EOF).
    func drop() async {
        // Closing never fails; the hop to the loop fails only once the loop is gone, when the socket is too.
        try? await onLoop(loop) { self.channel.stream.close() }
    }
}

struct ChatClientError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs an in-process embedded server on two loops of its own, and a client group of two loops, for the body.
func withChatServer<T: Sendable>(
    _ configuration: ServerConfiguration = ServerConfiguration(),
    _ body: (EmbeddedServer, EventLoopGroup) async throws -> T
) async throws -> T {
    try await withLoopGroup(loopCount: 2) { clients in
        let servers = try EventLoopGroup(loopCount: 2)
        defer { _ = servers.shutdown() }
        let server = try await EmbeddedServer.bind(configuration, on: servers)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask(executorPreference: server.taskExecutor) { await server.run() }
            defer { tasks.cancelAll() }
            return try await body(server, clients)
        }
    }
}

/// Connects chat clients until `count` of them are connected with at least one on each of the server's two
/// loops (the kernel spreads connections over the listeners by hash: a few tries suffice; bounded at 64).
/// Returns them with each one's id; extra clients are closed.
func connectSpread(_ count: Int, to server: EmbeddedServer, clients: EventLoopGroup) async throws -> [(ChatClient, Int)] {
    precondition(count >= 2)
    var byLoop: [Int: [(ChatClient, Int)]] = [:]
    var extras: [ChatClient] = []
    for attempt in 0..<64 {
        let client = try await ChatClient.connect(port: server.localAddress.port, on: clients.loops[attempt % 2])
        let probe = "where-\(attempt)"
        let id = try await client.join(probe)
        let loop = try #require(server.chatRooms.memberLoops(of: probe).first)
        try await client.send(#"{"type":"leave","room":"\#(probe)"}"#)
        #expect(try await client.receiveJSON()["type"] == "left")
        let total = byLoop.values.reduce(0) { $0 + $1.count }
        // One loop may take at most count - 1, so the other always gets one.
        if total < count && byLoop[loop, default: []].count < count - 1 {
            byLoop[loop, default: []].append((client, id))
        } else {
            extras.append(client)
        }
        let chosen = byLoop.values.reduce(0) { $0 + $1.count }
        if chosen == count && byLoop.count == 2 { break }
    }
    for extra in extras { await extra.close() }
    let chosen = byLoop.keys.sorted().flatMap { byLoop[$0]! }
    try #require(byLoop.count == 2 && chosen.count == count, "could not spread \(count) clients over both loops")
    return chosen
}

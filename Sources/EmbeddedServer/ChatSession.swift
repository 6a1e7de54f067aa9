import JSON
import Runtime
import WebSocket
import WebSocketIO

/// One `/chat` connection of the embedded server after its upgrade (``ChatRequest`` has the protocol): reads
/// requests, answers them, and fans each `say` out to the room's members through ``ChatRooms``.
///
/// An actor on its connection's loop, like ``ServerSession``. A broadcast reaches a member on the same loop by a
/// direct call in that member's isolation (`assumeIsolated`: same executor, same thread); members on other loops
/// get one ``EventLoop/execute(_:)`` job per loop per message, which runs ``deliver(_:)`` on their thread. A
/// sender's messages to a member therefore always take the same path, in order (the loop's queues are FIFO).
///
/// A slow member cannot grow the server's memory: a `said` for a member with more than
/// ``ChatLimits/maximumQueuedBytes`` not yet taken by the kernel is dropped for that member and counted in
/// ``ServerStatistics/chatDropped`` (its client then misses it and the connection stays open: dropping rather
/// than closing with 1008 keeps a load test's slow consumers visible as missed messages, not as disconnects).
actor ChatSession {
    /// The server's number for this connection, stable for its life (the `id` of `joined`, `from` of `said`).
    nonisolated let id: Int
    nonisolated let loop: EventLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    private let channel: WebSocketChannel
    private let tcp: TCPConnection
    private let server: EmbeddedServer
    /// The rooms this connection is in (at most ``ChatLimits/maximumRoomsPerConnection``).
    private var rooms: Set<String> = []
    private var isClosed = false
    /// The flusher, waiting for broadcast output to write.
    private var flushWaiter: CheckedContinuation<Void, Never>?
    /// `said` bytes queued on the connection since its output was last taken.
    private var unflushedBytes = 0
    /// Closes a session whose client takes none of its queued output for the write timeout, as echo does.
    private lazy var writeWatchdog = ConnectionWatchdog(loop: loop, tcp: tcp) { [statistics = server.statistics, tcp] _ in
        statistics.timeouts.add(1, ordering: .relaxed)
        tcp.close()
    }

    /// Whether a request target asks for the chat service: the path `/chat` (any query is ignored).
    static func isChatTarget(_ target: String) -> Bool {
        target == "/chat" || target.hasPrefix("/chat?")
    }

    /// - Parameters:
    ///   - stream: the upgraded transport; `connection` its protocol state, already fed any bytes read past the
    ///     handshake.
    init(stream: any ByteStream, connection: WebSocketConnection, tcp: TCPConnection, server: EmbeddedServer) {
        channel = WebSocketChannel(stream: stream, connection: connection)
        self.tcp = tcp
        self.server = server
        loop = tcp.loop
        id = server.chatRooms.nextID()
    }

    /// Serves the connection until it ends; then it is in no room.
    func serve() async {
        defer {
            writeWatchdog.disarm()
            for room in rooms { server.chatRooms.leave(room, member: self) }
            rooms.removeAll()
        }
        await withDiscardingTaskGroup { tasks in
            tasks.addTask(executorPreference: loop.taskExecutor) { await self.flushLoop() }
            await readLoop()
            isClosed = true
            wakeFlusher()
            // A flush still waiting on a client that reads nothing ends with the session.
            tasks.cancelAll()
        }
    }

    private func readLoop() async {
        do {
            while let event = try await channel.next() {
                switch event {
                case .message(.text(let text)):
                    handle(text)
                case .message(.binary):
                    refuse("expected a text frame holding a JSON object")
                case .ping, .pong:
                    continue  // The channel answered the ping; an unsolicited pong needs nothing.
                case .closeReceived:
                    return  // The channel wrote our reply; the server closes TCP first (§7.1.1).
                case .failed:
                    server.statistics.protocolFailures.add(1, ordering: .relaxed)
                    return
                }
            }
        } catch {
            return  // The client went away, or the session was cancelled.
        }
    }

    private func handle(_ text: String) {
        let request: ChatRequest
        switch ChatRequest.parse(text) {
        case .success(let parsed): request = parsed
        case .failure(let error): return refuse(error.message)
        }
        switch request {
        case .join(let room):
            guard !rooms.contains(room) else { return reply(ChatReply.joined(room: room, id: id)) }
            let limits = server.chatRooms.limits
            guard rooms.count < limits.maximumRoomsPerConnection else {
                return refuse("already in \(limits.maximumRoomsPerConnection) rooms: leave one first")
            }
            switch server.chatRooms.join(room, member: self) {
            case .joined, .alreadyMember:
                rooms.insert(room)
                reply(ChatReply.joined(room: room, id: id))
            case .roomFull:
                refuse("room \(room) is full (\(limits.maximumMembers) members)")
            case .tooManyRooms:
                refuse("the server holds \(limits.maximumRooms) rooms: no new room")
            }
        case .leave(let room):
            guard rooms.remove(room) != nil else { return refuse("not in room \(room)") }
            server.chatRooms.leave(room, member: self)
            reply(ChatReply.left(room: room))
        case .say(let room, let text, let ref):
            guard rooms.contains(room) else { return refuse("not in room \(room)") }
            server.statistics.chatSaid.add(1, ordering: .relaxed)
            broadcast(ChatReply.said(room: room, text: text, from: id, ref: ref), to: server.chatRooms.members(of: room) ?? [])
        }
    }

    /// ``deliver(_:)`` on a session of this loop from another's isolation (checked; no allocation per call, where
    /// `assumeIsolated` with a closure capturing the message would make two per member).
    private static let deliverOnThisLoop = isolatedFunction { (session: isolated ChatSession, said: String) in
        session.deliver(said)
    }

    /// Hands `said` to every member: directly on this loop, one job per other loop.
    private func broadcast(_ said: String, to members: [ChatSession]) {
        var remote: [(loop: EventLoop, members: [ChatSession])] = []
        for member in members {
            if member.loop === loop {
                if member === self { deliver(said) } else { Self.deliverOnThisLoop(member, said) }
            } else if let index = remote.firstIndex(where: { $0.loop === member.loop }) {
                remote[index].members.append(member)
            } else {
                remote.append((member.loop, [member]))
            }
        }
        for (loop, members) in remote {
            // Dropped (and counted by the loop) if that loop has shut down: its members are gone too.
            loop.execute {
                for member in members { Self.deliverOnThisLoop(member, said) }
            }
        }
    }

    /// Queues a broadcast `said` for this connection's client; on its loop.
    func deliver(_ said: String) {
        guard !isClosed, channel.connection.state == .open else { return }
        if !channel.connection.hasOutput { unflushedBytes = 0 }
        if tcp.pendingWriteBytes &+ unflushedBytes > server.chatRooms.limits.maximumQueuedBytes {
            server.statistics.chatDropped.add(1, ordering: .relaxed)
            return
        }
        channel.connection.send(.text(said))
        unflushedBytes &+= said.utf8.count
        server.statistics.chatDelivered.add(1, ordering: .relaxed)
        wakeFlusher()
    }

    private func reply(_ message: String) {
        channel.connection.send(.text(message))
    }

    private func refuse(_ message: String) {
        server.statistics.chatErrors.add(1, ordering: .relaxed)
        reply(ChatReply.error(message))
    }

    /// Writes broadcast output as it is queued (the read loop writes its own replies before each read, but may be
    /// waiting for the client when another member speaks).
    private func flushLoop() async {
        while !isClosed {
            guard channel.connection.hasOutput else {
                await withCheckedContinuation { flushWaiter = $0 }
                continue
            }
            unflushedBytes = 0
            do { try await channel.flush() } catch { return }
            if tcp.pendingWriteBytes > 0 { writeWatchdog.armWrite(timeout: server.configuration.writeTimeout) }
        }
    }

    private func wakeFlusher() {
        flushWaiter?.resume()
        flushWaiter = nil
    }
}

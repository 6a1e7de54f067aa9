import Synchronization

/// A Server-Sent Events fan-out: events go to every client connected now, and the ones published with `keep` also
/// to a bounded backlog replayed to clients that connect later. A client that does not keep up (its unsent bytes
/// past a cap) is disconnected rather than buffered without bound.
///
/// One lock guards everything; a publish appends the event's bytes to each client's unsent queue and wakes the
/// clients' writers (on the server's loop), which take the whole queue at once. The backlog's events are shared
/// with the replays handed out (copy-on-write arrays), so a late client costs no copy of it.
package final class EventStream: Sendable {
    /// The most kept events replayed to a new client.
    package let backlogLimit: Int
    /// The most bytes a client may have published to it and not yet taken by its writer (the socket's own buffers
    /// hold more); past it the client is disconnected.
    package let unsentLimit: Int
    /// Events every client gets first, before the backlog (never evicted by it): the dashboard's `hello`.
    private let preamble: [[UInt8]]
    private let state = Mutex(State())

    private struct State {
        /// Kept events, oldest first from `backlogStart` (a ring once full).
        var backlog: [[UInt8]] = []
        var backlogStart = 0
        var clients: [Int: Client] = [:]
        var nextClient = 0
        var isFinished = false
        var droppedClients = 0

        var replay: [[UInt8]] { Array(backlog[backlogStart...] + backlog[..<backlogStart]) }

        mutating func keep(_ bytes: [UInt8], limit: Int) {
            guard limit > 0 else { return }
            if backlog.count < limit {
                backlog.append(bytes)
            } else {
                backlog[backlogStart] = bytes
                backlogStart = (backlogStart + 1) % backlog.count
            }
        }
    }

    /// One connected client's queue.
    private struct Client {
        var unsent: [UInt8] = []
        var isEnded = false
        var isDropped = false
        var waiter: CheckedContinuation<EventBatch, Never>?
        /// Closes the client's connection (called once, outside the lock, when it is dropped).
        var disconnect: @Sendable () -> Void
    }

    /// - Parameters:
    ///   - backlogLimit: the most kept events replayed to a new client (the oldest go first).
    ///   - unsentLimit: the most unsent bytes a client may fall behind before it is disconnected.
    ///   - preamble: events sent to every client before the backlog, whatever the backlog dropped since.
    package init(backlogLimit: Int, unsentLimit: Int = LiveServer.Limits.standard.maximumUnsentEventBytes,
                 preamble: [(event: String, data: String)] = []) {
        self.backlogLimit = max(0, backlogLimit)
        self.unsentLimit = max(1, unsentLimit)
        self.preamble = preamble.map { Self.encode(event: $0.event, data: $0.data) }
    }

    /// Sends `event` with `data` (one JSON document, no newlines) to every client; with `keep`, also to the
    /// backlog. Thread-safe; never blocks on a client. After ``finish()`` it does nothing.
    package func publish(event: String, data: String, keep: Bool) {
        let bytes = Self.encode(event: event, data: data)
        var wakeups: [(CheckedContinuation<EventBatch, Never>, EventBatch)] = []
        var disconnects: [@Sendable () -> Void] = []
        state.withLock { state in
            guard !state.isFinished else { return }
            if keep { state.keep(bytes, limit: backlogLimit) }
            for id in state.clients.keys {
                guard !state.clients[id]!.isEnded else { continue }
                if state.clients[id]!.unsent.count > unsentLimit - bytes.count {
                    // Behind by more than the cap: let it go (and its queue) rather than hold it all.
                    state.clients[id]!.unsent = []
                    state.clients[id]!.isDropped = true
                    state.clients[id]!.isEnded = true
                    state.droppedClients += 1
                    disconnects.append(state.clients[id]!.disconnect)
                } else {
                    state.clients[id]!.unsent.append(contentsOf: bytes)
                }
                if let wakeup = Self.takeBatch(&state.clients[id]!) { wakeups.append(wakeup) }
            }
        }
        for disconnect in disconnects { disconnect() }
        for (waiter, batch) in wakeups { waiter.resume(returning: batch) }
    }

    /// Ends every client's stream after what was published; later clients get the backlog and the end.
    package func finish() {
        var wakeups: [(CheckedContinuation<EventBatch, Never>, EventBatch)] = []
        state.withLock { state in
            state.isFinished = true
            for id in state.clients.keys {
                state.clients[id]!.isEnded = true
                if let wakeup = Self.takeBatch(&state.clients[id]!) { wakeups.append(wakeup) }
            }
        }
        for (waiter, batch) in wakeups { waiter.resume(returning: batch) }
    }

    /// Whether ``finish()`` was called.
    package var isFinished: Bool { state.withLock { $0.isFinished } }
    /// Clients connected now.
    package var clientCount: Int { state.withLock { $0.clients.count } }
    /// Clients disconnected because they fell more than ``unsentLimit`` behind.
    package var droppedClientCount: Int { state.withLock { $0.droppedClients } }
    /// Bytes published to connected clients that their writers have not taken yet (at most ``unsentLimit`` each).
    package var unsentByteCount: Int { state.withLock { $0.clients.values.reduce(0) { $0 + $1.unsent.count } } }

    // MARK: The server's side

    /// The SSE wire form: `event: NAME`, one `data:` line per line of `data` (a newline in it cannot end the event
    /// early or start a field), then a blank line.
    static func encode(event: String, data: String) -> [UInt8] {
        var text = "event: " + String(event.unicodeScalars.filter { $0 != "\n" && $0 != "\r" }) + "\n"
        for line in data.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
            text += "data: " + line + "\n"
        }
        text += "\n"
        return Array(text.utf8)
    }

    /// Registers a client: it gets the backlog as it is now, then every event published from now on.
    /// - Parameter disconnect: closes the client's connection when it is dropped for falling behind.
    func subscribe(disconnect: @escaping @Sendable () -> Void) -> EventSubscription {
        state.withLock { state in
            let id = state.nextClient
            state.nextClient += 1
            state.clients[id] = Client(isEnded: state.isFinished, disconnect: disconnect)
            return EventSubscription(stream: self, id: id, replay: preamble + state.replay)
        }
    }

    /// Waits until the client has bytes to send or its stream ended; returns what there is (taking it).
    func next(_ id: Int) async -> EventBatch {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<EventBatch, Never>) in
                let ready = state.withLock { state -> EventBatch? in
                    guard state.clients[id] != nil else { return EventBatch(bytes: [], isEnded: true, isDropped: false) }
                    precondition(state.clients[id]!.waiter == nil, "two writers wait on one event client")
                    state.clients[id]!.waiter = continuation
                    return Self.takeBatch(&state.clients[id]!).map { $0.1 }
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            end(id)
        }
    }

    /// Ends one client's stream (its connection went, or its task was cancelled), waking its writer.
    func end(_ id: Int) {
        let wakeup = state.withLock { state -> (CheckedContinuation<EventBatch, Never>, EventBatch)? in
            guard state.clients[id] != nil else { return nil }
            state.clients[id]!.isEnded = true
            return Self.takeBatch(&state.clients[id]!)
        }
        if let (waiter, batch) = wakeup { waiter.resume(returning: batch) }
    }

    /// Forgets a client whose connection ended.
    func unsubscribe(_ id: Int) {
        end(id)
        state.withLock { _ = $0.clients.removeValue(forKey: id) }
    }

    /// The waiting writer and what to hand it, if it waits and there is something (bytes or the end).
    private static func takeBatch(_ client: inout Client) -> (CheckedContinuation<EventBatch, Never>, EventBatch)? {
        guard let waiter = client.waiter, !client.unsent.isEmpty || client.isEnded else { return nil }
        client.waiter = nil
        let batch = EventBatch(bytes: client.unsent, isEnded: client.isEnded, isDropped: client.isDropped)
        client.unsent = []
        return (waiter, batch)
    }
}

/// What a client's writer takes from its queue at once.
struct EventBatch: Sendable {
    var bytes: [UInt8]
    /// The stream finished, or the client was dropped or went away: nothing follows these bytes.
    var isEnded: Bool
    /// Dropped for falling behind (its connection is being closed; the bytes are empty).
    var isDropped: Bool
}

/// One client's registration with an ``EventStream``.
struct EventSubscription: Sendable {
    let stream: EventStream
    let id: Int
    /// The backlog at the moment of subscribing: sent first, before anything published after it.
    let replay: [[UInt8]]

    func next() async -> EventBatch { await stream.next(id) }
    func end() { stream.end(id) }
    func cancel() { stream.unsubscribe(id) }
}

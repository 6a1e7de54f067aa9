import Flow
import JSON
import Runtime

/// One result (or end) the server sent for a graphql-ws operation, waiting for the step that takes it.
package struct GraphQLOperationEvent {
    /// What the server sent.
    package enum Kind {
        case next(JSONValue)
        case error
        case complete
    }

    package var kind: Kind
    package var arrival: LoopClock.Instant
    /// The frame, kept to classify it (`flow.pushed`) if no step takes it.
    package var message: ParsedMessage
    package var byteCount: Int

    package init(_ kind: Kind, arrival: LoopClock.Instant, message: ParsedMessage, byteCount: Int) {
        self.kind = kind
        self.arrival = arrival
        self.message = message
        self.byteCount = byteCount
    }

    package var isEnd: Bool {
        if case .next = kind { false } else { true }
    }
}

/// The graphql-ws operations of one connection, bounded for a soak: the live operations by id with the results
/// their step has not taken yet (at most ``pendingCapacity`` results and ``pendingByteCapacity`` bytes each), at
/// most ``liveCapacity`` of them, and the last ``recentCapacity`` ended ids (a result for an id the server ended is
/// a protocol error; for one the client ended, a result that was in flight). An operation leaves the live map once
/// it has ended and its step is done with it.
package struct GraphQLOperations {
    package static let pendingCapacity = 1024
    package static let pendingByteCapacity = 4 << 20
    package static let liveCapacity = 1024
    package static let recentCapacity = 1024

    struct Operation {
        var pending: [GraphQLOperationEvent] = []
        var pendingHead = 0
        var pendingBytes = 0
        /// The server sent `complete` or `error`: it takes no more results.
        var isEnded = false
        /// A step waits for (or will take) its results; false once the step is done with it.
        var isConsumed = true
        /// The step that started it (`unsubscribe` names it).
        var step: String?
        /// Start order, for evicting the oldest.
        var serial: UInt64
    }

    /// Where a frame for an operation went.
    package enum Route: Equatable {
        /// Queued for its step (`isEnd`: it was the operation's end).
        case queued(isEnd: Bool)
        /// Nobody takes it (its step is done, the client ended the operation, or the pending bound is full):
        /// counted in `flow.pushed`.
        case pushed
        /// The end of an operation whose step is done, or one crossing the client's `complete`: it leaves quietly.
        case absorbed
        /// An id this connection never started (or one forgotten long ago), or a result after the server's own end.
        case protocolError
    }

    private var live: [String: Operation] = [:]
    /// Recently ended ids → ended by the client.
    private var recent = RecentKeys<String, Bool>(capacity: recentCapacity)
    private var serial: UInt64 = 0
    /// The last operation id each step started (bounded by the steps' names).
    package private(set) var latest: [String: String] = [:]

    package init() {}

    /// Live operations (ended ones whose step is done are gone).
    package var liveCount: Int { live.count }
    /// Ended ids remembered.
    package var recentCount: Int { recent.count }
    /// Results of `id` waiting for its step.
    package func pendingCount(_ id: String) -> Int { live[id].map { $0.pending.count - $0.pendingHead } ?? 0 }
    package func isLive(_ id: String) -> Bool { live[id] != nil }
    /// Live, and the server has not ended it.
    package func isRunning(_ id: String) -> Bool { live[id].map { !$0.isEnded } ?? false }
    /// Whether `id` ended recently: nil when unknown (or forgotten), else whether the client ended it.
    package func endedByClient(_ id: String) -> Bool? { recent[id] }

    /// A new operation of `step`, consumed by it.
    package mutating func start(_ id: String, step: String?) {
        serial &+= 1
        live[id] = Operation(step: step, serial: serial)
        if let step { latest[step] = id }
    }

    /// At the live bound: the oldest operation no step consumes (the caller ends it with `complete`).
    package func evictable() -> String? {
        guard live.count >= Self.liveCapacity else { return nil }
        return live.filter { !$0.value.isConsumed }.min { $0.value.serial < $1.value.serial }?.key
    }

    /// Live operations started by `step` (for `unsubscribe`), oldest first.
    package func live(step: String) -> [String] {
        live.filter { $0.value.step == step }.sorted { $0.value.serial < $1.value.serial }.map(\.key)
    }

    /// A frame the server sent for `id`.
    package mutating func route(_ id: String, _ event: GraphQLOperationEvent) -> Route {
        guard var operation = live[id] else {
            guard recent[id] == true else { return .protocolError }
            return event.isEnd ? .absorbed : .pushed
        }
        if operation.isEnded { return .protocolError }
        guard operation.isConsumed else {
            guard event.isEnd else { return .pushed }
            forget(id, byClient: false)
            return .absorbed
        }
        if event.isEnd { operation.isEnded = true }
        let queued = operation.pending.count - operation.pendingHead
        if !event.isEnd && (queued >= Self.pendingCapacity || operation.pendingBytes + event.byteCount > Self.pendingByteCapacity) {
            return .pushed  // past the bound the newest results go (an end is always queued: it ends the step)
        }
        live[id] = nil  // a unique reference: no copy on append
        operation.pending.append(event)
        operation.pendingBytes += event.byteCount
        live[id] = operation
        return .queued(isEnd: event.isEnd)
    }

    /// The oldest result of `id` not yet taken.
    package mutating func take(_ id: String) -> GraphQLOperationEvent? {
        guard var operation = live[id], operation.pendingHead < operation.pending.count else { return nil }
        live[id] = nil
        let event = operation.pending[operation.pendingHead]
        operation.pendingHead += 1
        operation.pendingBytes -= event.byteCount
        if operation.pendingHead == operation.pending.count {
            operation.pending.removeAll(keepingCapacity: true)
            operation.pendingHead = 0
        }
        live[id] = operation
        return event
    }

    /// The step is done with `id`: results it did not take are returned (to count as pushed); an operation the
    /// server ended leaves the map, a running one stays until its end (or the client's).
    package mutating func release(_ id: String) -> [GraphQLOperationEvent] {
        guard var operation = live[id] else { return [] }
        let leftover = Array(operation.pending[operation.pendingHead...])
        operation.pending = []
        operation.pendingHead = 0
        operation.pendingBytes = 0
        operation.isConsumed = false
        if operation.isEnded { forget(id, byClient: false) } else { live[id] = operation }
        return leftover
    }

    /// The client ends `id` (it sends `complete`): the results it had not taken are returned; nil when `id` is not
    /// live or the server already ended it (then it is released, and nothing is to be sent).
    package mutating func endByClient(_ id: String) -> [GraphQLOperationEvent]? {
        guard let operation = live[id] else { return nil }
        if operation.isEnded {
            _ = release(id)
            return nil
        }
        let leftover = Array(operation.pending[operation.pendingHead...])
        forget(id, byClient: true)
        return leftover
    }

    private mutating func forget(_ id: String, byClient: Bool) {
        live[id] = nil
        recent.set(byClient, for: id)
    }
}

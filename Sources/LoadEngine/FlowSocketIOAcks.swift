import JSON
import Runtime

/// The socketio acks of one connection, bounded for a soak: the last ``window`` ack ids asked for, each answered
/// or not (a second answer within the window, or an answer to an id never asked for, is the ack check's
/// violation); and the ack the current `emit` awaits, recorded before its event is sent so an ack that arrives
/// while the send is still suspended (write backpressure) is kept for the wait, not dropped as late.
package struct SocketIOAcks {
    package static let window = 4096

    /// What an answer is.
    package enum Answer: Equatable {
        /// The first answer to an id asked for.
        case first
        /// A second answer to an id within the window.
        case duplicate
        /// An id never asked for on this connection.
        case neverAsked
        /// An id older than the window: no longer checked.
        case forgotten
    }

    /// Asked-for ids → answered.
    private var answered = RecentKeys<UInt64, Bool>(capacity: window)
    private var highest: UInt64?
    /// The ack id the `emit` in progress awaits (set before its send, cleared when its wait ends).
    package private(set) var awaited: UInt64?
    /// The awaited ack, if it came before the wait was armed: its arguments and arrival.
    package private(set) var early: (arguments: [JSONValue], arrival: LoopClock.Instant)?

    package init() {}

    /// Ids remembered (at most ``window``).
    package var count: Int { answered.count }

    /// Asks for `id`: false when it is already asked for within the window.
    package mutating func ask(_ id: UInt64) -> Bool {
        highest = max(highest ?? id, id)
        if answered[id] != nil { return false }
        answered.set(false, for: id)
        return true
    }

    /// An answer for `id` arrived.
    package mutating func answer(_ id: UInt64) -> Answer {
        guard let wasAnswered = answered[id] else {
            guard let highest, id <= highest else { return .neverAsked }
            // Ids are asked for in increasing order: one below the highest not in the window was asked for long ago.
            return .forgotten
        }
        if wasAnswered { return .duplicate }
        answered.set(true, for: id)
        return .first
    }

    /// The `emit` in progress will await `id` (before its event is sent).
    package mutating func expect(_ id: UInt64) {
        awaited = id
        early = nil
    }

    /// The awaited ack came before its wait was armed: kept for ``takeEarly()``. False when `id` is not awaited.
    package mutating func keepEarly(_ id: UInt64, arguments: [JSONValue], arrival: LoopClock.Instant) -> Bool {
        guard awaited == id, early == nil else { return false }
        early = (arguments, arrival)
        return true
    }

    /// The early ack, if any, taken as the wait starts.
    package mutating func takeEarly() -> (arguments: [JSONValue], arrival: LoopClock.Instant)? {
        defer { early = nil }
        return early
    }

    /// The emit's wait ended.
    package mutating func endAwait() {
        awaited = nil
        early = nil
    }
}

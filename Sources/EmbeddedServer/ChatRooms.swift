import Runtime
import Synchronization

/// The `/chat` rooms of one server, shared by all its loops: room name → members, behind one ``Lock``.
///
/// One registry rather than one per loop: a join, a leave and a broadcast's member list must be atomic with
/// respect to each other (a member either is in the list a `say` fans out to, or has left), and a `say` needs
/// every member wherever it lives; per-loop registries would make each broadcast visit every loop. The lock is
/// held only to change a room or take a copy-on-write snapshot of its member array (O(1)); the fan-out runs
/// after it is released, so no member code ever runs under it.
package final class ChatRooms: Sendable {
    package let limits: ChatLimits

    private struct Room {
        var members: [ChatSession] = []
        /// Member id → index in `members`, so a leave is O(1) (swap-remove).
        var positions: [Int: Int] = [:]
    }

    private let rooms = Lock<[String: Room]>([:])
    /// The last connection id handed out (ids start at 1, one per `/chat` connection, never reused).
    private let lastID = Atomic<Int>(0)

    package init(limits: ChatLimits = ChatLimits()) {
        self.limits = limits
    }

    /// A new connection id.
    func nextID() -> Int { lastID.add(1, ordering: .relaxed).newValue }

    /// What a join did.
    enum JoinOutcome: Equatable {
        case joined, alreadyMember, roomFull, tooManyRooms
    }

    func join(_ room: String, member: ChatSession) -> JoinOutcome {
        rooms.withLock { rooms in
            if let existing = rooms[room] {
                if existing.positions[member.id] != nil { return .alreadyMember }
                if existing.members.count >= limits.maximumMembers { return .roomFull }
            } else if rooms.count >= limits.maximumRooms {
                return .tooManyRooms
            }
            // Taken out while edited, so the member array is uniquely referenced (appended in place).
            var entry = rooms.removeValue(forKey: room) ?? Room()
            entry.positions[member.id] = entry.members.count
            entry.members.append(member)
            rooms[room] = entry
            return .joined
        }
    }

    /// Removes `member` from `room`; false if it was not in it. An empty room is deleted.
    @discardableResult
    func leave(_ room: String, member: ChatSession) -> Bool {
        rooms.withLock { rooms in
            guard rooms[room]?.positions[member.id] != nil, var entry = rooms.removeValue(forKey: room),
                  let index = entry.positions.removeValue(forKey: member.id) else { return false }
            let last = entry.members.removeLast()
            if index < entry.members.count {
                entry.members[index] = last
                entry.positions[last.id] = index
            }
            if !entry.members.isEmpty { rooms[room] = entry }
            return true
        }
    }

    /// The members of `room` now (a copy-on-write snapshot), or nil if nobody is in it.
    func members(of room: String) -> [ChatSession]? {
        rooms.withLock { $0[room]?.members }
    }

    /// Rooms that have at least one member.
    package var roomCount: Int { rooms.withLock { $0.count } }

    /// The loop index of each member of `room` (tests place clients on different loops with it).
    package func memberLoops(of room: String) -> [Int] {
        members(of: room)?.map(\.loop.index) ?? []
    }

    /// Memberships over all rooms (a connection in three rooms counts three times).
    package var membershipCount: Int { rooms.withLock { $0.values.reduce(0) { $0 + $1.members.count } } }
}

/// What one peer can make the `/chat` service hold; every limit is refused with an `error` reply naming it.
package struct ChatLimits: Sendable, Hashable {
    /// Most rooms a server holds at once; a join that would create one more is refused.
    package var maximumRooms = 65_536
    /// Most members of one room.
    package var maximumMembers = 100_000
    /// Most rooms one connection is in at once.
    package var maximumRoomsPerConnection = 64
    /// Bytes queued for a member (in its socket's write queue, or queued and not yet flushed) past which a
    /// `said` is dropped for that member and counted (``ServerStatistics/chatDropped``).
    package var maximumQueuedBytes = 1 << 20

    package init() {}
}

import Runtime

/// At most `limit` opening handshakes in flight per event loop (TCP connect, TLS, upgrade); the rest wait their
/// turn in arrival order. ``WebSocketManager/connect()`` passes through it when its configuration has one
/// (``WebSocketClientConfiguration/handshakeWindow``; `wsload run` sets one for its client loops).
///
/// Started all at once, 19,000 connects put 19,000 SYNs, accepts and upgrades in the queues of two loops and a
/// server: each handshake then waits for all the others, and its figures measure the queue (upgrade p99 of seconds
/// while the whole batch takes as long with or without the queue). With a window the same batch goes through as
/// fast — the CPU bounds it either way — but each handshake waits only for the window ahead of it (Little's law:
/// about `limit` × loops ÷ throughput), the server's accept queue stays shallow, and a loop keeps answering the
/// I/O of connections already open. A connection waiting for its turn has not started connecting: its connect and
/// upgrade figures begin when it leaves the window (the time to open all of them shows the wait).
package final class HandshakeWindow: Sendable {
    /// Handshakes in flight per loop.
    package let limit: Int
    private let slots: [Slot]

    /// A window for each of `loops` (a manager on another loop passes through unwindowed).
    package init(loops: [EventLoop], limit: Int = HandshakeWindow.defaultLimit) {
        self.limit = max(1, limit)
        slots = loops.map { Slot(loop: $0, limit: max(1, limit)) }
    }

    /// Per loop: enough in flight that a loop's reads and writes batch (one poll serves many), few enough that
    /// a handshake waits for little more than its own round trips.
    package static let defaultLimit = 128

    /// Waits until `loop` has a free place, then takes it; call ``leave(on:)`` once the handshake is over. Call on
    /// `loop`'s thread. Returns false (having taken nothing) for a loop the window does not cover.
    /// - Throws: `CancellationError` if the task is cancelled while it waits (it then holds no place).
    package func enter(on loop: EventLoop) async throws -> Bool {
        guard let slot = slot(for: loop) else { return false }
        try await slot.enter()
        return true
    }

    /// Gives back the place taken by ``enter(on:)`` (to the first waiter, if any). Call on `loop`'s thread.
    package func leave(on loop: EventLoop) {
        slot(for: loop)?.leave()
    }

    /// Handshakes in flight on `loop` now (for tests). Call on `loop`'s thread.
    package func inFlight(on loop: EventLoop) -> Int { slot(for: loop)?.inFlight ?? 0 }

    /// Tasks waiting for a place on `loop` now (for tests). Call on `loop`'s thread.
    package func waiting(on loop: EventLoop) -> Int { slot(for: loop)?.waitingCount ?? 0 }

    private func slot(for loop: EventLoop) -> Slot? {
        slots.first { $0.loop === loop }
    }
}

/// One loop's share of a ``HandshakeWindow``: confined to that loop's thread (every method runs there), so it
/// needs no lock.
private final class Slot: @unchecked Sendable {
    let loop: EventLoop
    let limit: Int
    private(set) var inFlight = 0
    /// Waiters in arrival order from `waitersStart` on (a queue that is emptied, never shifted).
    private var waiters: [Waiter] = []
    private var waitersStart = 0
    private var nextWaiterID = 0

    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Void, any Error>?
    }

    init(loop: EventLoop, limit: Int) {
        self.loop = loop
        self.limit = limit
    }

    var waitingCount: Int { waiters[waitersStart...].reduce(0) { $0 + ($1.continuation == nil ? 0 : 1) } }

    func enter() async throws {
        precondition(loop.inLoopThread, "HandshakeWindow.enter must be called on \(loop)'s thread")
        if inFlight < limit && waitersStart == waiters.count {
            inFlight += 1
            return
        }
        let id = nextWaiterID
        nextWaiterID += 1
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled { return continuation.resume(throwing: CancellationError()) }
                waiters.append(Waiter(id: id, continuation: continuation))
            }
        } onCancel: {
            loop.perform { self.cancelWaiter(id) }
        }
    }

    func leave() {
        precondition(loop.inLoopThread, "HandshakeWindow.leave must be called on \(loop)'s thread")
        // The place passes to the first waiter still waiting; with none, it is free.
        while waitersStart < waiters.count {
            let continuation = waiters[waitersStart].continuation
            waitersStart += 1
            compactIfDrained()
            if let continuation { return continuation.resume() }
        }
        inFlight -= 1
    }

    /// A cancelled waiter leaves the queue (its slot in the array is emptied; the queue skips it).
    private func cancelWaiter(_ id: Int) {
        guard let index = waiters[waitersStart...].firstIndex(where: { $0.id == id }),
            let continuation = waiters[index].continuation
        else { return }  // already admitted (it then holds a place and leaves as usual)
        waiters[index].continuation = nil
        continuation.resume(throwing: CancellationError())
        while waitersStart < waiters.count && waiters[waitersStart].continuation == nil { waitersStart += 1 }
        compactIfDrained()
    }

    private func compactIfDrained() {
        if waitersStart == waiters.count {
            waiters.removeAll(keepingCapacity: waiters.capacity <= 1024)
            waitersStart = 0
        }
    }
}

import Runtime

/// The event stream of ``WebSocketManager/run()`` (and of ``ReconnectingWebSocket/run()``) with backpressure:
/// a single-consumer queue whose producer — the connection's reader — waits while the consumer has
/// `highWaterMark` messages (or `byteHighWaterMark` message bytes) pending, until it is back at half of them.
///
/// While the reader waits it reads nothing more from the socket, so the transport's own high-water mark stops
/// reading from the kernel and TCP flow control pushes back on the server: a server that floods a slow
/// consumer costs a bounded amount of memory (this queue, one read buffer, the kernel's socket buffer) instead
/// of growing without limit. Only messages count and only message yields wait; `.connected`, `.error` and
/// `.disconnected` are never held back (there are at most a few per connection).
///
/// Once ``release()`` was called (the connection is closing or was dropped) the producer no longer waits:
/// messages that arrive past the high-water mark are discarded and counted (``discardedCount``), so a
/// closing handshake never waits for a consumer that stopped reading. A consumer whose task is cancelled ends
/// the stream for good (as with `AsyncStream`): later events are dropped and the producer never waits again.
package final class EventQueue<Element: Sendable>: Sendable {
    /// Pending messages at which the producer waits.
    package let highWaterMark: Int
    /// Pending message bytes at which the producer waits (a single larger message still passes).
    package let byteHighWaterMark: Int

    private struct Item {
        var element: Element
        /// The message's payload bytes; nil for an event that is not a message (never waits, not counted).
        var bytes: Int?
    }

    private struct State {
        var entries: [Item?] = []
        var head = 0
        var messageCount = 0
        var byteCount = 0
        var discardedCount = 0
        var consumer: CheckedContinuation<Element?, Never>?
        var producer: CheckedContinuation<Void, Never>?
        var isFinished = false
        var isTerminated = false
        var isReleased = false
    }

    private let state = Lock(State())

    /// - Parameters:
    ///   - highWaterMark: pending messages at which the producer waits (at least 1).
    ///   - byteHighWaterMark: pending message bytes at which it waits (at least 1).
    package init(highWaterMark: Int, byteHighWaterMark: Int) {
        self.highWaterMark = max(1, highWaterMark)
        self.byteHighWaterMark = max(1, byteHighWaterMark)
    }

    /// The stream the one consumer iterates. Cancelling the consumer's task ends it.
    package func makeStream() -> AsyncStream<Element> {
        AsyncStream(unfolding: { await self.next() }, onCancel: { self.terminate() })
    }

    /// Messages the consumer has not taken yet.
    package var pendingCount: Int { state.withLock { $0.messageCount } }

    /// Messages discarded after ``release()`` because the consumer was a high-water mark behind.
    package var discardedCount: Int { state.withLock { $0.discardedCount } }

    /// Appends `element` (or hands it to the waiting consumer). `messageBytes` marks a message and its size.
    /// - Returns: true when the consumer is now a high-water mark behind: the producer should
    ///   ``waitForRoom()`` before it reads more.
    @discardableResult
    package func yield(_ element: Element, messageBytes: Int? = nil) -> Bool {
        var consumer: CheckedContinuation<Element?, Never>?
        let isFull = state.withLock { state -> Bool in
            guard !state.isFinished, !state.isTerminated else { return false }
            if let waiting = state.consumer {
                state.consumer = nil
                consumer = waiting
                return false
            }
            if messageBytes != nil, state.isReleased, Self.isFull(state, highWaterMark, byteHighWaterMark) {
                state.discardedCount &+= 1
                return false
            }
            state.entries.append(Item(element: element, bytes: messageBytes))
            if let bytes = messageBytes {
                state.messageCount += 1
                let (sum, isOverflow) = state.byteCount.addingReportingOverflow(max(0, bytes))
                state.byteCount = isOverflow ? Int.max : sum  // saturates: it only compares with the mark
            }
            return !state.isReleased && Self.isFull(state, highWaterMark, byteHighWaterMark)
        }
        consumer?.resume(returning: element)
        return isFull
    }

    private static func isFull(_ state: State, _ highWaterMark: Int, _ byteHighWaterMark: Int) -> Bool {
        state.messageCount >= highWaterMark || state.byteCount >= byteHighWaterMark
    }

    /// Waits until the consumer is back at half the high-water marks, the queue is released or terminated,
    /// or the calling task is cancelled.
    package func waitForRoom() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let isWaiting = state.withLock { state -> Bool in
                    guard !state.isReleased, !state.isTerminated, !state.isFinished, !Task.isCancelled,
                          state.messageCount > highWaterMark / 2 || state.byteCount > byteHighWaterMark / 2
                    else { return false }
                    state.producer = continuation
                    return true
                }
                if !isWaiting { continuation.resume() }
            }
        } onCancel: {
            wakeProducer()
        }
    }

    /// The producer no longer waits from now on; messages past the high-water mark are discarded.
    package func release() {
        state.withLock { $0.isReleased = true }
        wakeProducer()
    }

    /// No more events: the consumer gets what is pending, then nil.
    package func finish() {
        let consumer = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            state.isFinished = true
            defer { state.consumer = nil }
            return state.entries.count > state.head ? nil : state.consumer
        }
        consumer?.resume(returning: nil)
        wakeProducer()
    }

    private func wakeProducer() {
        state.withLock { state in
            defer { state.producer = nil }
            return state.producer
        }?.resume()
    }

    /// The consumer went away (its task was cancelled): pending events are dropped, nothing waits again.
    private func terminate() {
        let consumer = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            state.isTerminated = true
            state.entries = []
            state.head = 0
            state.messageCount = 0
            state.byteCount = 0
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume(returning: nil)
        wakeProducer()
    }

    /// The consumer's next event: pending ones first, then it waits; nil once finished or terminated.
    private func next() async -> Element? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
            var producer: CheckedContinuation<Void, Never>?
            let result = state.withLock { state -> (element: Element?, isReady: Bool) in
                guard !state.isTerminated else { return (nil, true) }
                guard state.head < state.entries.count, let item = state.entries[state.head] else {
                    if state.isFinished { return (nil, true) }
                    state.consumer = continuation
                    return (nil, false)
                }
                state.entries[state.head] = nil
                state.head += 1
                if state.head == state.entries.count {
                    state.entries.removeAll(keepingCapacity: true)
                    state.head = 0
                } else if state.head >= 256 && state.head * 2 >= state.entries.count {
                    state.entries.removeFirst(state.head)
                    state.head = 0
                }
                if let bytes = item.bytes {
                    state.messageCount -= 1
                    state.byteCount = max(0, state.byteCount - max(0, bytes))
                    if state.messageCount <= highWaterMark / 2 && state.byteCount <= byteHighWaterMark / 2 {
                        producer = state.producer
                        state.producer = nil
                    }
                }
                return (item.element, true)
            }
            producer?.resume()
            if result.isReady { continuation.resume(returning: result.element) }
        }
    }
}

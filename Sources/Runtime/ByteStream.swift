/// An ordered, reliable byte stream pinned to one event loop: TCP, or TLS over TCP.
///
/// Every method must be called on ``loop``'s thread: from an actor whose executor is that loop, or a
/// task that prefers its ``EventLoop/taskExecutor``. A cancelled read, write or handshake closes the
/// stream (cancellation is structural: no operation outlives its task) — except a write cancelled while it
/// still waits its turn behind another writer (TLS serializes concurrent writers), which has sent nothing:
/// it leaves the queue and the stream stays open. Concurrent writes go out whole, in call order.
public protocol ByteStream: AnyObject, Sendable {
    /// The loop this stream lives on.
    var loop: EventLoop { get }

    /// Appends at most `maxBytes` received bytes to `buffer`, waiting until at least one is available.
    /// - Returns: the number of bytes appended; `0` means the peer finished sending (EOF).
    func read(into buffer: inout [UInt8], maxBytes: Int) async throws -> Int

    /// Sends `bytes` in order. Returns once they are handed to the kernel or queued below the
    /// write high-water mark; above it the caller waits until the queue drains (backpressure).
    func write(_ bytes: [UInt8]) async throws

    /// Sends `bytes` in order without ever waiting, for a caller with no task to suspend (a ``LoopTimer``'s
    /// callback): what the transport cannot take at once is queued, whatever the high-water mark. Nothing is
    /// thrown: a failure closes the stream with its error, so the pending or the next read reports it. Writes
    /// already under way or waiting their turn go out first, each whole.
    func writeWithoutWaiting(_ bytes: [UInt8])

    /// ``write(_:)`` when it would not wait, as a plain call (no async frame): returns true once `bytes` are handed to
    /// the kernel or queued below the high-water mark; returns false, having sent nothing, when ``write(_:)`` would
    /// wait (a writer ahead, or the queue would pass the mark), and the caller then calls it. Throws what it would.
    func writeIfReady(_ bytes: [UInt8]) throws -> Bool

    /// Half-closes: flushes queued writes, then sends FIN (TLS: close_notify first). Reading continues.
    func shutdownWrite() async throws

    /// Closes at once; pending operations fail with `closed`. Idempotent; callable from any thread.
    func close()

    /// For ``withReadsCancelledOnce(isolation:_:)``: while on, a read does not register a cancellation handler of its
    /// own, because the caller registered one for all of them. Returns false when the stream cannot (then nothing
    /// changes).
    func setReadsCancelledByCaller(_ isOn: Bool) -> Bool

    /// What a read cancelled while it waits does, for a caller's handler: the stream closes with `CancellationError`.
    /// Callable from any thread.
    func cancelReads()

    /// For a reader that takes bytes on the loop thread as they arrive instead of parking a task in ``read(into:maxBytes:)``
    /// per message: sets (nil clears) what is called whenever bytes arrive while no read waits, and once when the stream
    /// ends, fails or closes (the handler is then cleared). The handler takes them with ``readIfAvailable(into:maxBytes:)``;
    /// it may be called with nothing to take. Starts reading. Returns false when the stream cannot (then nothing changes).
    func setReadableHandler(_ handler: (() -> Void)?) throws -> Bool

    /// ``read(into:maxBytes:)`` without waiting: appends what was received (at most `maxBytes`), returns `0` at the end of
    /// the stream, throws the stream's failure, or returns nil when nothing is there yet.
    func readIfAvailable(into buffer: inout [UInt8], maxBytes: Int) throws -> Int?
}

extension ByteStream {
    /// Streams without a fast path always send through ``write(_:)``.
    public func writeIfReady(_ bytes: [UInt8]) throws -> Bool { false }

    /// Streams whose reads always register their own handler (``withReadsCancelledOnce(isolation:_:)`` then never
    /// calls ``cancelReads()``, which here just closes).
    public func setReadsCancelledByCaller(_ isOn: Bool) -> Bool { false }
    public func cancelReads() { close() }

    /// Streams whose bytes are only read by a task (TLS: a record is decrypted by the reading task).
    public func setReadableHandler(_ handler: (() -> Void)?) throws -> Bool { false }
    public func readIfAvailable(into buffer: inout [UInt8], maxBytes: Int) throws -> Int? { nil }

    /// Runs `body` with one cancellation handler for every read in it, instead of one per read: a connection's reader
    /// reads once per message, and each handler is two runtime calls under the task's status-record lock and two
    /// executor switches (closed echo: 6 of the 14 locks per message, perf probes). Cancelling the task while `body`
    /// runs does what it does to a read (``cancelReads()``), waiting or not. Call it from the task that reads; reads
    /// by another task meanwhile are not covered.
    public func withReadsCancelledOnce<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async -> T
    ) async -> T {
        guard setReadsCancelledByCaller(true) else { return await body() }
        defer { _ = setReadsCancelledByCaller(false) }
        return await withTaskCancellationHandler(operation: {
            _ = isolation  // captured: isolated to the caller's actor (see withCancellationHandlerOnCaller)
            return await body()
        }, onCancel: { cancelReads() }, isolation: isolation)
    }

    /// Appends whatever is available (up to 64 KiB) to `buffer`; `0` means EOF.
    public func read(into buffer: inout [UInt8]) async throws -> Int {
        try await read(into: &buffer, maxBytes: 64 * 1024)
    }

    /// Reads until EOF or until `limit` bytes, whichever comes first.
    public func readAll(limit: Int = 64 * 1024 * 1024) async throws -> [UInt8] {
        var buffer: [UInt8] = []
        while buffer.count < limit {
            if try await read(into: &buffer, maxBytes: limit - buffer.count) == 0 { break }
        }
        return buffer
    }

    /// Reads exactly `count` bytes.
    /// - Throws: `RuntimeError` with code `eof` if the stream ends first.
    public func read(exactly count: Int) async throws -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(count)
        while buffer.count < count {
            if try await read(into: &buffer, maxBytes: count - buffer.count) == 0 {
                throw RuntimeError(.endOfStream, function: "read(exactly:)",
                                   detail: "stream ended after \(buffer.count) of \(count) bytes")
            }
        }
        return buffer
    }
}

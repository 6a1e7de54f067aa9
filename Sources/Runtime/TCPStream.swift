import CLibUV
import Glibc

/// The libuv TCP handle behind a ``TCPConnection``; loop-confined.
///
/// Reading starts with the first `read` and continues into `received` until the reader falls
/// `readHighWaterMark` bytes behind. Writes try `uv_try_write` first and queue only the remainder.
final class TCPStream: LoopHandle, @unchecked Sendable {
    let options: TCPOptions
    var tcp: UnsafeMutablePointer<uv_tcp_t> { rawHandle.assumingMemoryBound(to: uv_tcp_t.self) }
    var stream: UnsafeMutablePointer<uv_stream_t> { rawHandle.assumingMemoryBound(to: uv_stream_t.self) }

    /// Why the stream was closed; what pending and later operations fail with.
    private var closeReason: (any Error)?
    private var isResetOnClose = false

    // The read state is unchecked for exclusive access at run time: loop-confined, each access a read, a store, an
    // append or a swap with a caller's buffer, running nothing that reaches the stream (5 checks per read callback).
    @exclusivity(unchecked) private var received: [UInt8] = []
    @exclusivity(unchecked) private var receivedStart = 0
    @exclusivity(unchecked) private var isReading = false
    @exclusivity(unchecked) private var readEnd: RuntimeError?
    @exclusivity(unchecked) private var readWaiter: UnsafeContinuation<Void, any Error>?
    /// Set by ``TCPConnection/setReadsCancelledByCaller(_:)``: a caller's handler covers the reads (`cancelReads()`).
    var areReadsCancelledByCaller = false
    /// While a reader waits: its buffer, the most bytes it takes, and how many were appended to it.
    private var waitingBuffer: [UInt8] = []
    private var waitingLimit = 0
    private var waitingCount = 0
    /// Run on the loop thread as bytes come while no read waits, and as the stream ends (``setReadableHandler(_:)``).
    @exclusivity(unchecked) private var readableHandler: (() -> Void)?

    private var queuedWriteBytes = 0
    /// Every byte ``write(_:)`` accepted (handed over at once or queued), for ``deliveredBytes``.
    private var acceptedWriteBytes = 0
    private var writeFailure: RuntimeError?
    private var writeWaiters: [CheckedContinuation<Void, any Error>] = []

    private var connectWaiter: CheckedContinuation<Void, any Error>?
    private var connectTimer: TimerHandle?
    private var shutdownWaiter: CheckedContinuation<Void, any Error>?

    init(loop: EventLoop, options: TCPOptions) throws(RuntimeError) {
        self.options = options
        super.init(loop: loop, size: MemoryLayout<uv_tcp_t>.size)
        try uvCheck(uv_tcp_init(loop.uvLoop, tcp), "uv_tcp_init")
        didInitialize()
        _ = uv_tcp_nodelay(tcp, options.isNoDelay ? 1 : 0)
        if let keepAlive = options.keepAlive {
            _ = uv_tcp_keepalive(tcp, 1, UInt32(clamping: max(1, keepAlive.roundedUpMilliseconds / 1000)))
        }
    }

    var failure: any Error { closeReason ?? RuntimeError(.closed, function: "tcp", detail: "connection is closed") }

    // MARK: Connect

    func connect(to address: SocketAddress) async throws {
        if let source = options.sourceAddress { try bindSource(source) }
        try await withCancellationHandlerOnCaller {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard !isClosing else { return continuation.resume(throwing: failure) }
                let request = allocateZeroed(uv_connect_t.self)
                request.pointee.data = Unmanaged.passUnretained(self).toOpaque()
                let status = address.withSockaddr { address in
                    uv_tcp_connect(request, tcp, address) { request, status in
                        // libuv runs this before the handle's close callback, so the owner is alive.
                        let owner = Unmanaged<TCPStream>.fromOpaque(request!.pointee.data).takeUnretainedValue()
                        request!.deallocate()
                        owner.didConnect(status: status)
                    }
                }
                if status < 0 {
                    request.deallocate()
                    return continuation.resume(throwing: RuntimeError(uvStatus: status, function: "uv_tcp_connect"))
                }
                connectWaiter = continuation
                loop.operationStarted()
                if let timeout = options.connectTimeout {
                    let timer = TimerHandle(loop: loop)
                    connectTimer = timer
                    timer.start(milliseconds: timeout.roundedUpMilliseconds) { [unowned self] in
                        closeReason = RuntimeError(.timedOut, function: "connect",
                                                   detail: "\(address) did not answer within \(timeout)")
                        close()
                    }
                }
            }
        } onCancel: {
            loop.perform { self.cancel() }
        }
    }

    private func didConnect(status: Int32) {
        connectTimer?.close()
        connectTimer = nil
        guard let waiter = connectWaiter else { return }
        connectWaiter = nil
        loop.operationEnded()
        if status == 0 {
            waiter.resume()
        } else if isClosing {
            waiter.resume(throwing: failure)
        } else {
            waiter.resume(throwing: RuntimeError(uvStatus: status, function: "uv_tcp_connect"))
        }
    }

    // MARK: Read

    /// Its one await is the wait for bytes; every other case is decided by ``takeAvailable(into:maxBytes:)``, out of
    /// line, so that none of its values (the errors it throws, the exclusivity scratch of its accesses) is in this
    /// async frame, which an idle connection's task holds for as long as it waits.
    func read(into buffer: inout [UInt8], maxBytes: Int) async throws -> Int {
        while true {
            if let count = try takeAvailable(into: &buffer, maxBytes: maxBytes) { return count }
            // The caller's buffer waits with the reader: the bytes that wake it are appended to it straight from
            // the loop's scratch buffer (one copy, not two through `received`).
            swap(&buffer, &waitingBuffer)
            waitingLimit = maxBytes
            do {
                // Unsafe, not checked: its two resumers (didRead, willClose) clear `readWaiter` first, and a checked
                // continuation costs an allocation per read.
                if areReadsCancelledByCaller {
                    try await withUnsafeThrowingContinuation { park($0) }
                } else {
                    try await waitCancellably()
                }
            } catch {
                swap(&buffer, &waitingBuffer)
                waitingBuffer = []
                waitingCount = 0
                throw error
            }
            swap(&buffer, &waitingBuffer)
            if waitingCount > 0 {
                defer { waitingCount = 0 }
                return waitingCount
            }
        }
    }

    /// The wait of a read that registers its own cancellation handler. Out of line: a connection's reader (whose
    /// caller registered one) parks in ``read(into:maxBytes:)`` without this frame.
    @inline(never)
    private func waitCancellably() async throws {
        try await withCancellationHandlerOnCaller {
            try await withUnsafeThrowingContinuation { park($0) }
        } onCancel: {
            cancelOnLoop()
        }
    }

    /// ``cancel()`` from any thread (a cancellation handler's).
    func cancelOnLoop() {
        loop.perform { self.cancel() }
    }

    /// The waiting read's continuation, resumed by didRead or willClose (at once if the stream is closing already).
    private func park(_ continuation: UnsafeContinuation<Void, any Error>) {
        if isClosing { return continuation.resume(throwing: failure) }
        readWaiter = continuation
        loop.operationStarted()
    }

    /// What a read returns without waiting: bytes already received, 0 at the end of the stream, or the stream's
    /// failure thrown; nil when it must wait (reading is started).
    @inline(never)
    private func takeAvailable(into buffer: inout [UInt8], maxBytes: Int) throws -> Int? {
        let available = received.count - receivedStart
        if available > 0 && buffer.isEmpty && receivedStart == 0 && available <= maxBytes && received.count > 16 * 1024 {
            // Hand the whole receive buffer over instead of copying it (bulk transfers read this way);
            // keep the caller's empty buffer (and its capacity) for the next bytes.
            swap(&buffer, &received)
            if !isReading && readEnd == nil && !isClosing { try startReading() }
            return available
        }
        if available > 0 {
            let count = min(available, maxBytes)
            buffer.append(contentsOf: received[receivedStart..<(receivedStart + count)])
            receivedStart += count
            if receivedStart == received.count {
                // Keep a small buffer for the next read; give big ones back (idle connections stay small).
                received.removeAll(keepingCapacity: received.capacity <= 16 * 1024)
                receivedStart = 0
            }
            if !isReading && readEnd == nil && !isClosing { try startReading() }
            return count
        }
        if let readEnd {
            if readEnd.code == .endOfStream { return 0 }
            throw readEnd
        }
        if isClosing { throw failure }
        if readWaiter != nil {
            throw RuntimeError(.invalidArgument, function: "read", detail: "another task is already reading")
        }
        if !isReading { try startReading() }
        return nil
    }

    private func startReading() throws(RuntimeError) {
        try uvCheck(uv_read_start(stream, { handle, _, buffer in
            let scratch = EventLoop.from(handle!.pointee.loop).readScratch
            buffer!.pointee = uv_buf_init(scratch.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(scratch.count))
        }, { handle, count, _ in
            Unmanaged<TCPStream>.fromOpaque(handle!.pointee.data).takeUnretainedValue().didRead(count: count)
        }), "uv_read_start")
        isReading = true
    }

    private func stopReading() {
        if isReading {
            uv_read_stop(stream)
            isReading = false
        }
    }

    private func didRead(count: Int) {
        if count > 0 {
            var direct = 0
            if readWaiter != nil {
                direct = min(count, waitingLimit - waitingCount)
                waitingBuffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: loop.readScratch[0..<direct]))
                waitingCount += direct
            }
            if direct < count {
                received.append(contentsOf: UnsafeRawBufferPointer(rebasing: loop.readScratch[direct..<count]))
            }
            if received.count - receivedStart >= options.readHighWaterMark { stopReading() }
        } else if count < 0 {
            readEnd = RuntimeError(uvStatus: Int32(count), function: "read")
            stopReading()
        } else {
            return
        }
        if let waiter = readWaiter {
            readWaiter = nil
            loop.operationEnded()
            waiter.resume()
        } else if let readableHandler {
            readableHandler()
        }
    }

    /// ``ByteStream/setReadableHandler(_:)``. While set, it counts as a waiting reader.
    func setReadableHandler(_ handler: (() -> Void)?) throws(RuntimeError) {
        if (readableHandler == nil) != (handler == nil) {
            if handler == nil { loop.operationEnded() } else { loop.operationStarted() }
        }
        readableHandler = handler
        if handler != nil && !isReading && readEnd == nil && !isClosing { try startReading() }
    }

    /// ``ByteStream/readIfAvailable(into:maxBytes:)`` (reading is started when nothing is there).
    func readIfAvailable(into buffer: inout [UInt8], maxBytes: Int) throws -> Int? {
        try takeAvailable(into: &buffer, maxBytes: maxBytes)
    }

    // MARK: Write

    func write(_ bytes: [UInt8]) async throws {
        if try writeIfReady(bytes) { return }
        // What is left: a message above the high-water mark, or one that would take the queue past it.
        if isClosing { throw failure }
        if let writeFailure { throw writeFailure }
        acceptedWriteBytes &+= bytes.count
        var written = 0
        if queuedWriteBytes == 0 {
            written = try tryWrite(bytes)
            if written == bytes.count { return }
        }
        try enqueueWrite(bytes[written...])
        if queuedWriteBytes > options.writeHighWaterMark {
            try await withCancellationHandlerOnCaller {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    if isClosing { return continuation.resume(throwing: failure) }
                    if let writeFailure { return continuation.resume(throwing: writeFailure) }
                    writeWaiters.append(continuation)
                    loop.operationStarted()
                }
            } onCancel: {
                loop.perform { self.cancel() }
            }
        }
    }

    /// ``ByteStream/writeIfReady(_:)``: when `bytes` fit below the high-water mark together with what is queued, sends
    /// them as ``write(_:)`` does (`uv_try_write` when nothing is queued, the rest queued with `uv_write`) and returns
    /// true; write would not have waited. Otherwise sends nothing and returns false.
    func writeIfReady(_ bytes: [UInt8]) throws -> Bool {
        if isClosing { throw failure }
        if let writeFailure { throw writeFailure }
        guard !bytes.isEmpty else { return true }
        guard bytes.count <= options.writeHighWaterMark - queuedWriteBytes else { return false }
        acceptedWriteBytes &+= bytes.count
        var written = 0
        if queuedWriteBytes == 0 {
            written = try tryWrite(bytes)
            if written == bytes.count { return true }
        }
        try enqueueWrite(bytes[written...])
        return true
    }

    /// `uv_try_write`: the bytes the kernel took now (0 when it would block).
    private func tryWrite(_ bytes: [UInt8]) throws(RuntimeError) -> Int {
        let status = bytes.withUnsafeBytes { raw -> Int32 in
            var buffer = uv_buf_init(
                UnsafeMutablePointer(mutating: raw.baseAddress!.assumingMemoryBound(to: CChar.self)), UInt32(raw.count))
            return uv_try_write(stream, &buffer, 1)
        }
        if status >= 0 { return Int(status) }
        if status == UV_EAGAIN.rawValue { return 0 }
        let error = RuntimeError(uvStatus: status, function: "uv_try_write")
        writeFailure = error
        throw error
    }

    /// ``ByteStream/writeWithoutWaiting(_:)``: `uv_try_write`, the rest queued with `uv_write` whatever the
    /// high-water mark. A failure closes the stream with its error, so the pending or the next read reports it.
    func writeWithoutWaiting(_ bytes: [UInt8]) {
        guard !isClosing, !bytes.isEmpty else { return }
        do throws(RuntimeError) {
            if let writeFailure { throw writeFailure }
            acceptedWriteBytes &+= bytes.count
            var written = 0
            if queuedWriteBytes == 0 {
                written = try tryWrite(bytes)
                if written == bytes.count { return }
            }
            try enqueueWrite(bytes[written...])
        } catch {
            closeReason = error
            close()
        }
    }

    /// One allocation: the `uv_write_t`, then the byte count, then a copy of the bytes.
    private static let writeHeaderSize = (MemoryLayout<uv_write_t>.size + 15) & ~15 + 16

    private func enqueueWrite(_ bytes: ArraySlice<UInt8>) throws(RuntimeError) {
        let memory = UnsafeMutableRawPointer.allocate(byteCount: Self.writeHeaderSize + bytes.count, alignment: 16)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<uv_write_t>.size)
        let payload = memory + Self.writeHeaderSize
        bytes.withUnsafeBytes { payload.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        (memory + Self.writeHeaderSize - 16).storeBytes(of: bytes.count, as: Int.self)
        let request = memory.assumingMemoryBound(to: uv_write_t.self)
        request.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        var buffer = uv_buf_init(payload.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
        let status = uv_write(request, stream, &buffer, 1) { request, status in
            let memory = UnsafeMutableRawPointer(request!)
            let count = (memory + TCPStream.writeHeaderSize - 16).load(as: Int.self)
            let owner = Unmanaged<TCPStream>.fromOpaque(request!.pointee.data).takeUnretainedValue()
            memory.deallocate()
            owner.didWrite(count: count, status: status)
        }
        if status < 0 {
            memory.deallocate()
            let error = RuntimeError(uvStatus: status, function: "uv_write")
            writeFailure = error
            throw error
        }
        queuedWriteBytes += bytes.count
    }

    private func didWrite(count: Int, status: Int32) {
        queuedWriteBytes -= count
        if status < 0 && writeFailure == nil {
            writeFailure = isClosing
                ? (closeReason as? RuntimeError ?? RuntimeError(.closed, function: "uv_write"))
                : RuntimeError(uvStatus: status, function: "uv_write")
        }
        if queuedWriteBytes <= options.writeLowWaterMark || writeFailure != nil {
            resumeWriters()
        }
    }

    private func resumeWriters() {
        guard !writeWaiters.isEmpty else { return }
        let waiters = writeWaiters
        writeWaiters = []
        for waiter in waiters {
            loop.operationEnded()
            if isClosing {
                waiter.resume(throwing: failure)
            } else if let writeFailure {
                waiter.resume(throwing: writeFailure)
            } else {
                waiter.resume()
            }
        }
    }

    /// Bytes queued in user space for the kernel (excludes what `uv_try_write` already handed over).
    var pendingWriteBytes: Int { queuedWriteBytes }

    /// Bytes the peer has acknowledged so far: what ``write(_:)`` accepted, less what waits in libuv's queue (it
    /// drops with each partial write) and in the kernel's send buffer (`TIOCOUTQ`: unsent and unacknowledged).
    /// Grows whenever the peer reads and its window opens, however slowly (the kernel wakes a writer only when a
    /// third of its buffer is free, so what the kernel took moves in far coarser steps).
    var deliveredBytes: Int {
        guard !isClosing else { return acceptedWriteBytes &- queuedWriteBytes }
        var inKernel: Int32 = 0
        var descriptor: uv_os_fd_t = -1
        // Without a descriptor or the ioctl, what the kernel took stands in (coarser, never ahead of the truth
        // by more than its buffer).
        if uv_fileno(handle, &descriptor) == 0, ioctl(descriptor, UInt(TIOCOUTQ), &inKernel) != 0 { inKernel = 0 }
        return acceptedWriteBytes &- Int(uv_stream_get_write_queue_size(stream)) &- Int(inKernel)
    }

    // MARK: Half-close and close

    func shutdownWrite() async throws {
        if isClosing { throw failure }
        if let writeFailure { throw writeFailure }
        try await withCancellationHandlerOnCaller {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if isClosing { return continuation.resume(throwing: failure) }
                let request = allocateZeroed(uv_shutdown_t.self)
                request.pointee.data = Unmanaged.passUnretained(self).toOpaque()
                let status = uv_shutdown(request, stream) { request, status in
                    let owner = Unmanaged<TCPStream>.fromOpaque(request!.pointee.data).takeUnretainedValue()
                    request!.deallocate()
                    owner.didShutdown(status: status)
                }
                if status < 0 {
                    request.deallocate()
                    return continuation.resume(throwing: RuntimeError(uvStatus: status, function: "uv_shutdown"))
                }
                shutdownWaiter = continuation
                loop.operationStarted()
            }
        } onCancel: {
            loop.perform { self.cancel() }
        }
    }

    private func didShutdown(status: Int32) {
        guard let waiter = shutdownWaiter else { return }
        shutdownWaiter = nil
        loop.operationEnded()
        if status == 0 {
            waiter.resume()
        } else {
            waiter.resume(throwing: isClosing ? failure : RuntimeError(uvStatus: status, function: "uv_shutdown"))
        }
    }

    /// Closes because the awaiting task was cancelled: waiters get `CancellationError`.
    func cancel() {
        if closeReason == nil { closeReason = CancellationError() }
        close()
    }

    /// Closes with an RST instead of a FIN (`SO_LINGER` 0), as a crashing peer would.
    func reset() {
        isResetOnClose = true
        close()
    }

    override func willClose() {
        if closeReason == nil {
            closeReason = RuntimeError(.closed, function: "close", detail: "connection was closed locally")
        }
        connectTimer?.close()
        connectTimer = nil
        stopReading()
        let error = failure
        if let waiter = connectWaiter {
            connectWaiter = nil
            loop.operationEnded()
            waiter.resume(throwing: error)
        }
        if let waiter = readWaiter {
            readWaiter = nil
            loop.operationEnded()
            waiter.resume(throwing: error)
        }
        if let waiter = shutdownWaiter {
            shutdownWaiter = nil
            loop.operationEnded()
            waiter.resume(throwing: error)
        }
        resumeWriters()
        received = []
        receivedStart = 0
        // A handler learns of the close as a reader would: its next readIfAvailable throws the failure.
        if let readableHandler {
            self.readableHandler = nil
            loop.operationEnded()
            readableHandler()
        }
    }

    override func closeHandle(_ callback: uv_close_cb) {
        if isResetOnClose && uv_tcp_close_reset(tcp, callback) == 0 { return }
        super.closeHandle(callback)
    }
}

import CLibUV
import Glibc
import Synchronization

/// One libuv loop on its own thread, and the executor that runs actors and tasks on that thread.
///
/// Actors opt in with `nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }`;
/// tasks with `Task(executorPreference: loop.taskExecutor)` or `withTaskExecutorPreference(loop.taskExecutor)`.
/// Their jobs then run on the loop thread, interleaved with libuv callbacks, so a continuation resumed by
/// an I/O callback costs no thread hop.
///
/// Jobs enqueued from other threads go through a locked inbox and one coalesced `uv_async_send`; jobs
/// enqueued on the loop thread go to a lock-free local queue drained after each poll (check phase) and,
/// while it is non-empty, on every iteration (idle phase, which also keeps the poll from blocking).
///
/// A loop must outlive every actor and task placed on it: see ``EventLoopGroup/shutdown()``.
public final class EventLoop: SerialExecutor, @unchecked Sendable, CustomStringConvertible {
    /// The loop's position in its group; stable for the loop's life.
    public let index: Int
    /// The task executor for this loop: work in a task that prefers it runs on the loop thread.
    public let taskExecutor: LoopTaskExecutor

    let uvLoop: UnsafeMutablePointer<uv_loop_t>
    /// Scratch space libuv reads into; shared by every stream on this loop (alloc and read callbacks
    /// run back to back for one stream, so no two reads overlap).
    let readScratch: UnsafeMutableRawBufferPointer
    /// The deadlines of this loop's ``LoopTimer``s, behind one libuv timer (`TimerQueue.swift`).
    let timers = TimerQueue()

    private let inbox = Lock(Inbox())
    private let loopThread = Atomic<UInt>(0)
    private let liveHandles = Atomic<Int>(0)
    private let waitingOperations = Atomic<Int>(0)
    private let droppedWork = Atomic<Int>(0)

    // Loop-confined state.
    /// Unchecked at run time, as ``isIdleActive``: an append or a swap with the drain's buffer, on the loop thread,
    /// runs nothing that could reach the loop.
    @exclusivity(unchecked) private var localQueue: [LoopWork] = []
    /// True while ``drainLocalQueue()`` runs (it may be re-entered).
    private var isDraining = false
    private var drainBuffer: [LoopWork] = []
    private var transferBuffer: [LoopWork] = []
    @exclusivity(unchecked) private var isIdleActive = false
    private var asyncHandle: UnsafeMutablePointer<uv_async_t>
    private var checkHandle: UnsafeMutablePointer<uv_check_t>
    private var idleHandle: UnsafeMutablePointer<uv_idle_t>
    private var thread: pthread_t = 0
    private var unownedSelf: UnownedSerialExecutor!
    private var unownedTaskExecutor: UnownedTaskExecutor!

    private struct Inbox {
        var items: [LoopWork] = []
        var isWakeupPending = false
        var isClosed = false
    }

    private enum LoopWork {
        case actorJob(UnownedJob)
        case taskJob(UnownedJob)
        case closure(@Sendable () -> Void)
    }

    /// Creates the loop and starts its thread.
    /// - Parameters:
    ///   - index: the position in the owning group, used in names and diagnostics.
    ///   - networkNamespace: a path such as `/run/netns/NAME`; the loop thread enters that network
    ///     namespace before running, so its sockets live there (tests build isolated hosts this way).
    /// libuv writes with `write(2)`: a peer that closed first would raise SIGPIPE and kill the process
    /// instead of failing the write with EPIPE.
    private static let ignoreBrokenPipeSignal: Void = { signal(SIGPIPE, SIG_IGN) }()

    public init(index: Int = 0, networkNamespace: String? = nil) throws(RuntimeError) {
        _ = Self.ignoreBrokenPipeSignal
        self.index = index
        uvLoop = allocateZeroed(uv_loop_t.self)
        asyncHandle = allocateZeroed(uv_async_t.self)
        checkHandle = allocateZeroed(uv_check_t.self)
        idleHandle = allocateZeroed(uv_idle_t.self)
        readScratch = .allocate(byteCount: 64 * 1024, alignment: 16)
        taskExecutor = LoopTaskExecutor()
        do {
            try uvCheck(uv_loop_init(uvLoop), "uv_loop_init")
        } catch {
            uvLoop.deallocate()
            asyncHandle.deallocate()
            checkHandle.deallocate()
            idleHandle.deallocate()
            readScratch.deallocate()
            throw error
        }
        taskExecutor.loop = self
        unownedSelf = UnownedSerialExecutor(ordinary: self)
        unownedTaskExecutor = taskExecutor.asUnownedTaskExecutor()
        uvLoop.pointee.data = Unmanaged.passUnretained(self).toOpaque()

        uv_async_init(uvLoop, asyncHandle) { handle in
            EventLoop.from(handle!.pointee.loop).drainInbox()
        }
        uv_check_init(uvLoop, checkHandle)
        uv_check_start(checkHandle) { handle in EventLoop.from(handle!.pointee.loop).drainLocalQueue() }
        // The check handle alone must not keep the loop alive; the async handle does that until shutdown.
        uv_unref(UnsafeMutableRawPointer(checkHandle).assumingMemoryBound(to: uv_handle_t.self))
        uv_idle_init(uvLoop, idleHandle)
        timers.initialize(on: uvLoop)

        let start = ThreadStart(loop: self, networkNamespace: networkNamespace)
        let status = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue()
            start.loop.runThread(start)
            return nil
        }, Unmanaged.passRetained(start).toOpaque())
        precondition(status == 0, "pthread_create failed: \(status)")
        // Wait until the thread has recorded its identity, so `inLoopThread` is exact from here on.
        while !start.started.load(ordering: .acquiring) { sched_yield() }
        if start.namespaceStatus < 0 {
            shutdown()
            throw RuntimeError(uvStatus: start.namespaceStatus, function: "setns(\(networkNamespace ?? ""))")
        }
    }

    private final class ThreadStart: @unchecked Sendable {
        let loop: EventLoop
        let networkNamespace: String?
        /// Written by the loop thread before `started`, read by the creator after it.
        var namespaceStatus: Int32 = 0
        let started = Atomic<Bool>(false)
        init(loop: EventLoop, networkNamespace: String?) {
            self.loop = loop
            self.networkNamespace = networkNamespace
        }
    }

    private func runThread(_ start: ThreadStart) {
        if let path = start.networkNamespace {
            start.namespaceStatus = wsload_enter_network_namespace(path)
        }
        loopThread.store(UInt(pthread_self()), ordering: .releasing)
        pthread_setspecific(currentLoopKey, Unmanaged.passUnretained(self).toOpaque())
        wsload_set_thread_name("wsload-loop-\(index)")
        start.started.store(true, ordering: .releasing)
        uv_run(uvLoop, UV_RUN_DEFAULT)
        // glibc reuses a joined thread's `pthread_t` for the next thread it creates: without this, that
        // thread would pass `inLoopThread` for this dead loop, and work it enqueued would go to the local
        // queue and start the freed idle handle (a use-after-free) instead of being dropped and counted.
        pthread_setspecific(currentLoopKey, nil)
        loopThread.store(0, ordering: .releasing)
    }

    static func from(_ uvLoop: UnsafeMutablePointer<uv_loop_t>?) -> EventLoop {
        Unmanaged<EventLoop>.fromOpaque(uvLoop!.pointee.data).takeUnretainedValue()
    }

    /// The loop whose thread is calling, or `nil` off every loop thread.
    public static var current: EventLoop? {
        guard let raw = pthread_getspecific(currentLoopKey) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(raw).takeUnretainedValue()
    }

    /// True when called on this loop's thread.
    @inline(__always)
    public var inLoopThread: Bool {
        pthread_equal(pthread_self(), pthread_t(loopThread.load(ordering: .acquiring))) != 0
    }

    public var description: String { "EventLoop(\(index))" }

    // MARK: Executor conformances

    public func enqueue(_ job: consuming ExecutorJob) {
        enqueue(.actorJob(UnownedJob(job)))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func checkIsolated() {
        precondition(inLoopThread, "expected to run on \(self)'s thread")
    }

    public func isIsolatingCurrentContext() -> Bool? {
        inLoopThread
    }

    fileprivate func enqueueTaskJob(_ job: UnownedJob) {
        enqueue(.taskJob(job))
    }

    // MARK: Scheduling closures

    /// Runs `work` on the loop thread later, never inline; safe from any thread.
    /// After shutdown the work is dropped (and counted in ``droppedWorkCount``).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        enqueue(.closure(work))
    }

    /// Runs `work` now when called on the loop thread, otherwise as ``execute(_:)`` does.
    public func perform(_ work: @escaping @Sendable () -> Void) {
        if inLoopThread { work() } else { execute(work) }
    }

    /// Runs `work` on the loop thread and returns its result to the awaiting caller.
    public func submit<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            perform { continuation.resume(with: Result { try work() }) }
        }
    }

    private func enqueue(_ work: LoopWork) {
        if inLoopThread {
            localQueue.append(work)
            if !isIdleActive {
                isIdleActive = true
                uv_idle_start(idleHandle) { handle in EventLoop.from(handle!.pointee.loop).drainLocalQueue() }
            }
            return
        }
        let isDropped = inbox.withLock { inbox -> Bool in
            if inbox.isClosed { return true }
            inbox.items.append(work)
            if !inbox.isWakeupPending {
                inbox.isWakeupPending = true
                // Under the lock: shutdown marks the inbox closed before closing the async handle.
                uv_async_send(asyncHandle)
            }
            return false
        }
        if isDropped { droppedWork.add(1, ordering: .relaxed) }
    }

    private func drainInbox() {
        inbox.withLock { inbox in
            swap(&inbox.items, &transferBuffer)
            inbox.isWakeupPending = false
        }
        localQueue.append(contentsOf: transferBuffer)
        transferBuffer.removeAll(keepingCapacity: transferBuffer.capacity <= 4096)
        drainLocalQueue()
    }

    private func drainLocalQueue() {
        // A drain can be re-entered (shutdown drains while closing handles, from inside a drain). A nested
        // drain takes batches of its own: swapping the shared spare buffer would hand the outer drain's
        // batch back to the queue, and its jobs would run twice.
        let isNested = isDraining
        isDraining = true
        defer { if !isNested { isDraining = false } }
        // A bounded number of rounds, so a job storm cannot starve I/O; the idle handle brings us back.
        var rounds = 0
        while !localQueue.isEmpty && rounds < 16 {
            var batch: [LoopWork] = []
            if !isNested { swap(&batch, &drainBuffer) }  // reuse the spare buffer's capacity
            swap(&localQueue, &batch)
            for work in batch {
                run(work)
            }
            batch.removeAll(keepingCapacity: batch.capacity <= 4096)
            if !isNested { swap(&batch, &drainBuffer) }
            rounds += 1
        }
        if localQueue.isEmpty && isIdleActive {
            isIdleActive = false
            uv_idle_stop(idleHandle)
        }
    }

    @inline(__always)
    private func run(_ work: LoopWork) {
        switch work {
        case .actorJob(let job):
            job.runSynchronously(on: unownedSelf)
        case .taskJob(let job):
            job.runSynchronously(isolatedTo: unownedSelf, taskExecutor: unownedTaskExecutor)
        case .closure(let closure):
            closure()
        }
    }

    // MARK: Accounting

    /// libuv handles created through the runtime on this loop and not yet closed.
    public var liveHandleCount: Int { liveHandles.load(ordering: .relaxed) }
    /// Tasks suspended in a runtime await (read, write, connect, accept, sleep, DNS) on this loop.
    public var waitingTaskCount: Int { waitingOperations.load(ordering: .relaxed) }
    /// Work enqueued after shutdown and therefore never run; non-zero means something outlived its loop.
    public var droppedWorkCount: Int { droppedWork.load(ordering: .relaxed) }

    func handleOpened() { liveHandles.add(1, ordering: .relaxed) }
    func handleClosed() { liveHandles.subtract(1, ordering: .relaxed) }
    func operationStarted() { waitingOperations.add(1, ordering: .relaxed) }
    func operationEnded() { waitingOperations.subtract(1, ordering: .relaxed) }

    // MARK: Shutdown

    /// Stops the loop: runs what is queued, closes every handle still open (their waiters fail with
    /// `closed`), then joins the thread and frees the loop. Blocks the caller; never call it on a loop thread.
    /// - Returns: the number of runtime handles that were still open, i.e. leaks of the caller's.
    @discardableResult
    public func shutdown() -> Int {
        precondition(!inLoopThread, "EventLoop.shutdown() called on its own thread")
        let leaked = Lock(0)
        let isAlreadyClosed = inbox.withLock { $0.isClosed }
        if isAlreadyClosed { return 0 }
        execute { [self] in
            leaked.withLock { $0 = liveHandleCount }
            closeAllHandles()
        }
        pthread_join(thread, nil)
        uv_loop_close(uvLoop)
        uvLoop.deallocate()
        asyncHandle.deallocate()
        checkHandle.deallocate()
        idleHandle.deallocate()
        readScratch.deallocate()
        return leaked.withLock { $0 }
    }

    private func closeAllHandles() {
        let remaining = inbox.withLock { inbox -> [LoopWork] in
            inbox.isClosed = true
            defer { inbox.items = [] }
            return inbox.items
        }
        localQueue.append(contentsOf: remaining)
        drainLocalQueue()
        // Runtime handles carry their owner in `data`; close them through it so waiters are failed.
        uv_walk(uvLoop, { handle, _ in
            guard let handle, uv_is_closing(handle) == 0, let data = handle.pointee.data else { return }
            Unmanaged<LoopHandle>.fromOpaque(data).takeUnretainedValue().close()
        }, nil)
        drainLocalQueue()
        timers.close()
        for handle in [
            UnsafeMutableRawPointer(asyncHandle), UnsafeMutableRawPointer(checkHandle),
            UnsafeMutableRawPointer(idleHandle), UnsafeMutableRawPointer(timers.uvHandle),
        ] {
            uv_close(handle.assumingMemoryBound(to: uv_handle_t.self), nil)
        }
    }
}

/// The task executor of one ``EventLoop``: tasks that prefer it run on the loop thread.
public final class LoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    fileprivate unowned(unsafe) var loop: EventLoop!

    fileprivate init() {}

    public func enqueue(_ job: consuming ExecutorJob) {
        loop.enqueueTaskJob(UnownedJob(job))
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}

private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

/// Allocates zero-filled memory for a libuv struct (libuv does not clear fields such as `data`).
func allocateZeroed<T>(_ type: T.Type) -> UnsafeMutablePointer<T> {
    let raw = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<T>.size, alignment: 16)
    raw.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<T>.size)
    return raw.assumingMemoryBound(to: T.self)
}

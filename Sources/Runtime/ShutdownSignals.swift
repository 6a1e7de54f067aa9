import CLibUV
import Glibc
import Synchronization

/// A request to stop, raised by SIGINT/SIGTERM (or programmatically), that structured code awaits.
///
/// The first signal requests a graceful stop: the run finishes its work in hand and writes its report.
/// A second signal while stopping exits the process at once with 128 + the signal number.
public final class GracefulShutdown: Sendable {
    private struct State {
        var signal: Int32?
        var nextWaiterID = 0
        var waiters: [Int: CheckedContinuation<Int32?, Never>] = [:]
    }

    private let state = Lock(State())

    public init() {}

    /// True once a stop was requested.
    public var isRequested: Bool { state.withLock { $0.signal != nil } }

    /// The signal that requested the stop (`0` for a programmatic request), or `nil`.
    public var signal: Int32? { state.withLock { $0.signal } }

    /// Requests a stop; waiters resume. Later requests are ignored.
    public func request(signal: Int32 = 0) {
        let waiters = state.withLock { state -> [CheckedContinuation<Int32?, Never>] in
            guard state.signal == nil else { return [] }
            state.signal = signal
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: signal) }
    }

    /// Waits until a stop is requested and returns the signal number (`0` if programmatic), or nil
    /// if the waiting task is cancelled first (so it can race other work in a task group).
    public func wait() async -> Int32? {
        let id = state.withLock { state -> Int in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let signal = state.withLock { state -> Int32?? in
                    if let signal = state.signal { return .some(signal) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return .none
                }
                if let signal { continuation.resume(returning: signal) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }
}

/// Runs `body` with SIGINT and SIGTERM turned into a ``GracefulShutdown`` request; restores default
/// handling when `body` returns. A second signal exits the process immediately (exit status 128 + signal).
public func withShutdownSignals<T>(
    on loop: EventLoop,
    signals: [Int32] = [SIGINT, SIGTERM],
    _ body: (GracefulShutdown) async throws -> T
) async throws -> T {
    let shutdown = GracefulShutdown()
    let handles = try await loop.submit {
        try signals.map { signal throws(RuntimeError) in try SignalHandle(loop: loop, signal: signal, shutdown: shutdown) }
    }
    defer {
        for handle in handles { loop.perform { handle.close() } }
    }
    return try await body(shutdown)
}

/// One `uv_signal_t`; loop-confined.
final class SignalHandle: LoopHandle, @unchecked Sendable {
    let shutdown: GracefulShutdown

    init(loop: EventLoop, signal: Int32, shutdown: GracefulShutdown) throws(RuntimeError) {
        self.shutdown = shutdown
        super.init(loop: loop, size: MemoryLayout<uv_signal_t>.size)
        let handle = rawHandle.assumingMemoryBound(to: uv_signal_t.self)
        try uvCheck(uv_signal_init(loop.uvLoop, handle), "uv_signal_init")
        didInitialize()
        do {
            try uvCheck(uv_signal_start(handle, { handle, signal in
                Unmanaged<SignalHandle>.fromOpaque(handle!.pointee.data).takeUnretainedValue().didReceive(signal: signal)
            }, signal), "uv_signal_start")
        } catch {
            close()
            throw error
        }
        // A signal watcher alone must not keep the loop running.
        uv_unref(self.handle)
    }

    private func didReceive(signal: Int32) {
        if shutdown.isRequested {
            let message = "\nwsload: second \(signalName(signal)), exiting now\n"
            _ = message.withCString { Glibc.write(STDERR_FILENO, $0, strlen($0)) }
            _exit(128 + signal)
        }
        shutdown.request(signal: signal)
    }
}

/// `SIGINT`, `SIGTERM`, ... for messages.
public func signalName(_ signal: Int32) -> String {
    switch signal {
    case SIGINT: "SIGINT"
    case SIGTERM: "SIGTERM"
    case SIGHUP: "SIGHUP"
    case SIGQUIT: "SIGQUIT"
    default: "signal \(signal)"
    }
}

import Glibc

/// A value guarded by a `pthread_mutex_t`: the lock for state that loop threads and other threads share.
///
/// Use it instead of `Synchronization.Mutex` where ThreadSanitizer must see the ordering. On Linux a contended
/// `Mutex` is acquired inside the prebuilt `libswiftSynchronization` through a priority-inheritance futex (the
/// kernel hands the lock over), so TSan records no acquire and reports every contended critical section as a
/// data race (`scripts/sanitize.sh thread`; a two-thread program with one `Mutex` shows it). TSan intercepts
/// `pthread_mutex_lock`, and uncontended the cost is the same single atomic. One allocation, at creation.
public final class Lock<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock guarding `value`.
    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock; never call it again from inside `body`.
    @inline(__always)
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// `withTaskCancellationHandler` whose operation runs on the caller's executor.
///
/// The standard library's operation parameter is a nonisolated async function type, so a closure literal
/// passed to it from a loop-bound actor (or from a `nonisolated(nonsending)` function called by one) is
/// nonisolated: it hops to the generic executor on entry — for a task that prefers a loop, one more job
/// through the loop's queue — and back to the actor when it returns, and the continuation it creates resumes
/// onto the generic executor too (measured with Swift 6.3 in SIL: `hop_to_executor none` in the closure; in
/// `perf`, 9% of the closed echo's client CPU in `swift_task_switch`'s executor-preference lookups).
/// Here the closure captures the isolated `isolation` parameter, which makes it isolated to the caller's
/// actor: its executor checks stay on that actor's executor. A continuation inside still resumes onto the
/// generic executor (Swift 6.3 emits `swift_continuation_init` without an executor override), which a task's
/// loop preference turns into one job on that loop; a task without one resumes on the global pool and hops
/// back (perf probes on `swift_task_enqueue`).
///
/// Every cancellable wait on a loop (reads, writes, timers) goes through this.
@inlinable
public func withCancellationHandlerOnCaller<T>(
    isolation: isolated (any Actor)? = #isolation,
    operation: () async throws -> T,
    onCancel handler: @Sendable () -> Void
) async throws -> T {
    try await withTaskCancellationHandler(operation: {
        _ = isolation
        return try await operation()
    }, onCancel: handler, isolation: isolation)
}

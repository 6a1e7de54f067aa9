import Glibc
import Synchronization

/// A fixed set of event loops, one thread each; the unit the runtime is started and stopped as.
///
/// Shut down in order: cancel (and await) every task placed on the loops, let their actors go,
/// then call ``shutdown()``. A job arriving after its loop has stopped is dropped and counted.
public final class EventLoopGroup: Sendable {
    /// The loops, indexed by ``EventLoop/index``.
    public let loops: [EventLoop]
    private let nextIndex = Atomic<Int>(0)

    /// Starts `loopCount` loops (default: one per online CPU).
    public init(loopCount: Int = EventLoopGroup.defaultLoopCount) throws(RuntimeError) {
        precondition(loopCount > 0, "an event loop group needs at least one loop")
        var loops: [EventLoop] = []
        for index in 0..<loopCount {
            do {
                loops.append(try EventLoop(index: index))
            } catch {
                for loop in loops { loop.shutdown() }
                throw error
            }
        }
        self.loops = loops
    }

    /// One loop per online CPU.
    public static var defaultLoopCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// The next loop in round-robin order: how actors are spread over the loops.
    public func next() -> EventLoop {
        loops[nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
    }

    /// The loop for item `index` of a deterministic placement (e.g. connection number).
    public func loop(for index: Int) -> EventLoop { loops[index % loops.count] }

    /// Runtime handles open on all loops.
    public var liveHandleCount: Int { loops.reduce(0) { $0 + $1.liveHandleCount } }
    /// Tasks suspended in runtime awaits on all loops.
    public var waitingTaskCount: Int { loops.reduce(0) { $0 + $1.waitingTaskCount } }

    /// Stops every loop (see ``EventLoop/shutdown()``); blocks until their threads have exited.
    /// - Returns: handles that were still open (leaks), summed over the loops.
    @discardableResult
    public func shutdown() -> Int {
        loops.reduce(0) { $0 + $1.shutdown() }
    }
}

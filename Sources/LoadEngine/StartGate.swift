import Foundation
import Runtime

/// A stop request (Ctrl-C, SIGTERM) came while the run waited for its start time: nothing ran, so there is
/// nothing to report.
package struct StartWaitInterrupted: Error, Sendable, CustomStringConvertible {
    /// The signal that asked the stop (`0` for a programmatic request).
    package var signal: Int32
    /// The start time the run was waiting for.
    package var startAt: Date

    package var description: String {
        "stopped by \(signal == 0 ? "a stop request" : signalName(signal)) while waiting for the start time: nothing ran, "
            + "no report written"
    }
}

/// The wait before a run with a start time (`--start-at`): on the control loop, after the client loops (and the
/// embedded server) are up, so the coordinator starts the moment the time comes rather than after a bind.
enum StartGate {
    /// Waits on `loop` (call on its thread) until the wall-clock instant `startAt`, or until `shutdown` is requested.
    ///
    /// The wall clock is converted to the loop clock once, at the start of the wait: `Date()` and the monotonic
    /// `uv_hrtime` are read back to back and the deadline is the monotonic instant `startAt − now` ahead. The wait is
    /// then on the loop's timer wheel against that deadline (``EventLoop/sleep(for:)``, which never wakes early);
    /// the wall clock is not read again, so a clock stepped or slewed during the wait moves the start by that much
    /// on the wall clock. The run's `lateBy` (the coordinator's own wall-clock start minus `startAt`) records it.
    /// A time already past returns at once.
    /// - Returns: nil when the time came; the signal (0: programmatic) when a stop was requested first.
    static func wait(until startAt: Date, on loop: EventLoop, shutdown: GracefulShutdown?) async -> Int32? {
        let remaining = Duration.seconds(startAt.timeIntervalSince(Date()))
        let deadline = LoopClock().now.advanced(by: remaining)
        if let signal = shutdown?.signal { return signal }
        guard remaining > .zero else { return nil }
        await withTaskGroup(of: Void.self) { waits in
            waits.addTask(executorPreference: loop.taskExecutor) {
                // Cancelled (a stop request came first): ends at once.
                let left = LoopClock().now.duration(to: deadline)
                if left > .zero { try? await loop.sleep(for: left) }
            }
            if let shutdown { waits.addTask { _ = await shutdown.wait() } }  // nil once cancelled: the time came
            await waits.next()
            waits.cancelAll()
        }
        return shutdown?.signal
    }
}

import LoadEngine
import Profile
import Reporting

/// `wsload run --dashboard ADDR`: a live page served by wsload itself (no external assets) at `/`, fed once a
/// second over Server-Sent Events at `/events`, ending with the run's summary.
package final class DashboardEndpoint: Sendable {
    package var boundAddress: LiveAddress { fatalError("SKELETON (r-dashboard)") }

    package static func start(at address: LiveAddress, profileName: String, runID: String,
                              shard: Shard?) async throws(LiveServerError) -> DashboardEndpoint {
        throw LiveServerError(description: "--dashboard: not built yet")
    }

    /// One frame (about once a second).
    package func update(_ progress: RunProgress) {}
    /// The summary frame; the stream then ends (the page keeps what it shows).
    /// - Parameter exitCode: the exit code the run will end with.
    package func finish(_ result: RunResult, exitCode: Int32) {}
    package func stop() async {}
}

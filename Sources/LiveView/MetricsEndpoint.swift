import LoadEngine
import Profile
import Reporting

/// `wsload run --metrics ADDR`: the run's figures as a Prometheus/OpenMetrics text endpoint at `/metrics`, rendered
/// on each scrape from the latest progress (about once a second) and, after the run, from its final totals.
package final class MetricsEndpoint: Sendable {
    /// How histograms become Prometheus buckets.
    package struct Configuration: Sendable {
        /// Buckets per doubling of the value (1...16): bounds are log-spaced, derived from the HDR histogram's counts.
        package var bucketsPerDoubling: Int = 4
        package init(bucketsPerDoubling: Int = 4) { self.bucketsPerDoubling = bucketsPerDoubling }
    }

    package var boundAddress: LiveAddress { fatalError("SKELETON (r-metrics)") }

    /// - Parameters: `runID`, `profileName` and `shard` label `wsload_run_info`.
    package static func start(at address: LiveAddress, configuration: Configuration, profileName: String, runID: String,
                              shard: Shard?) async throws(LiveServerError) -> MetricsEndpoint {
        throw LiveServerError(description: "--metrics: not built yet")
    }

    /// The run's latest figures (called about once a second from the coordinator's progress).
    package func update(_ progress: RunProgress) {}
    /// The run's final figures: scrapes from now on see exactly the report's totals.
    package func finish(_ result: RunResult) {}
    package func stop() async {}
}

import LiveView
import LoadEngine
import Profile
import Reporting
import Runtime

/// What `wsload run` serves while it goes: `--metrics` (Prometheus) and `--dashboard` (a live page), each on an
/// address of its own (loopback unless told otherwise), kept up `--linger` after the run with its final figures.
struct LiveOutputs: Sendable {
    static let valueOptions: Set<String> = ["metrics", "metrics-buckets", "dashboard", "linger"]

    var metrics: MetricsEndpoint?
    var dashboard: DashboardEndpoint?
    var linger: Duration = .zero

    /// The options as given, checked before anything starts (a bad one is a usage error, exit 64).
    struct Options: Sendable {
        var metrics: LiveAddress?
        var buckets = MetricsEndpoint.Configuration()
        var dashboard: LiveAddress?
        var linger: Duration = .zero

        init(_ arguments: Arguments) throws {
            if let text = arguments.value("metrics") { metrics = try Self.address(text, option: "metrics") }
            if let text = arguments.value("dashboard") { dashboard = try Self.address(text, option: "dashboard") }
            if let text = arguments.value("metrics-buckets") {
                guard metrics != nil else { throw UsageError("--metrics-buckets: needs --metrics") }
                guard let count = Int(text), (1...16).contains(count) else {
                    throw UsageError("--metrics-buckets: \"\(text)\" is not a count of buckets per doubling from 1 to 16")
                }
                buckets.bucketsPerDoubling = count
            }
            if let value = try arguments.duration("linger") {
                guard metrics != nil || dashboard != nil else { throw UsageError("--linger: needs --metrics or --dashboard") }
                linger = value
            }
            if let metrics, let dashboard, metrics.port != 0, metrics == dashboard {
                throw UsageError("--metrics and --dashboard: both ask for \(metrics); give each its own port")
            }
        }

        private static func address(_ text: String, option: String) throws -> LiveAddress {
            do {
                return try LiveAddress(parsing: text, option: option)
            } catch {
                throw UsageError(error.description)
            }
        }
    }

    /// Starts what `options` asks for and tells where on stderr (even with `--quiet`: port 0 is otherwise unknowable).
    /// - Throws: ``LiveServerError`` when an address cannot be bound (the run does not start: exit 1).
    static func start(_ options: Options, profile: Profile, runID: String, shard: Shard?,
                      output: CommandOutput) async throws(LiveServerError) -> LiveOutputs {
        var outputs = LiveOutputs(linger: options.linger)
        if let address = options.metrics {
            let endpoint = try await MetricsEndpoint.start(at: address, configuration: options.buckets, profileName: profile.name,
                                                           runID: runID, shard: shard)
            outputs.metrics = endpoint
            // Printed even with --quiet: with port 0 it is the only way to learn where to scrape.
            output.printError("metrics: http://\(endpoint.boundAddress)/metrics")
            if let warning = exposureWarning(option: "--metrics", address: endpoint.boundAddress) { output.printError(warning) }
        }
        if let address = options.dashboard {
            do {
                let endpoint = try await DashboardEndpoint.start(at: address, profile: profile, runID: runID, shard: shard)
                outputs.dashboard = endpoint
                output.printError("dashboard: http://\(endpoint.boundAddress)/")
                if let warning = exposureWarning(option: "--dashboard", address: endpoint.boundAddress) { output.printError(warning) }
            } catch {
                await outputs.metrics?.stop()
                throw error
            }
        }
        return outputs
    }

    /// The line a run prints (even with --quiet) when `option` listens beyond loopback: only an address the user gave
    /// explicitly can do that, and they should know who else can read it.
    static func exposureWarning(option: String, address: LiveAddress) -> String? {
        address.isLoopback ? nil
            : "warning: \(option) listens on \(address), beyond loopback: anyone who can reach this host on that port can read it"
    }

    /// The run's latest figures, about once a second.
    func update(_ progress: RunProgress) {
        metrics?.update(progress)
        dashboard?.update(progress)
    }

    /// The run's final figures and verdict; then serves them `linger` and stops.
    func finish(_ result: RunResult, exitCode: ExitCode) async {
        metrics?.finish(result)
        dashboard?.finish(result, exitCode: exitCode.rawValue)
        if linger > .zero, metrics != nil || dashboard != nil {
            try? await Task.sleep(for: linger)  // only cancellation ends it early, and the report is already written
        }
        await stop()
    }

    /// Stops both without final figures (the run failed to start or finish).
    func stop() async {
        await metrics?.stop()
        await dashboard?.stop()
    }
}

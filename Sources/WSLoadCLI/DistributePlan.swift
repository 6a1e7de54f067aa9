import Profile

/// What `wsload distribute` was asked for, checked, every path absolute: the input of the pure generators
/// (``SlurmScripts``, ``KubernetesManifests``), which only turn it into text.
struct DistributionPlan: Sendable {
    /// The profile's `name` (letters, digits, `-`, `_`, `.`): it names the report files.
    var profileName: String
    /// The profile file, absolute.
    var profilePath: String
    /// The profile file's text, as the ConfigMap carries it to the pods.
    var profileText: String
    var shards: Int
    /// How long after the launch time the shards start (`--start-at @launch-time+lead`).
    var lead: Duration
    /// A shard's time limit: Slurm's `--time`, a Job's `activeDeadlineSeconds`.
    var timeLimit: Duration
    /// `--target`, passed to every shard.
    var target: String?
    /// `--out`, absolute: where the generated files go (and, for Slurm, the reports).
    var directory: String
    /// Where `wsload distribute` ran, when the profile names a file by a relative path (data, tokenFile, caFile, a
    /// transfer's file), which starts there: the Slurm shards `cd` to it. Nil when every path is absolute: the shards
    /// then need no directory but DIR (which may be the only shared one).
    var workingDirectory: String?
    /// The environment variable the profile's token comes from (`auth.tokenEnv`), if any.
    var tokenEnvironment: String?

    /// The lead as `--start-at` reads it after `@FILE+`: whole seconds, or milliseconds.
    var leadText: String {
        let milliseconds = lead.microseconds / 1000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(milliseconds)ms"
    }

    /// Whole seconds, rounded up (a time limit a scheduler counts in seconds).
    static func wholeSeconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return attoseconds > 0 ? seconds + 1 : seconds
    }

    /// A shard report's file name before and after its 1-based index (a script fills it in): `<name>-shard<i>of<N>.json`,
    /// as `wsload run --report-dir` names a shard's report.
    var shardReportName: (prefix: String, suffix: String) { ("\(profileName)-shard", "of\(shards).json") }

    /// The merged report's file name.
    var mergedReportName: String { "\(profileName)-merged.json" }
}

/// One file `wsload distribute` writes.
struct GeneratedFile: Sendable, Equatable {
    var name: String
    var text: String
    /// Scripts are written 0755, everything else 0644.
    var isExecutable: Bool
}

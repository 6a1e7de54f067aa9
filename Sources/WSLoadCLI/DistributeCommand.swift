import FileInput
import Foundation
import Profile

/// `wsload distribute slurm|kubernetes PROFILE --shards N --out DIR`: writes what runs a profile's shards on a cluster
/// engine, all starting at one instant, and merges their reports. Nothing is submitted: the files are one command.
enum DistributeCommand: Subcommand {
    static let name = "distribute"
    static let summary = "Write the files that run a profile's shards on Slurm or Kubernetes and merge them."
    static let helpText = """
        OVERVIEW: Write the files that run a profile's shards on Slurm or Kubernetes and merge them.

        Checks the profile as 'wsload validate' would, then writes into DIR (created; refused if it exists and
        is not empty). Every shard runs 'wsload run PROFILE --shard auto --start-at @<launch time>+<lead>', so
        all start at one instant, and the merge refuses a missing or duplicate shard. No token or secret is
        written: a Slurm job takes the submitting shell's environment; on Kubernetes the token comes from a
        Secret (--token-secret).

        slurm: submit.sh (run 'sh DIR/submit.sh': writes DIR/launch-time, submits wsload.sbatch as a job
        array --array=0-(N-1) and merge.sbatch after it, afterok), reports in DIR/reports, logs in DIR/logs,
        the merged report DIR/<name>-merged.json. DIR, the profile and wsload must be on a file system every
        node sees.

        kubernetes: configmap.yaml (the profile, the start time), job.yaml (an Indexed Job of N pods),
        merge-job.yaml, fetch-pod.yaml, and apply.sh (run 'sh DIR/apply.sh [kubectl options]': applies them in
        order and copies the merged report to DIR/<name>-merged.json). Needs Kubernetes 1.29 or later, the image
        (see Containerfile) and a ReadWriteMany claim for the reports.

        USAGE: wsload distribute slurm <profile.json> --shards <n> --out <dir> [options]
               wsload distribute kubernetes <profile.json> --shards <n> --out <dir> --image <image>
                                 --reports-claim <claim> [options]

        OPTIONS:
          --shards <n>            The number of shards, 1-1000.
          --out <dir>             Where the files go.
          --lead <duration>       How long after the launch the shards start (time to schedule them).
                                  (default: 30s)
          --time <duration>       A shard's time limit. (default: the duration, gracefulStop, the lead and 5m)
          --target <url>          Run every shard against this ws:// or wss:// URL.

        SLURM OPTIONS:
          --partition <name>      The partition of both jobs.
          --wsload <path>         The wsload the jobs run. (default: this one)
          --sbatch-option <opt>   One more sbatch option for both jobs, as --name=value (repeatable), e.g.
                                  --sbatch-option=--account=load --sbatch-option=--exclusive

        KUBERNETES OPTIONS:
          --image <image>         The wsload image (built from the Containerfile).
          --reports-claim <name>  A ReadWriteMany PersistentVolumeClaim for the reports.
          --cpu <quantity>        CPU each pod requests. (default: 1)
          --memory <quantity>     Memory each pod requests and may use. (default: 1Gi)
          --token-secret <name>   The Secret holding the profile's token under the key "token" (for auth.tokenEnv).
                                  (default: wsload-<name>-token)

        EXIT CODES:
          0 written, 64 usage, 65 invalid profile, 66 profile unreadable, 74 DIR not empty or not writable.

        """

    static let commonOptions: Set<String> = ["shards", "out", "lead", "time", "target"]
    static let slurmOptions: Set<String> = ["partition", "wsload", "sbatch-option"]
    static let kubernetesOptions: Set<String> = ["image", "reports-claim", "cpu", "memory", "token-secret"]
    /// The most `--lead` may be: `wsload run --start-at` refuses a start further ahead.
    static let maximumLead: Duration = .seconds(StartAtOption.maximumLead)
    /// What `--time` adds by default to the run's duration, its gracefulStop and the lead.
    static let timeMargin: Duration = .seconds(300)

    enum Engine: String { case slurm, kubernetes }

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        guard let engineName = arguments.first, let engine = Engine(rawValue: engineName) else {
            let given = arguments.first.map { "unknown engine '\($0)'" } ?? "missing engine"
            output.printError("Error: \(given): give slurm or kubernetes. See 'wsload distribute --help'.")
            return .usage
        }
        let options: Arguments
        let request: Request
        do {
            options = try Arguments(Array(arguments.dropFirst()),
                                    valueOptions: commonOptions.union(engine == .slurm ? slurmOptions : kubernetesOptions),
                                    flagOptions: [], acceptsPositional: true)
            request = try Request(options, engine: engine)
        } catch {
            output.printError("Error: \(error). See 'wsload distribute --help'.")
            return .usage
        }
        var profile: Profile
        switch loadProfile(request.profilePath, overrides: ProfileOverrides(target: request.target)) {
        case .failure(let failure):
            failure.print(to: output, path: request.profilePath)
            return failure.exitCode
        case .success(let decoded):
            profile = decoded
        }
        if let failure = loadFeeders(into: &profile, path: request.profilePath, output: output) { return failure }
        let profileText: String
        do throws(UntrustedFile.Failure) {
            profileText = String(decoding: try UntrustedFile.read(request.profilePath, cap: ProfileDecoder.maximumSize), as: UTF8.self)
        } catch {
            output.printError("Error: cannot read \(request.profilePath): \(error.reason)")
            return .noInput
        }
        let directory: String
        switch DistributeFiles.prepare(request.out) {
        case .failure(let reason):
            output.printError("Error: --out \(request.out): \(reason)")
            return .ioError
        case .success(let path):
            directory = path
        }
        if case .slurm = request.engine, let refusal = SlurmScripts.refusal(ofDirectory: directory) {
            output.printError("Error: --out \(request.out) is \(directory): \(refusal)")
            return .ioError
        }
        let plan = request.plan(profile: profile, profileText: profileText, directory: directory)
        let files: [GeneratedFile]
        var directories: [String] = []
        switch request.engine {
        case .slurm(let slurm):
            files = SlurmScripts.files(plan, slurm)
            directories = ["reports", "logs"]
        case .kubernetes(let kubernetes):
            if kubernetes.tokenSecret != nil && plan.tokenEnvironment == nil {
                output.printError("Error: --token-secret: the profile reads no token from the environment (auth.tokenEnv). "
                    + "See 'wsload distribute --help'.")
                return .usage
            }
            files = KubernetesManifests.files(plan, kubernetes)
        }
        for warning in warnings(profile: profile, plan: plan, request: request) { output.printError("warning: " + warning) }
        if let failure = DistributeFiles.write(files, directories: directories, into: directory) {
            output.printError("Error: \(failure)")
            return .ioError
        }
        output.print("wrote \(files.map(\.name).joined(separator: ", ")) into \(directory)")
        switch request.engine {
        case .slurm: output.print("submit with: sh \(DistributeText.shellWord(directory + "/submit.sh"))")
        case .kubernetes: output.print("run with: sh \(DistributeText.shellWord(directory + "/apply.sh")) [kubectl options]")
        }
        return .success
    }

    /// What deserves a word before the files are used: nothing of it stops them being written.
    static func warnings(profile: Profile, plan: DistributionPlan, request: Request) -> [String] {
        var warnings: [String] = []
        if case .embedded = profile.target {
            warnings.append("the profile's target is embedded: every shard runs a server of its own. "
                + "Give --target URL to load one server.")
        }
        let needed = profile.duration + profile.gracefulStop + plan.lead
        if plan.timeLimit < needed {
            warnings.append("--time \(formatDuration(plan.timeLimit)) is shorter than the lead, duration and "
                + "gracefulStop (\(formatDuration(needed))): the shards will be stopped before they finish")
        }
        switch request.engine {
        case .slurm(let slurm):
            if !FileManager.default.isExecutableFile(atPath: slurm.wsload) {
                warnings.append("\(slurm.wsload) is not an executable here: the jobs must find it at that path")
            }
        case .kubernetes:
            let files = profileFiles(profile)
            if !files.isEmpty {
                warnings.append("the pods see only the profile (\(KubernetesManifests.profileMount)/profile.json); mount "
                    + "what it reads at the same paths in job.yaml: \(files.joined(separator: ", "))")
            }
        }
        return warnings
    }

    /// The files a profile reads besides itself.
    static func profileFiles(_ profile: Profile) -> [String] {
        var files: [String] = []
        if case .file(let path)? = profile.authentication?.source { files.append(path) }
        if let path = profile.tls.caFile { files.append(path) }
        files += profile.data.map(\.file)
        files += profile.scenarios.compactMap { $0.transfer?.file }
        return files
    }
}

/// `wsload distribute slurm`: a run as one Slurm job array (a task per shard, all starting at the same instant)
/// and a merge job that waits for them (`afterok`). Pure: a plan in, the files' text out.
///
/// Every sbatch option is given on sbatch's command line in `submit.sh`, shell-quoted, rather than as `#SBATCH`
/// lines (sbatch reads those with its own rules, where a path with spaces or quotes is not one word). The log
/// paths are filename patterns (sbatch(1), "filename pattern"), where Slurm expands `%` symbols over the whole path
/// (a relative one after prefixing the job's directory): DIR's own `%` is written `%%`, and a DIR with a backslash,
/// which turns the expansion off for the whole pattern, is refused (``refusal(ofDirectory:)``).
enum SlurmScripts {
    /// The Slurm side of the command line.
    struct Options: Sendable, Equatable {
        /// The wsload executable the jobs run, absolute (on a file system every node sees).
        var wsload: String
        var partition: String?
        /// `--sbatch-option`, each one word, given to both jobs (an account, a QOS, `--exclusive`, `--mem=2G`).
        var sbatchOptions: [String] = []
    }

    /// The merge job's time limit: it reads and adds the shards' reports, seconds even for large ones.
    static let mergeTimeLimit = "00:30:00"

    /// The sbatch options `--sbatch-option` may not give: the generated layout depends on them, or another option sets
    /// them. Long names are refused by prefix too (sbatch accepts an unambiguous abbreviation).
    static let ownedOptions: [(long: String, short: Character?)] = [
        ("array", "a"), ("dependency", "d"), ("parsable", nil), ("output", "o"), ("error", "e"), ("chdir", "D"),
        ("wrap", nil), ("job-name", "J"), ("kill-on-invalid-dep", nil), ("time", "t"), ("partition", "p"),
    ]

    /// Why `option` may not be given with `--sbatch-option`, or nil if it may.
    static func refusal(ofOption option: String) -> String? {
        guard option.hasPrefix("-"), option.count > 1 else {
            return "\"\(option)\" is not an option (give one sbatch option per --sbatch-option, as --name=value)"
        }
        if option.hasPrefix("--") {
            let name = option.dropFirst(2).prefix { $0 != "=" }
            if let owned = ownedOptions.first(where: { !name.isEmpty && $0.long.hasPrefix(name) }) {
                return "\(option) would replace the generated --\(owned.long)" + hint(for: owned.long)
            }
        } else if let letter = option.dropFirst().first, let owned = ownedOptions.first(where: { $0.short == letter }) {
            return "\(option) would replace the generated --\(owned.long)" + hint(for: owned.long)
        }
        return nil
    }

    private static func hint(for name: String) -> String {
        name == "time" || name == "partition" ? " (use wsload distribute's --\(name))" : ""
    }

    /// Why DIR cannot hold a Slurm run's logs, or nil if it can.
    static func refusal(ofDirectory path: String) -> String? {
        path.contains("\\") ? "a backslash in the path turns off Slurm's %A/%a log names (sbatch(1), filename pattern)" : nil
    }

    /// `path` as a literal in a Slurm filename pattern.
    static func patternLiteral(_ path: String) -> String {
        path.replacingOccurrences(of: "%", with: "%%")
    }

    /// `submit.sh`, `wsload.sbatch` and `merge.sbatch`.
    static func files(_ plan: DistributionPlan, _ options: Options) -> [GeneratedFile] {
        [
            GeneratedFile(name: "submit.sh", text: submitScript(plan, options), isExecutable: true),
            GeneratedFile(name: "wsload.sbatch", text: shardScript(plan, options), isExecutable: true),
            GeneratedFile(name: "merge.sbatch", text: mergeScript(plan, options), isExecutable: true),
        ]
    }

    /// A Slurm time limit, `[days-]hours:minutes:seconds`, rounded up to the second.
    static func timeText(_ duration: Duration) -> String {
        let total = DistributionPlan.wholeSeconds(duration)
        let days = total / 86_400
        let clock = [total % 86_400 / 3600, total % 3600 / 60, total % 60].map { $0 < 10 ? "0\($0)" : "\($0)" }
            .joined(separator: ":")
        return days > 0 ? "\(days)-\(clock)" : clock
    }

    private static func submitScript(_ plan: DistributionPlan, _ options: Options) -> String {
        let word = DistributeText.shellWord
        let jobName = "wsload-\(plan.profileName)"
        var common: [String] = []
        if let partition = options.partition { common.append("--partition=\(partition)") }
        common += options.sbatchOptions
        let commonWords = common.isEmpty ? "" : " " + DistributeText.shellWords(common)
        let merged = plan.directory + "/" + plan.mergedReportName
        let logs = patternLiteral(plan.directory + "/logs")
        return """
            #!/bin/sh
            # Submits the wsload run of profile \(plan.profileName) to Slurm: \(plan.shards) shards as one job array, then a
            # merge job that starts once every shard has succeeded. Generated by 'wsload distribute slurm'. Run:
            #     sh \(DistributeText.commentText(word(plan.directory + "/submit.sh")))
            # The jobs take this shell's environment (sbatch's default --export=ALL): export the variable the profile's
            # token comes from (auth.tokenEnv) before running this. No token or secret is written into these files.
            set -eu
            dir=\(word(plan.directory))
            if [ -e "$dir/launch-time" ]; then
                echo "submit.sh: $dir/launch-time exists: this run was submitted already. To submit it again, remove it" \\
                    "and the reports in $dir/reports, or run 'wsload distribute' into a new directory." >&2
                exit 1
            fi
            command -v sbatch >/dev/null 2>&1 || { echo "submit.sh: sbatch not found: run this where Slurm's commands are" >&2; exit 1; }
            # The shards start at this instant plus the lead (\(plan.leadText)): --start-at @launch-time+\(plan.leadText).
            date -u +%Y-%m-%dT%H:%M:%SZ >"$dir/launch-time.new"
            mv "$dir/launch-time.new" "$dir/launch-time"
            array=$(sbatch --parsable --array=0-\(plan.shards - 1) --job-name=\(word(jobName)) --chdir="$dir" \\
                --output=\(word(logs + "/%x-%A_%a.out")) --time=\(timeText(plan.timeLimit))\(commonWords) "$dir/wsload.sbatch") || {
                rm -f "$dir/launch-time"
                echo "submit.sh: sbatch refused the shards' job array (its message is above)" >&2
                exit 1
            }
            array=${array%%;*}
            # afterok: only when every shard succeeded; a shard that failed cancels the merge instead of leaving it pending.
            merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \\
                --job-name=\(word(jobName + "-merge")) --chdir="$dir" --output=\(word(logs + "/%x-%j.out")) \\
                --time=\(mergeTimeLimit)\(commonWords) "$dir/merge.sbatch") || {
                echo "submit.sh: sbatch refused the merge job; cancelling the shards (job $array)" >&2
                scancel "$array" && rm -f "$dir/launch-time"
                exit 1
            }
            merge=${merge%%;*}
            echo "array job: $array (\(plan.shards) shards, starting at $(cat "$dir/launch-time") + \(plan.leadText))"
            echo "merge job: $merge (after every shard succeeds)"
            echo "merged report: "\(word(merged))
            echo "logs: $dir/logs (squeue -j $array,$merge)"

            """
    }

    private static func shardScript(_ plan: DistributionPlan, _ options: Options) -> String {
        let word = DistributeText.shellWord
        let name = plan.shardReportName
        var arguments = ["run", plan.profilePath, "--shard", "auto", "--shards", "\(plan.shards)",
                         "--start-at", "@\(plan.directory)/launch-time+\(plan.leadText)", "--quiet"]
        if let target = plan.target { arguments += ["--target", target] }
        let out = word(plan.directory + "/reports/" + name.prefix) + "\"$shard\"" + word(name.suffix)
        return """
            #!/bin/sh
            # One shard of the wsload run of profile \(plan.profileName): a task of the job array that submit.sh submits
            # (\(plan.shards) tasks, --array=0-\(plan.shards - 1)). 'wsload run --shard auto' takes the shard from
            # SLURM_ARRAY_TASK_ID; every shard starts at the launch time submit.sh wrote plus \(plan.leadText).
            # Submit with submit.sh, not with sbatch alone.
            set -u
            # Slurm gives a job the submitter's soft open-file limit; each connection is a socket: take the hard limit.
            ulimit -n "$(ulimit -H -n)" 2>/dev/null || true
            # The profile's relative paths (data, tokenFile, caFile) are taken from where 'wsload distribute' ran.
            cd \(word(plan.workingDirectory)) || exit 1
            case ${SLURM_ARRAY_TASK_ID-} in
                '' | *[!0-9]* | 0?*) shard=unknown ;;  # wsload run names the problem
                *) shard=$((SLURM_ARRAY_TASK_ID + 1)) ;;
            esac
            \(word(options.wsload)) \(DistributeText.shellWords(arguments)) \\
                --out \(out)
            status=$?
            # 3 (thresholds failed) and 4 (invariants violated) judge this slice, and its report is written: the merge
            # judges the whole run. Any other failure leaves no usable report, and the merge is cancelled.
            case $status in
                0 | 3 | 4) exit 0 ;;
                *) exit "$status" ;;
            esac

            """
    }

    private static func mergeScript(_ plan: DistributionPlan, _ options: Options) -> String {
        let word = DistributeText.shellWord
        return """
            #!/bin/sh
            # The merge of the wsload run of profile \(plan.profileName): submit.sh submits it to start once all
            # \(plan.shards) shards have succeeded. 'wsload merge DIR' refuses a missing or duplicate shard, naming it.
            set -u
            exec \(word(options.wsload)) merge \(word(plan.directory + "/reports")) --out \(word(plan.directory + "/" + plan.mergedReportName))

            """
    }
}

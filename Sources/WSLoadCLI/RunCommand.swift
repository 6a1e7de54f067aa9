import Foundation
import JSON
import LoadEngine
import Profile
import Reporting
import RunHost
import Runtime

/// `wsload run PROFILE`: runs a load profile, shows progress, writes the JSON report, and exits with
/// what held (thresholds) and what did not.
enum RunCommand: Subcommand {
    static let name = "run"
    static let summary = "Run a load profile and write its report."
    static let helpText = """
        OVERVIEW: Run a load profile and write its report.

        Connects the profile's scenarios, follows their ramps, shows live progress on a terminal (plain
        lines otherwise), and writes a JSON report atomically to the profile's report directory
        (Reports/runs by default) as <name>-<UTC time>.json. The first Ctrl-C stops gracefully and still
        writes the complete report (marked interrupted); a second exits at once.

        While it runs, the header and every closed interval are appended to a journal beside the report
        (<report>.partial), flushed each interval, and removed once the report is written. The report holds
        at most report.maxIntervals intervals (default 600; past it, adjacent ones merge): when it had to
        merge, the journal is kept beside it as <report stem>.intervals.jsonl with every interval, and the
        report names it. If the run is killed (a crash, an OOM kill, SIGKILL, a second Ctrl-C), 'wsload
        report --recover <report>.partial' writes the report of every interval the journal holds, marked
        incomplete. An existing journal at that path is never replaced: recover it or remove it first.

        --target, --duration, --seed and --loops replace the profile's own values before it is validated, so
        the profile that runs is checked as a whole (a chaos timeline needs the embedded target; its events
        must fall within the duration) and the report embeds it as it ran.

        USAGE: wsload run <profile.json> [options]

        ARGUMENTS:
          <profile.json>          The profile to run.

        OPTIONS:
          --target <url>          Run against this ws:// or wss:// URL (or "embedded") instead of the
                                  profile's target.
          --shard <i/n|auto>      Run the i-th of n equal slices of the profile (merge the n reports);
                                  "auto": the slice from a Slurm job array task (SLURM_ARRAY_TASK_*) or a
                                  Kubernetes Indexed Job pod (JOB_COMPLETION_INDEX, with --shards or WSLOAD_SHARDS).
          --shards <n>            With --shard auto: the number of shards (must match a Slurm array's count).
          --processes <n|auto>    Run n processes of wsload, one shard each, and merge their reports; an embedded
                                  server runs in processes of its own. auto: as many as the open-file limit
                                  needs (applied without this option when one process cannot hold the run).
                                  1: this process only. (1-256; not with --shard)
          --start-at <time>       Start at this RFC 3339 time (2026-12-01T23:30:00Z, ...00.250+01:00), or
                                  @FILE[+DURATION]: the time written in FILE plus a lead. Loads, binds and
                                  waits; Ctrl-C while waiting exits 130 with no report; a time past starts at
                                  once (the report's run.lateBy says how late); over 24 h ahead is refused.
          --out <file>            Write the report to this file instead.
          --report-dir <dir>      Write the report into this directory instead.
          --duration <duration>   Run this long instead of the profile's duration.
          --seed <n>              Seed the run's random choices (overrides the profile).
          --loops <n>             Event loops (threads). (default: the profile's, or one per core)
          --hlog <file>           Also write the interval histograms as an HdrHistogram log (every
                                  interval, from the interval log when the report's are merged).
          --html <file>           Also write the HTML report (one self-contained file).
          --junit <file>          Also write thresholds and invariants as JUnit XML test cases.
          --metrics <addr>        Serve live Prometheus metrics at http://<addr>/metrics while the run goes
                                  (<port>, <host>:<port> or [<ipv6>]:<port>; the host defaults to 127.0.0.1).
          --metrics-buckets <n>   Prometheus histogram buckets per doubling of the value, 1-16. (default: 4)
          --dashboard <addr>      Serve a live dashboard at http://<addr>/ while the run goes.
          --linger <duration>     Keep --metrics and --dashboard serving the final figures this long after
                                  the run. (default: 0s)
          --json                  Print the report JSON on stdout instead of the summary.
          --quiet                 No progress and no summary; only errors and the exit code.
          -h, --help              Show help information.

        EXIT CODES:
          0 passed, 1 could not run (or no connection ever opened), 3 thresholds failed, 4 invariants violated,
          6 a --processes shard died (the merged report names it), 64 usage, 65 invalid profile (or --start-at file),
          66 profile (or --start-at file) unreadable, 74 report not written (or a journal already at its path),
          130 interrupted (report written; none when stopped while waiting for --start-at).

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        guard let path = arguments.first, !path.hasPrefix("--") else {
            output.printError("Error: missing <profile.json>. See 'wsload run --help'.")
            return .usage
        }
        let options: Arguments
        let overrides: ProfileOverrides
        let liveOptions: LiveOutputs.Options
        var shard: Shard?
        var processes: ProcessPlan.Request?
        let child: ChildOptions
        do {
            options = try Arguments(
                Array(arguments.dropFirst()),
                valueOptions: Arguments.profileOverrideOptions.union(["shard", "shards", "out", "report-dir", "hlog", "html", "junit",
                                                                      "start-at", "processes"])
                    .union(LiveOutputs.valueOptions).union(ProcessControl.runOptions),
                flagOptions: ["json", "quiet"])
            overrides = try options.profileOverrides()
            liveOptions = try LiveOutputs.Options(options)
            if let text = options.value("shard") {
                shard = try Self.shard(text, shards: options.integer("shards", in: 1...Shard.maximumCount))
            } else if options.value("shards") != nil {
                throw UsageError("--shards: only with --shard auto")
            }
            if let text = options.value("processes") {
                processes = try ProcessPlan.request(text)
                if shard != nil { throw UsageError("--processes: not with --shard (each process runs a shard of its own)") }
            }
            child = try ChildOptions(options)
        } catch {
            output.printError("Error: \(error). See 'wsload run --help'.")
            return .usage
        }
        var startAt: StartAtOption?
        if let text = options.value("start-at") {
            switch StartAtOption.resolve(text, now: Date()) {
            case .failure(let failure):
                output.printError("Error: \(failure)" + (failure.exitCode == .usage ? ". See 'wsload run --help'." : ""))
                return failure.exitCode
            case .success(let value): startAt = value
            }
        }
        // The overrides are part of the profile before it is validated: what runs is what was checked.
        var loaded: Profile
        switch loadProfile(path, overrides: overrides) {
        case .failure(let failure):
            failure.print(to: output, path: path)
            return failure.exitCode
        case .success(let decoded):
            loaded = decoded
        }
        // Feeders are read once, before anything runs: a missing or short file stops the run as validate would.
        if let failure = loadFeeders(into: &loaded, path: path, output: output) { return failure }
        let profile = loaded
        // Past one process's open files (or when asked), the run is split over processes of this machine.
        if shard == nil && child.embeddedServer == nil {
            do {
                if let plan = try ProcessPlan.make(profile: profile, request: processes, limit: ResourceLimits.raiseOpenFileLimit()) {
                    if processes == nil { output.printError(plan.automaticNote) }
                    return await runInProcesses(plan, profile: profile, path: path, options: options, startAt: startAt,
                                                liveOptions: liveOptions, output: output)
                }
            } catch {
                output.printError("Error: \(error). See 'wsload run --help'.")
                return .usage
            }
        }
        let isQuiet = options.has("quiet")
        let display = ProgressDisplay(output: output, isTerminal: output.isErrorTerminal, isQuiet: isQuiet)

        let outPath = options.value("out")
        let reportDirectory = options.value("report-dir") ?? profile.report.directory
        let slice = shard
        let pathOfReport: @Sendable (Date) -> String = { startedAt in
            outPath ?? Self.reportPath(in: reportDirectory, profileName: profile.name, startedAt: startedAt, shard: slice)
        }
        // A journal left by an earlier run that died is the only record of it: never replace it.
        if let outPath, Self.isPresent(RunJournal.path(forReport: outPath)) {
            output.printError("Error: \(RunJournal.path(forReport: outPath)) exists: the journal of an earlier run that did not "
                + "finish. Recover it with 'wsload report --recover \(RunJournal.path(forReport: outPath))', or remove it.")
            return .ioError
        }
        // A journal problem is told as it happens (the progress line may be drawing: a line of its own).
        let journal = RunJournal(toolVersion: WSLoad.version, commit: RunReport.gitCommit(), startAt: startAt?.date,
                                 reportPath: pathOfReport,
                                 onProblem: { output.printError((output.isErrorTerminal ? "\n" : "") + "warning: run journal: \($0); the run goes on without it") })

        guard let (signalLoop, live) = await startSignalLoopAndLive(liveOptions, profile: profile, runID: journal.runID,
                                                                    shard: shard, output: output)
        else { return .failure }
        defer { _ = signalLoop.shutdown() }
        let outcome: Result<RunResult, any Error>
        do {
            let result = try await withShutdownSignals(on: signalLoop) { shutdown in
                startAt?.announce(now: Date(), output: output, isQuiet: isQuiet)  // a Ctrl-C from now on ends the wait
                child.watchControl(shutdown)
                let progress = child.progress
                var run = LoadRun(profile: profile, shutdown: shutdown, shard: shard, onProgress: {
                    display.update($0)
                    live.update($0)
                    if let progress { ProgressLine.send($0, to: progress) }
                })
                run.journal = journal
                run.startAt = startAt?.date
                return try await RunHost(run, embeddedServer: child.embeddedServer).run()
            }
            outcome = .success(result)
        } catch {
            outcome = .failure(error)
        }
        display.finish()
        let result: RunResult
        switch outcome {
        case .failure(let error):
            journal.close()  // whatever it holds stays recoverable
            await live.stop()
            let exit = exitCode(forFailedRun: error)
            output.printError(exit == .internalError
                ? "Internal error (a bug in wsload; please report it): \(error)" : "Error: \(error)")
            if let junit = options.value("junit") {  // CI sees the run fail, even with no report
                _ = writeJUnitReport(JUnitReport.failedRun(profile: profile.name, at: Date(), reason: "\(error)"), to: junit,
                                     output: output)
            }
            return exit
        case .success(var value):
            value.runID = journal.runID  // the id the journal's header already gave the run
            journal.finish(value)  // the end record: the journal is now the whole run (a complete report recovers)
            keepIntervalLog(of: &value, journal: journal, reportPath: pathOfReport(value.startedAt), output: output)
            result = value
        }

        let report = RunReport.json(result, toolVersion: WSLoad.version, commit: RunReport.gitCommit())
        let text = report.formatted() + "\n"
        let reportPath = pathOfReport(result.startedAt)
        var exit = ExitCode.success
        var problems: [String] = []  // what went wrong after the run, for --junit
        do {
            try RunReport.writeAtomically(text, to: reportPath)
            if result.intervalLog?.file == nil { journal.remove() }  // else it is the interval log the report names
        } catch {
            output.printError("Error: cannot write the report to \(reportPath): \(error.localizedDescription)")
            problems.append("the report was not written: cannot write \(reportPath): \(error.localizedDescription)")
            // The journal is then the only record of the run: kept if it holds an interval (a header alone, or one
            // the same full disk cut short, recovers nothing).
            if journal.intervalCount > 0 { journal.close() } else { journal.remove() }
            if let kept = journal.path, journal.intervalCount > 0 {
                output.printError("the run journal \(kept) holds \(journal.intervalCount) intervals: "
                    + "'wsload report --recover \(kept) --out <file>' writes them as a report")
            }
            exit = .ioError
        }
        if options.has("json") {
            output.writeOutput(text)
        } else if !isQuiet {
            output.writeOutput(RunSummary.text(result, colors: output.usesColor))
        }
        let intervalLog = result.intervalLog?.file.map {
            URL(fileURLWithPath: reportPath).deletingLastPathComponent().appendingPathComponent($0).path
        }
        if exit == .success, let failure = writeExports(of: result, toolVersion: WSLoad.version, options: options,
                                                        output: output, intervalLog: intervalLog,
                                                        onProblem: { problems.append($0) }).failure
        {
            exit = failure
        }
        // Written whatever else failed: a report or an export that could not be written is a failing case of its own.
        if let junit = options.value("junit"), !writeJUnit(of: result, problems: problems, to: junit, output: output) {
            exit = .ioError
        }
        if exit == .success {
            if !isQuiet { output.printError("report: \(reportPath)") }
            exit = verdict(of: result, output: output)
        }
        await live.finish(result, exitCode: exit)
        return exit
    }

    /// The exit code of a run whose report and exports were written.
    static func verdict(of result: RunResult, output: CommandOutput) -> ExitCode {
        if result.interruptedBy != nil { return .interrupted }
        if let failure = JUnitReport.noConnection(result) {
            output.printError("Error: \(failure).")
            return .failure
        }
        if !result.invariantsHeld { return .invariantViolated }
        return result.thresholdsPassed ? .success : .thresholdsFailed
    }
}

extension RunCommand {
    /// A completed run whose report series was downsampled keeps its journal beside the report as the interval log
    /// (every base interval, `<report stem>.intervals.jsonl`), and the report names it. A journal that missed
    /// intervals (a problem stopped it) is not the whole log: it is removed as usual.
    static func keepIntervalLog(of result: inout RunResult, journal: RunJournal, reportPath: String, output: CommandOutput) {
        guard let log = result.intervalLog, log.factor > 1, journal.problem == nil, journal.intervalCount == log.count,
            let kept = journal.keepAsIntervalLog(ofReport: reportPath)
        else { return }
        if let problem = kept.problem {
            output.printError("warning: the interval log stays at \(kept.path) (\(problem)); 'wsload report --recover' reads "
                + "it, and a run with the same --out refuses to start until it is moved")
        }
        result.intervalLog?.file = URL(fileURLWithPath: kept.path).lastPathComponent
    }

    /// Whether anything (a file, a directory, a symlink, even a dangling one) is at `path`.
    static func isPresent(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// Where the report goes in `directory`: `<name>-<UTC start time>.json`, with `-shard<i>of<n>` for a slice. The
    /// journal of the run is this path + `.partial`, so the name is computed once, from the run's start.
    static func reportPath(in directory: String, profileName: String, startedAt: Date, shard: Shard?) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let slice = shard.map { "-shard\($0.index + 1)of\($0.count)" } ?? ""
        return directory + "/" + profileName + "-" + formatter.string(from: startedAt) + slice + ".json"
    }

    /// A run that could not start or finish fails with 1 when the cause is documented — the run's own refusals
    /// (``LoadRunError``: a missing token, too few files, the embedded server) and the runtime's (``RuntimeError``) —
    /// and with 70 for anything else, which only a bug in wsload can throw.
    static func exitCode(forFailedRun error: any Error) -> ExitCode {
        if error is StartWaitInterrupted { return .interrupted }  // stopped before anything ran: 130, no report
        return error is LoadRunError || error is RuntimeError ? .failure : .internalError
    }
}

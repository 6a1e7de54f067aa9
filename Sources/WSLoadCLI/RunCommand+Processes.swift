import Foundation
import LoadEngine
import Profile
import Reporting
import Runtime

extension RunCommand {
    /// `wsload run PROFILE --processes N|auto` (or a profile too big for one process): the parent runs no client.
    /// ``ProcessFleet`` runs the servers and one child per shard, each writing its report into a private directory
    /// (created beside `--out`, or under `$TMPDIR`); the parent merges them exactly as `wsload merge DIR` does
    /// (``MergeDirectory``, ``ReportMerger``), adds the chaos timeline as its server processes fired it, and writes
    /// the merged report, exports, summary and verdict as a single run would. A shard without a report (its process
    /// died) is named with its pid and how it ended, the merged report lists it (`run.missingShards`), and the run
    /// exits 6; a stop request exits 130 after the merged report (marked interrupted) is written. The directory is
    /// removed after a complete merge; otherwise its path is printed.
    static func runInProcesses(_ plan: ProcessPlan, profile: Profile, path: String, options: Arguments,
                               startAt: StartAtOption?, liveOptions: LiveOutputs.Options, output: CommandOutput) async -> ExitCode {
        let isQuiet = options.has("quiet")
        let outPath = options.value("out")
        let directory: String
        switch makePrivateDirectory(beside: outPath) {
        case .failure(let message):
            output.printError("Error: \(message)")
            return .ioError
        case .success(let made): directory = made
        }
        guard let (signalLoop, live) = await startSignalLoopAndLive(liveOptions, profile: profile, runID: RunResult.newRunID(),
                                                                    shard: nil, output: output)
        else { return .failure }
        defer { _ = signalLoop.shutdown() }
        let display = ProgressDisplay(output: output, isTerminal: output.isErrorTerminal, isQuiet: isQuiet)
        var forwarded: [String] = []
        for name in Arguments.profileOverrideOptions.sorted() {
            if let value = options.value(name) { forwarded += ["--\(name)", value] }
        }
        let fleet = ProcessFleet(plan: plan, profile: profile, profilePath: path, forwarded: forwarded, directory: directory,
                                 output: output, display: display, live: live)
        let outcome: ProcessFleet.Outcome
        var interruption: Int32?
        do {
            (outcome, interruption) = try await withShutdownSignals(on: signalLoop) { shutdown in
                startAt?.announce(now: Date(), output: output, isQuiet: isQuiet)
                return (await fleet.run(shutdown: shutdown, startAt: startAt?.date), shutdown.signal)
            }
        } catch {
            output.printError("Error: \(error)")
            return .failure
        }
        display.finish()
        if let failure = outcome.failure {
            output.printError("Error: \(failure)")
            removePrivateDirectory(directory, output: output)
            await live.stop()
            return interruption != nil ? .interrupted : .failure
        }
        // Every shard that left no report: named, with its pid and how its process ended.
        var missing: [Int] = []
        for index in 0..<plan.children where !isPresent(fleet.reportPath(ofShard: index)) {
            missing.append(index)
            let shard = Shard(index: index, count: plan.children)
            if let ended = outcome.shards[index] {
                output.printError("Error: shard \(shard) (pid \(ended.pid)) \(ended.termination) without a report"
                    + (ended.isKilledAtDeadline ? " (killed at the deadline)" : ""))
            } else {
                output.printError("Error: shard \(shard) did not start")
            }
        }
        var budget = HistogramDecodeBudget()
        let reports: [LoadedReport]
        switch MergeDirectory.reports(in: directory, budget: &budget, output: output) {
        case .failure(let failure):
            output.printError("Error: \(failure.message)")
            output.printError("the shards' files are left in \(directory)")
            await live.stop()
            return interruption != nil ? .interrupted : (missing.isEmpty ? failure.exitCode : .shardMissing)
        case .success(let found): reports = found
        }
        var merged: RunResult
        do {
            merged = try ReportMerger.merge(reports)
        } catch {
            output.printError("Error: the shards' reports do not merge: \(error)")
            output.printError("the shards' files are left in \(directory)")
            await live.stop()
            return .internalError
        }
        // The server processes ran the timeline (the shards had no server to hit): their record is the run's.
        merged.chaos = outcome.chaos
        merged.missingShards = missing.map { Shard(index: $0, count: plan.children) }

        let text = RunReport.json(merged, toolVersion: WSLoad.version, commit: RunReport.gitCommit()).formatted() + "\n"
        let reportPath = outPath ?? reportPath(in: options.value("report-dir") ?? profile.report.directory, profileName: profile.name,
                                               startedAt: merged.startedAt, shard: nil)
        var exit = ExitCode.success
        do {
            try RunReport.writeAtomically(text, to: reportPath)
        } catch {
            output.printError("Error: cannot write the report to \(reportPath): \(error.localizedDescription)")
            exit = .ioError
        }
        if options.has("json") {
            output.writeOutput(text)
        } else if !isQuiet {
            output.writeOutput(RunSummary.text(merged, colors: output.usesColor))
        }
        if exit == .success, let failure = writeExports(of: merged, toolVersion: WSLoad.version, options: options,
                                                        output: output).failure
        {
            exit = failure
        }
        if exit == .success, let junit = options.value("junit"), !writeJUnit(of: merged, to: junit, output: output) {
            exit = .ioError
        }
        if exit == .success && missing.isEmpty {
            removePrivateDirectory(directory, output: output)
        } else {
            output.printError("the shards' reports are left in \(directory)")
        }
        if exit == .success {
            if !isQuiet { output.printError("report: \(reportPath) (merged from \(reports.count) of \(plan.children) processes)") }
            if !missing.isEmpty {
                let named = merged.missingShards.map(\.description).joined(separator: ", ")
                output.printError("Error: shard" + (missing.count == 1 ? " " : "s ") + named + " missing: the merged report "
                    + "covers the other shards only")
            }
            exit = merged.interruptedBy != nil || interruption != nil ? .interrupted
                : missing.isEmpty ? verdict(of: merged, output: output) : .shardMissing
        }
        await live.finish(merged, exitCode: exit)
        return exit
    }

    /// A new directory only this user can enter, for the shards' reports: beside `out`, or under `$TMPDIR`.
    /// The loop that takes the shutdown signals, and the live endpoints (`--metrics`, `--dashboard`) started: nil
    /// when either fails, the error printed (and the loop shut down). The caller shuts the loop down after the run.
    static func startSignalLoopAndLive(_ options: LiveOutputs.Options, profile: Profile, runID: String, shard: Shard?,
                                       output: CommandOutput) async -> (EventLoop, LiveOutputs)? {
        let signalLoop: EventLoop
        do {
            signalLoop = try EventLoop(index: 0)
        } catch {
            output.printError("Error: \(error)")
            return nil
        }
        do {
            return (signalLoop, try await LiveOutputs.start(options, profile: profile, runID: runID, shard: shard, output: output))
        } catch {
            output.printError("Error: \(error)")
            _ = signalLoop.shutdown()
            return nil
        }
    }

    static func makePrivateDirectory(beside out: String?) -> Result<String, UsageError> {
        let parent = out.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }
            ?? (ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp")
        // The report's own directory is made as the report's writer would make it.
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            return .failure(UsageError("cannot create \(parent) for the shards' reports: \(error.localizedDescription)"))
        }
        for _ in 0..<8 {
            let path = parent + "/wsload-shards-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            if mkdir(path, 0o700) == 0 { return .success(path) }
            guard errno == EEXIST else {
                return .failure(UsageError("cannot create a directory for the shards' reports in \(parent): \(String(cString: strerror(errno)))"))
            }
        }
        return .failure(UsageError("cannot create a directory for the shards' reports in \(parent)"))
    }

    /// Removes the private directory and what the shards left in it (their reports, merged now).
    static func removePrivateDirectory(_ path: String, output: CommandOutput) {
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            output.printError("warning: cannot remove \(path): \(error.localizedDescription)")
        }
    }
}

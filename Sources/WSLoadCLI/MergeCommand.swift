import Foundation
import JSON
import LoadEngine
import Profile
import Reporting

/// `wsload merge A.json B.json … -o merged.json` or `wsload merge DIR`: shards (or side-by-side runs) of one profile
/// into one report.
enum MergeCommand: Subcommand {
    static let name = "merge"
    static let summary = "Merge reports of one profile (shards) into one, exactly."
    static let helpText = """
        OVERVIEW: Merge reports of one profile (shards) into one, exactly.

        Histograms add slot by slot and counters add, so merged percentiles are those of all the samples
        (never averages of percentiles); thresholds are evaluated again on the merged figures. Reports of
        different profiles (digests), shards of different splits, a shard given twice, histograms of
        different layouts, or an incomplete report (recovered from a run journal) are refused. The merged report goes to --out (or stdout).

        Given a directory, merges every *.json in it that is a wsload report (hidden files are not read):
        a merged report (run.mergedFrom) and JSON that is not a wsload report are skipped with a note;
        every shard of the split must be there (a missing one is named, exit 6).

        Reports given different start times (run.startAt, from 'run --start-at') are refused unless
        --allow-different-starts. The merged report keeps run.startAt and records run.startSkew: the
        seconds from the earliest shard's actual start to the latest's.

        USAGE: wsload merge <report.json> <report.json>... [-o <merged.json>]
               wsload merge <directory> [-o <merged.json>]

        OPTIONS:
          -o, --out <file>        Write the merged report here (atomically) instead of stdout.
          --allow-different-starts
                                  Merge reports whose run.startAt differ (the merged report has none).
          -h, --help              Show help information.

        EXIT CODES:
          0 merged, 6 a shard is missing (directory), 64 usage, 65 a report is invalid or the reports do not
          merge, 66 a report (or the directory) is unreadable, 74 the merged report not written.

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        var inputs: [String] = []
        var out: String?
        var allowsDifferentStarts = false
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "-o" || argument == "--out" {
                guard index + 1 < arguments.count else {
                    output.printError("Error: option '\(argument)' needs a value. See 'wsload merge --help'.")
                    return .usage
                }
                out = arguments[index + 1]
                index += 2
                continue
            }
            if argument.hasPrefix("--out=") {
                out = String(argument.dropFirst("--out=".count))
            } else if argument == "--allow-different-starts" {
                allowsDifferentStarts = true
            } else if argument.hasPrefix("-") {
                output.printError("Error: unknown option '\(argument)'. See 'wsload merge --help'.")
                return .usage
            } else {
                inputs.append(argument)
            }
            index += 1
        }
        let directory = inputs.count == 1 && isDirectory(inputs[0]) ? inputs[0] : nil
        guard directory != nil || inputs.count >= 2 else {
            output.printError("Error: merge needs a directory or at least two reports. See 'wsload merge --help'.")
            return .usage
        }
        if directory == nil, let given = inputs.first(where: isDirectory) {
            output.printError("Error: \(given) is a directory: give one directory, or report files. See 'wsload merge --help'.")
            return .usage
        }
        var reports: [LoadedReport] = []
        var budget = HistogramDecodeBudget()  // one for every input: many crafted files add up to one budget
        if let directory {
            switch MergeDirectory.reports(in: directory, budget: &budget, output: output) {
            case .success(let found): reports = found
            case .failure(let failure):
                output.printError("Error: \(failure.message)")
                return failure.exitCode
            }
        }
        for path in directory == nil ? inputs : [] {
            switch loadReport(path, budget: &budget) {
            case .success(let report): reports.append(report)
            case .failure(let failure):
                failure.print(to: output)
                return failure.exitCode
            }
        }
        // A recovered report holds only the intervals closed before its run died: merged, its partial totals
        // would pass for a whole shard's.
        if let incomplete = reports.first(where: \.result.isIncomplete) {
            output.printError("Error: \(incomplete.source): incomplete (recovered from the run journal "
                + "\(incomplete.result.recoveredFrom ?? "")); merging it would present partial totals as a whole run's")
            return .invalidInput
        }
        var merged: RunResult
        do {
            merged = try ReportMerger.merge(reports, allowsDifferentStarts: allowsDifferentStarts)
        } catch {
            output.printError("Error: \(error)")
            return .invalidInput
        }
        if let directory, let missing = MergeDirectory.missingShards(reports, directory: directory) {
            output.printError("Error: \(missing.message)")
            return missing.exitCode
        }
        if let counts = reports.first?.result.shard?.count, reports.count < counts {
            output.printError("warning: \(reports.count) of \(counts) shards merged; the report covers only those slices")
        }
        let mergedLog = mergeIntervalLogs(of: reports, into: &merged, out: out, output: output)
        let text = RunReport.json(merged, toolVersion: WSLoad.version, commit: reports[0].commit).formatted() + "\n"
        guard let out else {
            output.writeOutput(text)
            return .success
        }
        do {
            try RunReport.writeAtomically(text, to: out)
        } catch {
            output.printError("Error: cannot write \(out): \(error.localizedDescription)")
            if let mergedLog { _ = unlink(mergedLog) }  // it belongs to the report that was not written
            return .ioError
        }
        output.printError("merged \(reports.count) reports into \(out)" + (mergedLog.map { ", every base interval in \($0)" } ?? ""))
        return .success
    }
}

extension MergeCommand {
    /// When the merged series is downsampled, writes its full-resolution interval log beside `out` — the inputs' logs
    /// merged base interval by base interval (``MergedIntervalLog``) — and names it in `merged`; when an input has no
    /// log (none named, or the named file missing), the base intervals do not align, or the report goes to stdout, names
    /// none and says why in `intervalSeries.fileMissing`, with one warning line. Returns the log's path when written.
    static func mergeIntervalLogs(of reports: [LoadedReport], into merged: inout RunResult, out: String?,
                                  output: CommandOutput) -> String? {
        guard var log = merged.intervalLog, log.factor > 1 else { return nil }
        func missing(_ why: String) -> String? {
            log.fileMissing = why
            merged.intervalLog = log
            if out != nil { output.printError("warning: no merged interval log: \(why); the merged report names none") }
            return nil
        }
        guard let out else { return missing("the merged report went to standard output, with no file beside it") }
        var logs: [(report: LoadedReport, path: String)] = []
        for report in reports {
            guard let file = report.result.intervalLog?.file else {
                let why = report.result.intervalLog?.fileMissing.map { " (\($0))" }
                    ?? (report.result.intervalFactor == 1 ? " (its report holds every interval, but not per scenario)" : "")
                return missing("\(report.source) names no interval log\(why)")
            }
            let path = URL(fileURLWithPath: report.source).deletingLastPathComponent().appendingPathComponent(file).path
            var status = stat()
            guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
                return missing("\(report.source) names the interval log \(path), which is missing")
            }
            logs.append((report, path))
        }
        if let problem = MergedIntervalLog.alignmentProblem(reports) { return missing(problem) }
        guard let path = RunJournal.intervalLogCandidates(forReport: out).first(where: { !RunCommand.isPresent($0) }) else {
            return missing("\(RunJournal.intervalLogPath(forReport: out)) and the names after it exist")
        }
        do {
            try FileManager.default.createDirectory(at: URL(fileURLWithPath: out).deletingLastPathComponent(),
                                                    withIntermediateDirectories: true)
            try MergedIntervalLog.write(logs: logs, merged: merged, report: out, to: path, toolVersion: WSLoad.version,
                                        commit: reports[0].commit)
        } catch {
            return missing("\(error)")
        }
        log.file = URL(fileURLWithPath: path).lastPathComponent
        merged.intervalLog = log
        return path
    }
}

private func isDirectory(_ path: String) -> Bool {
    var isDirectory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
}

/// Why a report could not be used: unreadable (66) or not a valid report (65).
struct ReportLoadFailure: Error {
    var error: ReportFormatError
    var isUnreadable: Bool

    var exitCode: ExitCode { isUnreadable ? .noInput : .invalidInput }

    func print(to output: CommandOutput) {
        output.printError("Error: \(error)")
    }
}

/// Reads one report with a decode budget of its own (a command that reads one file).
func loadReport(_ path: String) -> Result<LoadedReport, ReportLoadFailure> {
    var budget = HistogramDecodeBudget()
    return loadReport(path, budget: &budget)
}

/// Reads one report, its histograms taken from `budget`: a command reading several files passes one budget to all.
func loadReport(_ path: String, budget: inout HistogramDecodeBudget) -> Result<LoadedReport, ReportLoadFailure> {
    do {
        return .success(try LoadedReport(contentsOf: path, budget: &budget))
    } catch {
        return .failure(ReportLoadFailure(error: error, isUnreadable: error.isUnreadable))
    }
}

import Foundation
import LoadEngine
import Profile
import Reporting

/// `wsload report X.json`: the summary of a saved report, and exports of it.
enum ReportCommand: Subcommand {
    static let name = "report"
    static let summary = "Print a saved report's summary; export it as HTML or an HdrHistogram log."
    static let helpText = """
        OVERVIEW: Print a saved report's summary; export it as HTML or an HdrHistogram log.

        --html writes one self-contained HTML file (inline SVG plots: latency over time, percentile
        spectra, throughput, connections, errors, thresholds). --hlog writes an HdrHistogram interval log
        (format 1.3): one line per interval and latency metric, tagged with the metric's name, readable by
        HdrHistogram's own tools.

        --recover reads the journal a run left beside its report (<report>.partial) when it was killed
        before writing the report, and writes the report of every interval the journal holds, marked
        incomplete ("run.incomplete": true): its totals are the exact sum of those intervals. A torn last
        line (the run was killed while writing it) is ignored with a warning; any other bad line is an
        error naming its line and byte offset (exit 65). It reads the interval log a completed run keeps
        beside a downsampled report (<report stem>.intervals.jsonl, the same format) the same way; a
        journal that ends with the run's end record (the run completed) gives its complete report. When
        the series is downsampled, the journal is kept beside the recovered report as <out
        stem>.intervals.jsonl (never replacing a file; a .partial journal is renamed), and the report
        names it.

        --hlog writes every base interval: from the interval log the report names (intervalSeries.file,
        beside the report) when its series was downsampled, else the report's own intervals.

        USAGE: wsload report <report.json> [--html <file.html>] [--hlog <file.hlog>]
               wsload report --recover <report.json.partial> [--out <report.json>]

        OPTIONS:
          --html <file>           Write the HTML report.
          --hlog <file>           Write the interval histograms as an HdrHistogram log.
          --recover <journal>     Write the report of a run journal left by a run that was killed.
          --out <file>            With --recover: write the report here. (default: the journal's path
                                  without .partial, or <stem>.json for <stem>.intervals.jsonl; it must
                                  not exist)
          -h, --help              Show help information.

        EXIT CODES:
          0 done, 64 usage, 65 not a valid report or journal, 66 unreadable, 74 output not written.

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        if arguments.contains(where: { $0 == "--recover" || $0.hasPrefix("--recover=") }) {
            return recover(arguments: arguments, output: output)
        }
        guard let path = arguments.first, !path.hasPrefix("--") else {
            output.printError("Error: missing <report.json>. See 'wsload report --help'.")
            return .usage
        }
        let options: Arguments
        do {
            options = try Arguments(Array(arguments.dropFirst()), valueOptions: ["hlog", "html"], flagOptions: [])
        } catch {
            output.printError("Error: \(error). See 'wsload report --help'.")
            return .usage
        }
        let report: LoadedReport
        switch loadReport(path) {
        case .success(let loaded): report = loaded
        case .failure(let failure):
            failure.print(to: output)
            return failure.exitCode
        }
        // The interval log a downsampled report names sits beside it.
        let intervalLog = report.result.intervalLog?.file.map {
            URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent($0).path
        }
        let exports = writeExports(of: report.result, toolVersion: report.toolVersion, options: options, output: output,
                                   intervalLog: intervalLog)
        if let failure = exports.failure { return failure }
        if !exports.written.isEmpty {
            for path in exports.written { output.printError("wrote \(path)") }
            return .success
        }
        output.writeOutput(RunSummary.text(report.result, colors: output.usesColor))
        return .success
    }
}

extension ReportCommand {
    /// `wsload report --recover JOURNAL [--out FILE]`: the report of a killed run's journal, marked incomplete.
    static func recover(arguments: [String], output: CommandOutput) -> ExitCode {
        let options: Arguments
        do {
            options = try Arguments(arguments, valueOptions: ["recover", "out", "hlog", "html"], flagOptions: [])
        } catch {
            output.printError("Error: \(error). See 'wsload report --help'.")
            return .usage
        }
        guard let journalPath = options.value("recover"), !journalPath.isEmpty else {
            output.printError("Error: --recover needs the journal's path. See 'wsload report --help'.")
            return .usage
        }
        let outPath: String
        if let chosen = options.value("out") {
            outPath = chosen
        } else if let report = defaultReportPath(ofJournal: journalPath) {
            outPath = report
            guard !RunCommand.isPresent(outPath) else {
                output.printError("Error: \(outPath) exists; name the recovered report with --out.")
                return .ioError
            }
        } else {
            output.printError("Error: \(journalPath) does not end in \(RunJournal.suffix) or \(RunJournal.intervalLogSuffix): "
                + "name the report with --out.")
            return .usage
        }
        let recovered: JournalRecovery
        do {
            recovered = try JournalRecovery(contentsOf: journalPath)
        } catch {
            output.printError("Error: \(error)")
            return error.isUnreadable ? .noInput : .invalidInput
        }
        for warning in recovered.warnings { output.printError("warning: \(warning)") }
        var result = recovered.result
        // A downsampled series names the full-resolution log: the journal, given a name beside the recovered report.
        var placed: RunJournal.PlacedLog?
        if result.intervalFactor > 1 {
            switch RunJournal.placeIntervalLog(journalPath, besideReport: outPath) {
            case .success(let log):
                placed = log
                result.intervalLog?.file = URL(fileURLWithPath: log.path).lastPathComponent
            case .failure(let problem):
                output.printError("warning: no interval log beside \(outPath) (\(problem)): every interval stays in "
                    + "\(journalPath), which the report does not name")
            }
        }
        let text = RunReport.json(result, toolVersion: recovered.toolVersion, commit: recovered.commit).formatted() + "\n"
        do {
            try RunReport.writeAtomically(text, to: outPath)
        } catch {
            output.printError("Error: cannot write the report to \(outPath): \(error.localizedDescription)")
            if let placed, placed.isNew { _ = unlink(placed.path) }  // the journal keeps its own name
            return .ioError
        }
        // A journal left by a run is now the interval log: its own name goes (a run with the same --out may start).
        if let placed, placed.isNew, journalPath.hasSuffix(RunJournal.suffix) { _ = unlink(journalPath) }
        let intervalLog = placed?.path ?? (result.intervalFactor > 1 ? journalPath : nil)
        if let failure = writeExports(of: result, toolVersion: recovered.toolVersion, options: options, output: output,
                                      intervalLog: intervalLog).failure
        {
            return failure
        }
        output.writeOutput(RunSummary.text(result, colors: output.usesColor))
        output.printError("recovered \(result.intervals.count) intervals from \(journalPath) into \(outPath) "
            + (result.isIncomplete ? "(marked incomplete)" : "(complete: the journal has the run's end record)")
            + (placed.map { ", every interval in \($0.path)" } ?? ""))
        return .success
    }
}

/// The report a journal's recovery is written to by default: `r.json.partial` → `r.json`, `r.intervals.jsonl` →
/// `r.json`; nil for another name.
func defaultReportPath(ofJournal path: String) -> String? {
    for suffix in [RunJournal.suffix, RunJournal.intervalLogSuffix] where path.hasSuffix(suffix) && path.count > suffix.count {
        return String(path.dropLast(suffix.count)) + (suffix == RunJournal.suffix ? "" : ".json")
    }
    return nil
}

/// Writes the run's interval histograms as an HdrHistogram log to `path`, one tag per latency metric, streamed: every
/// base interval, from `intervalLog` (the full-resolution log beside a downsampled report) when there is one, else the
/// result's own intervals. A log that cannot be opened is told and the report's intervals are written instead.
func writeHistogramLog(of result: RunResult, intervalLog: String?, to path: String, output: CommandOutput) throws {
    var reader: JournalReader?
    if let intervalLog {
        let instead = "the HdrHistogram log holds the report's \(result.intervals.count) intervals "
            + "(\(result.intervalFactor) base intervals each) instead"
        do {
            var opened = try JournalReader(contentsOf: intervalLog)
            do {
                let header = try opened.readHeader()
                if let id = header.runID, let expected = result.runID, id != expected {
                    output.printError("warning: \(intervalLog) is the interval log of another run (run.id \(id)); " + instead)
                    opened.close()
                } else {
                    reader = opened
                }
            } catch {
                opened.close()
                throw error
            }
        } catch {
            output.printError("warning: \(error); " + instead)
        }
    }
    defer { reader?.close() }
    try RunReport.writeAtomically(to: path) { write in
        try write(HistogramLog.header(startTime: result.startedAt, comment: "[wsload \(WSLoad.version): \(result.profile.name)]"))
        func writeEntries(of interval: RunResult.Interval) throws {
            for metric in MetricCatalog.latencies {
                // One histogram decoded at a time (a report's intervals are at rest).
                guard let histogram = try interval.histogram(named: metric.name), histogram.totalCount > 0 else { continue }
                try write(HistogramLog.line(.init(
                    tag: metric.name, start: interval.start.seconds, length: (interval.end - interval.start).seconds,
                    histogram: histogram)))
            }
        }
        guard var log = reader else {
            for interval in result.intervals { try writeEntries(of: interval) }
            return
        }
        var budget = JournalRecovery.decodeBudget(forJournalOf: log.size)
        while let next = try log.nextInterval(budget: &budget) { try writeEntries(of: next.0.total) }
        for warning in log.warnings { output.printError("warning: \(warning)") }
    }
}

/// Writes the exports `options` ask for (`--hlog`, `--html`) atomically; returns the paths written, or the exit code
/// after reporting a file that could not be written (74) or an interval of the report that does not decode (65). `intervalLog` is the full-resolution interval log a
/// downsampled result names (resolved to a path), which `--hlog` reads.
func writeExports(of result: RunResult, toolVersion: String, options: Arguments, output: CommandOutput,
                  intervalLog: String? = nil, onProblem: (String) -> Void = { _ in }) -> (written: [String], failure: ExitCode?) {
    func fail(_ problem: String) {
        output.printError("Error: " + problem)
        onProblem(problem)
    }
    var written: [String] = []
    if let path = options.value("hlog") {
        do {
            try writeHistogramLog(of: result, intervalLog: intervalLog, to: path, output: output)
        } catch let error as ReportFormatError {
            fail("cannot write \(path): \(error)")
            return (written, .invalidInput)
        } catch let error as JournalFormatError {
            fail("cannot write \(path): \(error)")
            return (written, .ioError)
        } catch {
            fail("cannot write \(path): \(error.localizedDescription)")
            return (written, .ioError)
        }
        written.append(path)
    }
    if let path = options.value("html") {
        let html: String
        do {
            html = try RunHTML.render(result, toolVersion: toolVersion)
        } catch {
            fail("cannot write \(path): \(error)")
            return (written, .invalidInput)
        }
        do {
            try RunReport.writeAtomically(html, to: path)
        } catch {
            fail("cannot write \(path): \(error.localizedDescription)")
            return (written, .ioError)
        }
        written.append(path)
    }
    return (written, nil)
}

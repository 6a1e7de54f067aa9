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

        USAGE: wsload report <report.json> [--html <file.html>] [--hlog <file.hlog>]

        OPTIONS:
          --html <file>           Write the HTML report.
          --hlog <file>           Write the interval histograms as an HdrHistogram log.
          -h, --help              Show help information.

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
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
        switch writeExports(of: report.result, toolVersion: report.toolVersion, options: options, output: output) {
        case nil: return .ioError
        case let written? where !written.isEmpty:
            for path in written { output.printError("wrote \(path)") }
            return .success
        default: break
        }
        output.writeOutput(RunSummary.text(report.result, colors: output.usesColor))
        return .success
    }
}

/// The run's interval histograms as an HdrHistogram log, one tag per latency metric.
func histogramLog(_ result: RunResult) -> String {
    var entries: [HistogramLog.Entry] = []
    for interval in result.intervals {
        for metric in MetricCatalog.latencies {
            guard let histogram = interval.metrics[histogram: metric], histogram.totalCount > 0 else { continue }
            entries.append(.init(
                tag: metric.name, start: interval.start.seconds, length: (interval.end - interval.start).seconds,
                histogram: histogram))
        }
    }
    return HistogramLog.text(entries: entries, startTime: result.startedAt,
                             comment: "[wsload \(WSLoad.version): \(result.profile.name)]")
}

/// Writes the exports `options` ask for (`--hlog`, `--html`) atomically; returns the paths written, or
/// nil after reporting a file that could not be written.
func writeExports(of result: RunResult, toolVersion: String, options: Arguments, output: CommandOutput) -> [String]? {
    let exports: [(option: String, render: () -> String)] = [
        ("hlog", { histogramLog(result) }), ("html", { RunHTML.render(result, toolVersion: toolVersion) }),
    ]
    var written: [String] = []
    for (option, render) in exports {
        guard let path = options.value(option) else { continue }
        do {
            try RunReport.writeAtomically(render(), to: path)
        } catch {
            output.printError("Error: cannot write \(path): \(error.localizedDescription)")
            return nil
        }
        written.append(path)
    }
    return written
}

import Foundation
import HTTP1
import Profile
import JSON
import LoadEngine
import Reporting

/// `wsload compare BASE HEAD`: metric by metric, with significance, and a regression gate for CI.
enum CompareCommand: Subcommand {
    static let name = "compare"
    static let summary = "Compare two reports (or two sets of repeated runs) with a CI gate."
    static let helpText = """
        OVERVIEW: Compare two reports (or two sets of repeated runs) with a CI gate.

        BASE and HEAD are each a report or a directory of reports (repeated runs of one configuration).
        For every latency metric (p50, p90, p99, p99.9, mean), throughput and the error rate it shows base,
        head, the change and whether the change is significant: Mann–Whitney U across the runs when both
        sides have 2 or more (5 or more are needed for p < 0.05); for single runs, a block bootstrap over
        their intervals (so a change is weighed against how much the figure moved within each run); for
        reports without an interval series, a bootstrap over the HDR histograms and Poisson/binomial tests.
        Not significant shows as ~. Repeated runs give the firmest verdict.
        Flow steps show as flow.step{step=X} p50 and p99 and their error rate errors{step=X}; a step only
        one side has shows as added or removed (never a regression).

        Exits 5 if a significant change is worse than a budget. Default budgets: ws.message_rtt p50 +10%,
        ws.message_rtt p99 +10%, ws.connect p99 +25%, ws.messages_received per_second -10%.

        USAGE: wsload compare <base> <head> [options]

        OPTIONS:
          --fail-on <budget>      A budget such as 'ws.message_rtt p99 +10%' or
                                  'ws.messages_received per_second -5%' (repeatable; replaces the defaults).
          --alpha <p>             Significance level. (default: 0.05)
          --markdown              Print a Markdown table (for a pull-request comment).
          --json                  Print JSON.
          --html <file>           Also write an HTML comparison (base and head overlaid).
          --junit <file>          Also write the budgets as JUnit XML test cases (for CI).
          -h, --help              Show help information.

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        let startedAt = Date(), clock = ContinuousClock(), start = clock.now  // the JUnit suite's timestamp and time
        let positional = Array(arguments.prefix { !$0.hasPrefix("--") })
        guard positional.count == 2 else {
            output.printError("Error: compare takes <base> and <head>. See 'wsload compare --help'.")
            return .usage
        }
        let options: Arguments
        var budgets = RegressionBudget.defaults
        let alpha: Double
        do {
            options = try Arguments(Array(arguments.dropFirst(2)), valueOptions: ["fail-on", "alpha", "html", "junit"], flagOptions: ["markdown", "json"])
            alpha = try options.fraction("alpha") ?? 0.05
            if !options.values("fail-on").isEmpty {
                budgets = []
                for text in options.values("fail-on") {
                    guard let budget = RegressionBudget(parsing: text) else {
                        throw UsageError("--fail-on: \"\(text)\" is not a budget (e.g. 'ws.message_rtt p99 +10%')")
                    }
                    budgets.append(budget)
                }
            }
        } catch {
            output.printError("Error: \(error). See 'wsload compare --help'.")
            return .usage
        }
        var sides: [ComparisonSide] = []
        var results: [[RunResult]] = []
        var digests: [Set<String>] = []
        var budget = HistogramDecodeBudget()  // one for both sides and every report in them
        for path in positional {
            switch loadSide(path, budget: &budget) {
            case .failure(let failure):
                failure.print(to: output)
                return failure.exitCode
            case .success(let reports):
                for report in reports where report.result.isIncomplete {
                    output.printError("warning: \(report.source) is incomplete (recovered from the run journal "
                        + "\(report.result.recoveredFrom ?? "")): it covers only the intervals closed before its run died")
                }
                var runs: [ComparisonSide.Run] = []
                for report in reports {
                    do {
                        runs.append(.init(
                            metrics: report.result.total,
                            seconds: min(report.result.elapsed, report.result.profile.duration).seconds,
                            intervals: try report.result.intervals.map {
                                // One interval decoded at a time, kept sparse.
                                IntervalSample(try $0.metrics, seconds: ($0.end - $0.start).seconds)
                            }))
                    } catch {
                        output.printError("Error: \(error)")
                        return .invalidInput
                    }
                }
                sides.append(ComparisonSide(label: path, runs: runs))
                digests.append(Set(reports.map(\.profileDigest)))
                results.append(reports.map(\.result))
            }
        }
        if digests[0] != digests[1] {
            output.printError("note: base and head ran different profiles (digests differ); comparing anyway")
        }
        let rows = Comparator.compare(base: sides[0], head: sides[1])
        let failures = rows.flatMap { row in budgets.filter { $0.isExceeded(by: row, alpha: alpha) }.map { (row, $0) } }
        if options.has("json") {
            output.writeOutput(json(rows: rows, sides: sides, failures: failures, alpha: alpha).formatted() + "\n")
        } else {
            output.writeOutput(table(rows: rows, sides: sides, budgets: budgets, alpha: alpha, markdown: options.has("markdown")))
        }
        if let path = options.value("html") {
            let html: String
            do {
                html = try RunHTML.renderComparison(
                    base: results[0], head: results[1], baseLabel: positional[0], headLabel: positional[1], rows: rows,
                    isRegression: { row in budgets.contains { $0.isExceeded(by: row, alpha: alpha) } }, alpha: alpha,
                    toolVersion: WSLoad.version)
            } catch {
                output.printError("Error: cannot write \(path): \(error)")
                return .invalidInput
            }
            do {
                try RunReport.writeAtomically(html, to: path)
            } catch {
                output.printError("Error: cannot write \(path): \(error.localizedDescription)")
                return .ioError
            }
        }
        // Written before the verdict, failing or not (CI reads it either way); the regressions are still told when it
        // cannot be written, and the exit is then 74.
        var isJUnitWritten = true
        if let path = options.value("junit") {
            let report = JUnitReport.comparison(
                rows: rows, budgets: budgets, alpha: alpha, profile: results[1].first?.profile.name ?? "compare",
                timestamp: startedAt, seconds: (clock.now - start).seconds)
            isJUnitWritten = writeJUnitReport(report, to: path, output: output)
        }
        for (row, budget) in failures {
            output.printError("regression: \(row.metric) \(row.statistic) \(FigureText.change(row)) beyond the budget \(budget)")
        }
        guard isJUnitWritten else { return .ioError }
        return failures.isEmpty ? .success : .regression
    }

    /// A report, or every report in a directory.
    static func loadSide(_ path: String, budget: inout HistogramDecodeBudget) -> Result<[LoadedReport], ReportLoadFailure> {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return loadReport(path, budget: &budget).map { [$0] }
        }
        // A directory that cannot be listed has no reports; that is reported as such below.
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [])
            .filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
        guard !files.isEmpty else {
            return .failure(ReportLoadFailure(error: ReportFormatError(path: path, reason: "holds no .json reports"), isUnreadable: true))
        }
        var reports: [LoadedReport] = []
        for file in files {
            switch loadReport(path + "/" + file, budget: &budget) {
            case .success(let report): reports.append(report)
            case .failure(let failure): return .failure(failure)
            }
        }
        return .success(reports)
    }

    static func table(rows: [ComparisonRow], sides: [ComparisonSide], budgets: [RegressionBudget], alpha: Double, markdown: Bool) -> String {
        var lines: [[String]] = [["metric", "base", "head", "change", "", ""]]
        for row in rows {
            let budget = budgets.first { $0.metric == row.metric && $0.statistic == row.statistic }
            let exceeded = budget?.isExceeded(by: row, alpha: alpha) == true
            // Flow rows carry step names from the report's profile: shown through printable, like any file-supplied text.
            lines.append([
                TerminalText.printable("\(row.metric) \(row.statistic)", limit: 120), FigureText.statistic(row.base, unit: row.unit),
                FigureText.statistic(row.head, unit: row.unit),
                row.presence != .both ? row.presence.rawValue : row.isSignificant(alpha: alpha) ? FigureText.change(row) : "~",
                "(\(FigureText.pValue(row.pValue)))",
                exceeded ? "REGRESSION (budget \(budget!.percent >= 0 ? "+" : "")\(String(format1: budget!.percent))%)" : "",
            ])
        }
        let header = "base: \(sides[0].label) (\(sides[0].runs.count) run\(sides[0].runs.count == 1 ? "" : "s"))   "
            + "head: \(sides[1].label) (\(sides[1].runs.count) run\(sides[1].runs.count == 1 ? "" : "s"))   "
            + "test: \(rows.first?.test ?? "-"), α = \(alpha)\n"
        if markdown {
            var text = header + "\n| metric | base | head | change | p | |\n|---|---:|---:|---:|---:|---|\n"
            for line in lines.dropFirst() {
                text += "| " + line.map { $0.isEmpty ? " " : $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |\n"
            }
            return text
        }
        let widths = (0..<lines[0].count).map { column in lines.map { $0[column].count }.max() ?? 0 }
        var text = header + "\n"
        for line in lines {
            let cells = line.enumerated().map { column, cell in
                column == 0 ? cell.padding(toWidth: widths[column]) : cell.leftPadded(to: widths[column], with: " ") + " "
            }
            text += cells.joined(separator: " ").trimmingTrailingSpaces() + "\n"
        }
        return text
    }

    static func json(rows: [ComparisonRow], sides: [ComparisonSide], failures: [(ComparisonRow, RegressionBudget)], alpha: Double) -> JSONValue {
        [
            "base": ["label": .string(sides[0].label), "runs": JSONValue(sides[0].runs.count)],
            "head": ["label": .string(sides[1].label), "runs": JSONValue(sides[1].runs.count)],
            "alpha": .number(alpha),
            "rows": .array(rows.map { row in
                [
                    "metric": .string(row.metric), "statistic": .string(row.statistic), "unit": .string(row.unit),
                    "base": .number(row.base), "head": .number(row.head),
                    "changePercent": row.changePercent.map { .number(($0 * 100).rounded() / 100) } ?? .null,
                    "pValue": .number(row.pValue), "test": .string(row.test),
                    "significant": .bool(row.isSignificant(alpha: alpha)), "presence": .string(row.presence.rawValue),
                ]
            }),
            "regressions": .array(failures.map { row, budget in
                ["metric": .string(row.metric), "statistic": .string(row.statistic), "budget": .string(budget.description)]
            }),
        ]
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character) -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }

    func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}

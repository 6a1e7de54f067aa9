import Reporting

extension RunCommand {
    /// Writes `--junit FILE`: whether the run completed, and its thresholds and invariants, as JUnit test cases;
    /// `problems` (the report or an export that could not be written) fail the `run` case. Returns false, after saying
    /// why on stderr, when the file cannot be written (the run then exits 74).
    static func writeJUnit(of result: RunResult, problems: [String] = [], to path: String, output: CommandOutput) -> Bool {
        writeJUnitReport(JUnitReport.run(result, problems: problems), to: path, output: output)
    }
}

/// Writes `report` atomically at `path` (a temporary beside it, renamed into place: a CI system never reads half a
/// file), for `run --junit` and `compare --junit`. Returns false, after saying why on stderr, when it cannot.
func writeJUnitReport(_ report: JUnitReport, to path: String, output: CommandOutput) -> Bool {
    do {
        try RunReport.writeAtomically(report.xml(), to: path)
        return true
    } catch {
        output.printError("Error: --junit: cannot write \(path): \(error.localizedDescription)")
        return false
    }
}

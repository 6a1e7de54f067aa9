import Reporting

extension RunCommand {
    /// Writes `--junit FILE`: the run's thresholds and invariants as JUnit test cases. Returns false, after saying why
    /// on stderr, when the file cannot be written (the run then exits 74).
    static func writeJUnit(of result: RunResult, to path: String, output: CommandOutput) -> Bool {
        // SKELETON (r-junit replaces this).
        output.printError("Error: --junit: not built yet")
        return false
    }
}

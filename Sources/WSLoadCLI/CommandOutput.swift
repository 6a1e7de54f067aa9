import Glibc
import HTTP1

/// Where a command writes: standard output and standard error, replaceable in tests.
package struct CommandOutput: Sendable {
    package var writeOutput: @Sendable (String) -> Void
    package var writeError: @Sendable (String) -> Void
    /// Whether standard error is a terminal (live progress redraws in place only there).
    package var isErrorTerminal: Bool
    /// Whether standard output is a terminal and `NO_COLOR` is unset: the summary may use colour.
    package var usesColor: Bool

    package init(
        writeOutput: @escaping @Sendable (String) -> Void, writeError: @escaping @Sendable (String) -> Void,
        isErrorTerminal: Bool = false, usesColor: Bool = false
    ) {
        self.writeOutput = writeOutput
        self.writeError = writeError
        self.isErrorTerminal = isErrorTerminal
        self.usesColor = usesColor
    }

    /// The process's stdout and stderr, unbuffered.
    package static let standard = CommandOutput(
        writeOutput: { writeAll(STDOUT_FILENO, $0) },
        writeError: { writeAll(STDERR_FILENO, $0) },
        isErrorTerminal: isatty(STDERR_FILENO) == 1,
        usesColor: isatty(STDOUT_FILENO) == 1 && (getenv("NO_COLOR").map { $0.pointee == 0 } ?? true)
    )

    /// The most of one message ``printError(_:)`` writes (in Unicode scalars); a peer's text cannot flood the terminal.
    package static let maximumErrorLength = 64 * 1024

    /// Writes `text` followed by a newline to standard output, every control character but line feed and tab shown
    /// escaped (``TerminalText``): messages quote what peers and files said. Colour and progress, which are wsload's
    /// own escapes, go through ``writeOutput`` and ``writeError`` directly.
    package func print(_ text: String) {
        writeOutput((TerminalText.isPrintable(text) ? text : TerminalText.printable(text, limit: .max, keepingLineBreaks: true)) + "\n")
    }

    /// Writes `text` followed by a newline to standard error, made printable as ``print(_:)`` does and cut at
    /// ``maximumErrorLength``: error messages quote status reasons, error pages, URLs and names as peers wrote them.
    package func printError(_ text: String) {
        let isSafe = text.utf8.count <= Self.maximumErrorLength && TerminalText.isPrintable(text)
        writeError((isSafe ? text : TerminalText.printable(text, limit: Self.maximumErrorLength, keepingLineBreaks: true)) + "\n")
    }
}

private func writeAll(_ descriptor: Int32, _ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeMutableBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0 {
            if errno == EINTR { continue }
            return
        }
        offset += written
    }
    bytes.removeAll()
}

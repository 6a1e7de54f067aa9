/// The `wsload` command line: parses the first argument and dispatches to a subcommand.
///
/// `main(arguments:)` never exits the process and never reads global state other than what is
/// passed in, so tests run it in-process and compare its output and exit code.
package enum WSLoad {
    /// The tool's version, printed by `--version` and written into reports.
    package static let version = "0.2.0"

    /// The subcommands, in the order help lists them. Each arrives with the issue that builds it.
    static let commands: [any Subcommand.Type] = [
        RunCommand.self, ValidateCommand.self, CompareCommand.self, MergeCommand.self, ReportCommand.self, DownloadCommand.self,
        ServeCommand.self, ProxyCommand.self,
        DistributeCommand.self,
        AutobahnCommand.self, HelpCommand.self,
    ]

    /// Runs `wsload` with `arguments` (without the program name) and returns the exit code.
    package static func main(arguments: [String], output: CommandOutput = .standard) async -> ExitCode {
        guard let first = arguments.first else {
            output.writeError(usageText + "\n")
            output.printError("Error: missing subcommand. See 'wsload --help'.")
            return .usage
        }
        switch first {
        case "-h", "--help":
            output.writeOutput(helpText)
            return .success
        case "--version":
            output.print("wsload \(version)")
            return .success
        default:
            break
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            let hint = first.hasPrefix("-") ? "unknown option '\(first)'" : "unknown subcommand '\(first)'"
            output.printError("Error: \(hint). See 'wsload --help'.")
            return .usage
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("-h") || rest.contains("--help") {
            output.writeOutput(command.helpText)
            return .success
        }
        return await command.run(arguments: rest, output: output)
    }

    static let usageText = "USAGE: wsload <subcommand> [options]"

    /// The top-level help, pinned by a golden test.
    static var helpText: String {
        var text = """
            OVERVIEW: Load and correctness testing for WebSocket and HTTP-transfer servers.

            \(usageText)

            OPTIONS:
              --version               Show the version.
              -h, --help              Show help information.

            SUBCOMMANDS:

            """
        for command in commands {
            text += "  " + command.name.padding(toWidth: 24) + command.summary + "\n"
        }
        text += "\n  See 'wsload help <subcommand>' for detailed help.\n"
        return text
    }
}

/// A `wsload` subcommand: a name, a one-line summary for the overview, full help, and the work.
protocol Subcommand: Sendable {
    static var name: String { get }
    static var summary: String { get }
    static var helpText: String { get }
    static func run(arguments: [String], output: CommandOutput) async -> ExitCode
}

/// `wsload help [subcommand]`.
enum HelpCommand: Subcommand {
    static let name = "help"
    static let summary = "Show help for a subcommand."
    static let helpText = """
        OVERVIEW: Show help for a subcommand.

        USAGE: wsload help [<subcommand>]

        ARGUMENTS:
          <subcommand>            The subcommand to describe.

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        guard let name = arguments.first else {
            output.writeOutput(WSLoad.helpText)
            return .success
        }
        guard arguments.count == 1, let command = WSLoad.commands.first(where: { $0.name == name }) else {
            output.printError("Error: unknown subcommand '\(arguments.joined(separator: " "))'. See 'wsload --help'.")
            return .usage
        }
        output.writeOutput(command.helpText)
        return .success
    }
}

extension String {
    /// Pads with spaces to `width` columns; a longer string gets one space after it... as help layouts do.
    func padding(toWidth width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}

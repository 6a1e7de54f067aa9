import Runtime
import Testing
import WSLoadCLI

/// Captures what a command writes.
final class CapturedOutput: Sendable {
    private let state = Lock<(output: String, error: String)>(("", ""))
    var output: String { state.withLock { $0.output } }
    var error: String { state.withLock { $0.error } }

    var commandOutput: CommandOutput {
        CommandOutput(
            writeOutput: { text in self.state.withLock { $0.output += text } },
            writeError: { text in self.state.withLock { $0.error += text } })
    }
}

func runCLI(_ arguments: String...) async -> (code: ExitCode, output: String, error: String) {
    let captured = CapturedOutput()
    let code = await WSLoad.main(arguments: arguments, output: captured.commandOutput)
    return (code, captured.output, captured.error)
}

@Suite("Command line", .timeLimit(.minutes(2)))
struct CLITests {
    @Test("--help prints the overview, pinned")
    func help() async {
        let result = await runCLI("--help")
        #expect(result.code == .success)
        #expect(result.error.isEmpty)
        #expect(result.output == """
            OVERVIEW: Load and correctness testing for WebSocket and HTTP-transfer servers.

            USAGE: wsload <subcommand> [options]

            OPTIONS:
              --version               Show the version.
              -h, --help              Show help information.

            SUBCOMMANDS:
              run                     Run a load profile and write its report.
              validate                Check a profile and list every problem with its JSON path.
              compare                 Compare two reports (or two sets of repeated runs) with a CI gate.
              merge                   Merge reports of one profile (shards) into one, exactly.
              report                  Print a saved report's summary; export it as HTML or an HdrHistogram log.
              download                Download one URL (single stream or ranged), resumable, with a progress bar.
              serve                   Run the embedded WebSocket echo and HTTP file server (with chaos options).
              proxy                   Forward to a server, injecting delay, throttling and chaos (kill, reset, stall, restart).
              distribute              Write the files that run a profile's shards on Slurm or Kubernetes and merge them.
              autobahn                Run the Autobahn|Testsuite client cases against a fuzzing server.
              help                    Show help for a subcommand.

              See 'wsload help <subcommand>' for detailed help.

            """)
        #expect(await runCLI("-h").output == result.output)
        #expect(await runCLI("help").output == result.output)
    }

    @Test("help for a subcommand, and -h after it")
    func subcommandHelp() async {
        let result = await runCLI("help", "help")
        #expect(result.code == .success)
        #expect(result.output.hasPrefix("OVERVIEW: Show help for a subcommand.\n\nUSAGE: wsload help [<subcommand>]"))
        #expect(await runCLI("help", "--help").output == result.output)
    }

    @Test("--version prints the version")
    func version() async {
        let result = await runCLI("--version")
        #expect(result.code == .success)
        #expect(result.output == "wsload \(WSLoad.version)\n")
    }

    @Test("usage errors exit 64 and say what was wrong", arguments: [
        ([], "missing subcommand"),
        (["frobnicate"], "unknown subcommand 'frobnicate'"),
        (["--frobnicate"], "unknown option '--frobnicate'"),
        (["help", "frobnicate"], "unknown subcommand 'frobnicate'"),
    ])
    func usageErrors(arguments: [String], message: String) async {
        let captured = CapturedOutput()
        let code = await WSLoad.main(arguments: arguments, output: captured.commandOutput)
        #expect(code == .usage)
        #expect(code.rawValue == 64)
        #expect(captured.error.contains("Error: \(message)"))
        #expect(captured.output.isEmpty)
    }

    @Test("exit codes are the documented numbers")
    func exitCodes() {
        #expect([ExitCode.success, .failure, .thresholdsFailed, .invariantViolated, .regression, .usage, .invalidInput,
                 .noInput, .internalError, .ioError, .interrupted].map(\.rawValue) == [0, 1, 3, 4, 5, 64, 65, 66, 70, 74, 130])
    }
}

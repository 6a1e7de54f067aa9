import Foundation
import JSON
import Testing
import TestSupport

/// `wsload run`'s progress and colour (README: "a block redrawn in place on a terminal, plain lines every 5 s
/// otherwise, nothing with `--quiet`; no colour with `NO_COLOR`"), seen by a real terminal: the real executable
/// on a pseudo-terminal, and on plain pipes.
@Suite("wsload run on a terminal", .serialized, .timeLimit(.minutes(3)))
struct TerminalProgressTests {
    /// A passing threshold, so the summary has something to paint (a green ✓).
    private static let thresholds = #"["errors count < 1000000"]"#
    /// Cursor up over the three-line block, then each line cleared and redrawn.
    private static let redraw = "\u{1B}[3A\r\u{1B}[2K"

    /// Runs a minute-long profile until its progress has been redrawn in place at least once (or, without a
    /// terminal, until the first plain progress line), then stops it with Ctrl-C and returns what it printed.
    private func interruptedRun(terminal: Bool, environment: [String: String?]) async throws -> (output: String, errors: String) {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "60s", connections: 3, thresholds: Self.thresholds))
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("report.json")], environment: environment, terminal: terminal)
        if terminal {
            try await child.wait(for: "the progress block redrawn with every connection up") {
                child.output.contains(Self.redraw) && child.output.contains("connections 3 up / 3 target")
            }
        } else {
            try await child.wait(untilPrinted: "connections 3 up / 3 target", onStandardError: true)
        }
        child.signal(SIGINT)
        let status = try await child.waitForExit()
        #expect(status == 130, "\(child.output)\n\(child.errors)")
        #expect(try scratch.json("report.json")["run"]?["interrupted"] == .bool(true))
        return (child.output, child.errors)
    }

    /// SGR sequences (`ESC [ ... m`): colour and style.
    private func colourSequences(_ text: String) -> [String] {
        text.matches(of: /\x1B\[[0-9;]*m/).map { String($0.output) }
    }

    @Test("on a terminal: the progress block is redrawn in place, and the summary is coloured")
    func terminalWithColour() async throws {
        let (output, _) = try await interruptedRun(terminal: true, environment: ["NO_COLOR": nil])
        #expect(output.contains(Self.redraw))
        #expect(output.contains("elapsed, ") && output.contains(" left\r\n"), "the block's first line")
        #expect(output.contains("\u{1B}[32m✓\u{1B}[0m errors count < 1000000"), "a green ✓ for the passing threshold: \(output.debugDescription)")
        #expect(output.contains("interrupted by SIGINT"))
    }

    @Test("NO_COLOR=1 on a terminal: still redrawn in place, but no colour escape anywhere")
    func terminalNoColour() async throws {
        let (output, _) = try await interruptedRun(terminal: true, environment: ["NO_COLOR": "1"])
        #expect(output.contains(Self.redraw))
        #expect(colourSequences(output).isEmpty, "\(colourSequences(output))")
        #expect(output.contains("✓ errors count < 1000000"))
    }

    @Test("without a terminal: plain progress lines and a plain summary, no escape sequence at all")
    func pipes() async throws {
        let (output, errors) = try await interruptedRun(terminal: false, environment: ["NO_COLOR": nil])
        let progress = errors.split(separator: "\n").filter { $0.contains(" elapsed, ") }
        // The run was stopped once a line showed every connection up (an earlier one may show fewer).
        let line = try #require(progress.first { $0.contains("connections 3 up / 3 target") }, "no such progress line: \(errors)")
        #expect(line.contains(" left | connections 3 up / 3 target ") && line.contains(" | errors 0"), "\(line)")
        #expect(!errors.contains("\u{1B}") && !output.contains("\u{1B}"), "\(errors.debugDescription)\n\(output.debugDescription)")
        #expect(output.contains("✓ errors count < 1000000"))
    }

    @Test("--quiet on a terminal: nothing at all is printed")
    func quiet() async throws {
        let scratch = try RunScratch()
        // Long enough for several progress updates and a graceful stop with connections closing.
        let profile = try scratch.write("p.json", echoProfile(duration: "2500ms", connections: 3, thresholds: Self.thresholds))
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("report.json"), "--quiet"], environment: ["NO_COLOR": nil], terminal: true)
        let status = try await child.waitForExit()
        #expect(status == 0, "\(child.output)")
        #expect(child.output.isEmpty, "\(child.output.debugDescription)")
        // It did run: the report has what it measured, over at least two progress gathers.
        let report = try scratch.json("report.json")
        #expect(try #require(report["total"]?["metrics"]?["ws.messages_sent"]?["count"]?.integerValue) > 0)
        #expect(try #require(report["run"]?["elapsedSeconds"]?.numberValue) >= 2.5)
    }
}

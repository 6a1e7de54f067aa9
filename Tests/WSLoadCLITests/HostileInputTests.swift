import Foundation
import Testing
import TestSupport
import WSLoadCLI

private func runCLIArguments(_ arguments: [String]) async -> (code: ExitCode, output: String, error: String) {
    let captured = CapturedOutput()
    let code = await WSLoad.main(arguments: arguments, output: captured.commandOutput)
    return (code, captured.output, captured.error)
}

/// The hostile peer Tests/Peers/hostile_urls.py, for one test: every request line it received, as sent.
private final class HostileURLPeer: @unchecked Sendable {
    let process: BackgroundProcess
    let port: Int
    init() throws { (process, port) = try startPythonPeer("hostile_urls.py") }

    /// Closes its stdin (it exits) and returns the request lines it logged, byte-exact.
    func requestLines() -> [[UInt8]] {
        try? process.input.fileHandleForWriting.close()  // closing twice is harmless: the peer has already exited then
        let lines = process.readToEnd().split(separator: "\n").filter { $0.hasPrefix("request ") }
        process.stop()
        return lines.map { line in
            let hex = Array(line.dropFirst(8).utf8)
            return stride(from: 0, to: hex.count - 1, by: 2).compactMap { UInt8(String(decoding: hex[$0...($0 + 1)], as: UTF8.self), radix: 16) }
        }
    }
}

/// Hostile input to the command line: URLs and headers that would inject a header or break a request line are
/// refused with the documented exit code naming the option or JSON path; peer text with escape sequences reaches the
/// terminal escaped. Every case ends with wsload alive (in process) and a clear error.
@Suite("Hostile input: URLs, headers, terminal text", .serialized, .timeLimit(.minutes(3)))
struct HostileInputTests {
    @Test("the issue's profile target with CR LF X-Evil: validate exits 65 naming target, the CR LF shown escaped")
    func profileTargetInjection() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "evil", "target": "ws://127.0.0.1:18777/a\\r\\nX-Evil: 1", "duration": "1s",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 1}]}
            """)
        let result = await runCLI("validate", profile)
        #expect(result.code == .invalidInput, "\(result.error)")
        #expect(result.error.contains("  target: \"ws://127.0.0.1:18777/a\\r\\nX-Evil: 1\": control character \\r at offset 22"), "\(result.error)")
        #expect(!result.error.contains("\r"))
    }

    @Test("--target with CR LF, a space or a huge port: exit 64 naming --target, nothing run",
          arguments: ["ws://127.0.0.1:1/a\r\nX-Evil:1", "ws://127.0.0.1:1/a b", "ws://127.0.0.1:99999999999999999999/"])
    func targetOption(target: String) async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "p", "target": "embedded", "duration": "1s",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 1}]}
            """)
        for command in [["validate", profile, "--target", target], ["run", profile, "--target", target, "--quiet"]] {
            let result = await runCLIArguments(command)
            #expect(result.code == .usage, "\(command): \(result.error)")
            #expect(result.error.hasPrefix("Error: --target: \""), "\(command): \(result.error)")
            #expect(!result.error.contains("\r"))
        }
    }

    @Test("download: a URL with CR LF or an escape sequence, and --header values with CR LF or names with spaces, exit 64")
    func downloadArguments() async throws {
        let scratch = try DownloadScratch()
        for url in ["http://127.0.0.1:1/a\r\nX-Evil:1", "http://127.0.0.1:1/\u{1B}]0;pwned\u{7}", "http://u:secret@127.0.0.1:1/"] {
            let result = await runCLI("download", url, "-o", scratch.file("x"))
            #expect(result.code == .usage, "\(result.error)")
            #expect(!result.error.contains("\u{1B}") && !result.error.contains("\r") && !result.error.contains("secret"), "\(result.error)")
        }
        for header in ["X-A: b\r\nX-Evil: 1", "X-A: b\u{0}", "X A: b", "X-A\r\nX-Evil: b", "X-Api-Key secret"] {
            let result = await runCLI("download", "http://127.0.0.1:1/x", "-o", scratch.file("x"), "--header", header)
            #expect(result.code == .usage, "\(header): \(result.error)")
            #expect(result.error.hasPrefix("Error: --header: "), "\(result.error)")
            #expect(!result.error.contains("secret") && !result.error.contains("\r"), "\(result.error)")
        }
        #expect(scratch.contents.isEmpty)
    }

    @Test("autobahn --server with CR LF: exit 64 naming --server")
    func autobahnServer() async {
        let result = await runCLI("autobahn", "--server", "ws://127.0.0.1:1/a\r\nX-Evil:1")
        #expect(result.code == .usage, "\(result.error)")
        #expect(result.error.hasPrefix("Error: --server: ") && !result.error.contains("\r"), "\(result.error)")
    }

    @Test("wsload report of a crafted report: strings from the file (interruptedBy, invariant examples) reach the terminal escaped")
    func reportStringsEscaped() async throws {
        let baseline = SourceTree.root.appendingPathComponent("Reports/baseline/quickstart.json")
        guard var report = try JSONSerialization.jsonObject(with: Data(contentsOf: baseline)) as? [String: Any],
              var run = report["run"] as? [String: Any], var invariants = report["invariants"] as? [String: Any],
              var sequence = invariants["messages.in_sequence"] as? [String: Any]
        else { Issue.record("the baseline report changed shape"); return }
        run["interrupted"] = true
        run["interruptedBy"] = "SIG\u{1B}[2J\u{1B}]0;pwned\u{07}INT"
        sequence["violations"] = 1
        sequence["examples"] = [["actor": 7, "scenario": "s", "detail": "d\u{1B}[2Jx", "history": ["h\u{1B}[5m"]]]
        invariants["messages.in_sequence"] = sequence
        report["run"] = run
        report["invariants"] = invariants
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-evil-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json")
        try JSONSerialization.data(withJSONObject: report).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = await runCLIArguments(["report", file.path])
        #expect(result.code == .success, "\(result.error)")
        #expect(result.output.contains("interrupted by SIG\\u{1B}[2J\\u{1B}]0;pwned\\u{07}INT"), "\(result.output)")
        #expect(result.output.contains("d\\u{1B}[2Jx") && result.output.contains("h\\u{1B}[5m"), "\(result.output)")
        #expect(!result.output.contains("\u{1B}") && !result.output.contains("\u{07}"), "\(result.output)")
    }

    @Test("a status reason and an error page with escape sequences reach stderr escaped, not as escapes")
    func statusReasonEscaped() async throws {
        let peer = try HostileURLPeer()
        let scratch = try DownloadScratch()
        let result = await runCLI("download", "http://127.0.0.1:\(peer.port)/reason", "-o", scratch.file("x"), "--retries", "0", "--quiet")
        _ = peer.requestLines()
        #expect(result.code == .failure, "\(result.error)")
        #expect(result.error.contains("500 \\u{1B}[2J\\u{1B}]0;pwned\\u{07}Oops"), "\(result.error)")
        #expect(!result.error.contains("\u{1B}") && !result.error.contains("\u{7}"), "\(result.error)")
    }

    @Test("a redirect to a Location with a space or an escape, or to another scheme, fails; no such request line is sent",
          arguments: ["/redirect-space", "/redirect-ctl", "/redirect-scheme"])
    func badRedirect(path: String) async throws {
        let peer = try HostileURLPeer()
        let scratch = try DownloadScratch()
        let result = await runCLI("download", "http://127.0.0.1:\(peer.port)\(path)", "-o", scratch.file("x"), "--retries", "0", "--quiet")
        let lines = peer.requestLines()
        #expect(result.code == .failure, "\(result.error)")
        #expect(result.error.contains("redirect"), "\(result.error)")
        #expect(!result.error.contains("\u{1B}"), "\(result.error)")
        #expect(lines == [Array("GET \(path) HTTP/1.1".utf8)], "\(lines.map { String(decoding: $0, as: UTF8.self) })")
    }

    @Test("CommandOutput.print and printError show control characters escaped and keep line breaks; printError is bounded")
    func commandOutputSanitizes() {
        let captured = CapturedOutput()
        captured.commandOutput.printError("Error: \u{1B}[2J\u{9B}31m\u{202E}x\r\nsecond\tline")
        captured.commandOutput.print("a\u{1B}]0;t\u{7}b")
        #expect(captured.error == "Error: \\u{1B}[2J\\u{9B}31m\\u{202E}x\\r\nsecond\tline\n")
        #expect(captured.output == "a\\u{1B}]0;t\\u{07}b\n")
        let flood = CapturedOutput()
        flood.commandOutput.printError(String(repeating: "x", count: 1 << 20))
        #expect(flood.error.count < 70_000 && flood.error.hasSuffix("…\n"))
    }
}

import Foundation
import TestSupport
import Testing

/// The probe executable built beside this test bundle (`.build/<config>/wsload-runtime-probe`).
private let probeURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("wsload-runtime-probe")

/// A child process whose stdout is read line by line.
private final class Child: @unchecked Sendable {
    let process = SpawnedProcess()
    private let output = Pipe()
    private var buffered = Data()

    init(arguments: [String]) throws {
        process.executableURL = probeURL
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try TiedProcess.launch(process)  // one spawning thread for every child the tests start
    }

    /// Reads until a line equal to `expected` arrives or the stream ends; returns all lines read.
    func readLines(until expected: String) -> [String] {
        var lines: [String] = []
        while true {
            while let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                lines.append(line)
                if line.hasPrefix(expected) { return lines }
            }
            let chunk = output.fileHandleForReading.nextChunk()
            if chunk.isEmpty { return lines }
            buffered.append(chunk)
        }
    }

    func finish() -> (status: Int32, lines: [String]) {
        let rest = readLines(until: "\u{0}")
        process.waitUntilExit()
        return (process.terminationStatus, rest)
    }
}

@Suite("Shutdown signals in a child process", .timeLimit(.minutes(2)))
struct SignalTests {
    @Test("SIGINT stops the runtime through its graceful path: tasks end, no handle leaks, exit 130")
    func gracefulSIGINT() throws {
        let child = try Child(arguments: ["graceful"])
        #expect(child.readLines(until: "ready").last == "ready")
        kill(child.process.processIdentifier, SIGINT)
        let (status, lines) = child.finish()
        #expect(lines.contains("stopping after SIGINT"))
        #expect(lines.contains("waiting tasks 0, leaked handles 0"))
        #expect(status == 130)
    }

    @Test("SIGTERM is a graceful stop too (exit 143)")
    func gracefulSIGTERM() throws {
        let child = try Child(arguments: ["graceful"])
        #expect(child.readLines(until: "ready").last == "ready")
        kill(child.process.processIdentifier, SIGTERM)
        let (status, lines) = child.finish()
        #expect(lines.contains("stopping after SIGTERM"))
        #expect(lines.contains("waiting tasks 0, leaked handles 0"))
        #expect(status == 143)
    }

    @Test("a second SIGINT exits at once even if the graceful stop hangs")
    func secondSIGINT() throws {
        let child = try Child(arguments: ["stuck"])
        #expect(child.readLines(until: "ready").last == "ready")
        kill(child.process.processIdentifier, SIGINT)
        #expect(child.readLines(until: "stopping").last == "stopping after SIGINT")
        kill(child.process.processIdentifier, SIGINT)
        let (status, lines) = child.finish()
        #expect(!lines.contains { $0.hasPrefix("waiting tasks") })
        #expect(status == 130)
    }
}

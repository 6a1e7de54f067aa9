import Foundation
import Runtime
import Synchronization

/// The real `wsload` executable (built beside the test bundle, `.build/<config>/wsload`) running as a child
/// process, its stdout and stderr read as they come, so tests can wait for what it prints, signal it, and
/// check how it exits.
///
/// With `terminal: true` it runs on a pseudo-terminal (Tests/Peers/pty_run.py): stdout and stderr are then
/// the terminal, and everything written to it arrives, escape sequences included, as ``output``.
public final class WSLoadProcess: @unchecked Sendable {
    /// `.build/<config>/wsload`.
    public static let executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("wsload")
    static let peers = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Peers")

    private let process: SpawnedProcess
    private struct Captured {
        var output = Data()
        var errors = Data()
        var openStreams = 2
    }
    private final class Buffers: Sendable {
        let state = Lock(Captured())
        func withLock<T>(_ body: (inout Captured) -> T) -> T { state.withLock { body(&$0) } }
    }
    private let captured = Buffers()
    /// The `wsload` process itself (not the pseudo-terminal wrapper).
    public let pid: Int32

    /// Starts `wsload ARGUMENTS`. `environment` entries are added to (nil values removed from) this process's
    /// environment; `prefix` runs it under another command (e.g. `["prlimit", "--fsize=4096"]`).
    public init(_ arguments: [String], environment: [String: String?] = [:], terminal: Bool = false,
                prefix: [String] = []) throws {
        var command = prefix + [Self.executableURL.path] + arguments
        if terminal { command = ["python3", Self.peers.appendingPathComponent("pty_run.py").path] + command }
        process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        var merged = ProcessInfo.processInfo.environment
        for (name, value) in environment { merged[name] = value }
        process.environment = merged
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try TiedProcess.start(process)  // dies with the test process, even a killed one
        // Blocking reads on threads of their own, never on the cooperative pool the suites share.
        for (pipe, isOutput) in [(output, true), (errors, false)] {
            let captured = self.captured
            Thread {
                while true {
                    let chunk = pipe.fileHandleForReading.nextChunk()
                    if chunk.isEmpty { break }
                    captured.withLock { isOutput ? $0.output.append(chunk) : $0.errors.append(chunk) }
                }
                captured.withLock { $0.openStreams -= 1 }
            }.start()
        }
        guard terminal else {
            pid = process.processIdentifier
            return
        }
        // The wrapper names the child it started on its stderr first.
        let deadline = ContinuousClock.now + .seconds(30)
        let captured = self.captured
        var found: Int32?
        while found == nil && ContinuousClock.now < deadline && (process.isRunning || captured.withLock { $0.openStreams > 0 }) {
            let text = captured.withLock { String(decoding: $0.errors, as: UTF8.self) }
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("pid ") }), text.contains("\n") {
                found = Int32(line.dropFirst(4))
            } else {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        guard let found else {
            process.terminate()
            throw TestProcess.Failure(description: "pty_run.py did not start wsload: \(captured.withLock { String(decoding: $0.errors, as: UTF8.self) })")
        }
        pid = found
    }

    deinit {
        if process.isRunning { kill(pid, SIGKILL); kill(process.processIdentifier, SIGKILL) }
    }

    /// Everything written to stdout so far (to the terminal, with `terminal: true`).
    public var output: String { captured.withLock { String(decoding: $0.output, as: UTF8.self) } }
    /// Everything written to stderr so far (with `terminal: true`, only the wrapper's `pid` line).
    public var errors: String { captured.withLock { String(decoding: $0.errors, as: UTF8.self) } }
    public var isRunning: Bool { process.isRunning }

    /// Sends `signal` to wsload.
    public func signal(_ signal: Int32) { kill(pid, signal) }

    /// Polls `condition` until it holds or `deadline` passes; throws saying what it waited for.
    public func wait(for what: String, within deadline: Duration = .seconds(30), _ condition: () -> Bool) async throws {
        let end = ContinuousClock.now + deadline
        while !condition() {
            guard ContinuousClock.now < end else {
                throw TestProcess.Failure(description: "waited \(deadline) for \(what); stdout: \(output)\nstderr: \(errors)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits until stdout (or with `onStandardError`, stderr) contains `text`, failing early if wsload exits first.
    public func wait(untilPrinted text: String, onStandardError: Bool = false, within deadline: Duration = .seconds(30)) async throws {
        let end = ContinuousClock.now + deadline
        while !(onStandardError ? errors : output).contains(text) {
            guard process.isRunning else {
                throw TestProcess.Failure(description: "wsload exited (\(process.terminationStatus)) before printing \(text.debugDescription); stdout: \(output)\nstderr: \(errors)")
            }
            guard ContinuousClock.now < end else {
                throw TestProcess.Failure(description: "waited \(deadline) for \(text.debugDescription); stdout: \(output)\nstderr: \(errors)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits for the exit (and for both streams to end) and returns the exit status; 128 + N for signal N.
    /// Throws (after killing it) when it has not exited within `deadline`.
    @discardableResult
    public func waitForExit(within deadline: Duration = .seconds(60)) async throws -> Int32 {
        let end = ContinuousClock.now + deadline
        while process.isRunning || captured.withLock({ $0.openStreams > 0 }) {
            guard ContinuousClock.now < end else {
                kill(pid, SIGKILL)
                kill(process.processIdentifier, SIGKILL)
                throw TestProcess.Failure(description: "wsload did not exit within \(deadline); stdout: \(output)\nstderr: \(errors)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }
}

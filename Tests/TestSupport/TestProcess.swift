import Foundation
import Runtime
import Synchronization

/// Runs helper programs for tests (openssl, ip) and fails with their stderr when they fail.
public enum TestProcess {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// Runs `arguments` (looked up on PATH) to completion; returns stdout.
    @discardableResult
    public static func run(_ arguments: [String], in directory: URL? = nil) throws -> String {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try TiedProcess.launch(process)
        let stdout = output.fileHandleForReading.readToEndRetryingInterrupts()
        let stderr = errors.fileHandleForReading.readToEndRetryingInterrupts()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "\(arguments.joined(separator: " ")) failed: \(String(decoding: stderr, as: UTF8.self))")
        }
        return String(decoding: stdout, as: UTF8.self)
    }
}

extension TestProcess {
    /// Runs `arguments` to completion; returns stdout and stderr (a non-zero exit throws with stderr).
    public static func runCapturingErrors(_ arguments: [String]) throws -> (output: String, errors: String) {
        let result = try runWithStatus(arguments)
        guard result.status == 0 else {
            throw Failure(description: "\(arguments.joined(separator: " ")) failed: \(result.errors)")
        }
        return (result.output, result.errors)
    }

    /// Runs `arguments` to completion; returns the exit status, stdout and stderr.
    public static func runWithStatus(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try TiedProcess.start(process)  // a browser run (timeout 330 s) must not outlive a killed test process
        // Read stderr concurrently: a chatty child blocks on a full pipe otherwise.
        let errorData = Lock(Data())
        let done = DispatchSemaphore(value: 0)
        Thread {
            errorData.withLock { $0 = errors.fileHandleForReading.readToEndRetryingInterrupts() }
            done.signal()
        }.start()
        let stdout = output.fileHandleForReading.readToEndRetryingInterrupts()
        process.waitUntilExit()
        done.wait()
        let stderr = String(decoding: errorData.withLock { $0 }, as: UTF8.self)
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), stderr)
    }

    /// ``runWithStatus(_:)`` on a thread of its own (see ``runOffPool(_:)``).
    public static func runWithStatusOffPool(_ arguments: [String]) async throws -> (status: Int32, output: String, errors: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try runWithStatus(arguments) }) }.start()
        }
    }
}

extension TestProcess {
    /// ``runCapturingErrors(_:)`` on a thread of its own: async tests must not block the cooperative pool
    /// (two threads here) while a child runs, or every other suite's tasks stall behind it.
    public static func runOffPool(_ arguments: [String]) async throws -> (output: String, errors: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try runCapturingErrors(arguments) }) }.start()
        }
    }
}

/// A long-running helper whose stdout is read line by line and whose stdin we may write.
public final class BackgroundProcess: @unchecked Sendable {
    public let process = SpawnedProcess()
    public let input = Pipe()
    private let output = Pipe()
    private var buffered = Data()

    public init(_ arguments: [String], mergeStandardError: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = mergeStandardError ? output : FileHandle.nullDevice
        try TiedProcess.start(process)  // dies with the test process, even a killed one
    }

    /// Reads lines until one contains `text` (returned) or the output ends (nil). A child that says nothing for
    /// `timeout` is terminated (its output then ends), so a hung peer fails the test instead of hanging it.
    public func waitForLine(containing text: String, timeout: Duration = .seconds(60)) -> String? {
        let found = Atomic(false)
        let process = process
        Thread {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline, !found.load(ordering: .relaxed), process.isRunning {
                Thread.sleep(forTimeInterval: 0.05)
            }
            if !found.load(ordering: .relaxed), process.isRunning { process.terminate() }
        }.start()
        defer { found.store(true, ordering: .relaxed) }
        while true {
            while let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                if line.contains(text) { return line }
            }
            let chunk = output.fileHandleForReading.nextChunk()
            if chunk.isEmpty { return nil }
            buffered.append(chunk)
        }
    }

    /// Reads everything until the process closes its output.
    public func readToEnd() -> String {
        let rest = output.fileHandleForReading.readToEndRetryingInterrupts()
        return String(decoding: buffered + rest, as: UTF8.self)
    }

    /// Kills the helper. SIGKILL, because children spawned from libdispatch threads inherit a signal
    /// mask that blocks SIGTERM.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// Starts the Python peer `Tests/Peers/<script>` and waits for its `listening PORT` line; returns it and the port.
public func startPythonPeer(_ script: String, arguments: [String] = []) throws -> (process: BackgroundProcess, port: Int) {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Peers/\(script)").path
    let process = try BackgroundProcess(["python3", path] + arguments)
    guard let line = process.waitForLine(containing: "listening"), let port = Int(line.split(separator: " ").last ?? "") else {
        process.stop()
        throw TestProcess.Failure(description: "\(script) did not start (is the websockets package installed?)")
    }
    return (process, port)
}

/// Tests/Peers/websockets_server.py (Python `websockets`: a third-party peer), started for one test.
public struct PythonWebSocketServer: Sendable {
    public let process: BackgroundProcess
    public let port: Int

    public init(arguments: [String] = []) throws {
        (process, port) = try startPythonPeer("websockets_server.py", arguments: arguments)
    }
}

import Clients
import Crypto
import EmbeddedServer
import Foundation
import Runtime
import TestSupport
import Testing

/// The `wsload` executable built beside the test bundle (`.build/<config>/wsload`).
let wsloadExecutable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("wsload").path

/// A fresh directory under the system temp directory, removed when the value is released.
final class DownloadScratch: @unchecked Sendable {
    let path = NSTemporaryDirectory() + "wsload-dl-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
    var contents: [String] { (try? FileManager.default.contentsOfDirectory(atPath: path).sorted()) ?? [] }

    /// The resume data `wsload download` kept beside `name` (throws when there is none or it does not parse).
    func resumeData(of name: String) throws -> ResumeData { try Self.resumeData(at: file(name)) }

    /// The resume data `wsload download` kept beside `destination`.
    static func resumeData(at destination: String) throws -> ResumeData {
        let text = try String(contentsOfFile: destination + ".wsload-resume", encoding: .utf8)
        return try ResumeData(serialized: Array(text.utf8))
    }
}

/// Runs an embedded server on its own loops for the duration of `body`.
func withDownloadServer<T: Sendable>(
    _ configuration: ServerConfiguration = ServerConfiguration(), _ body: @Sendable (EmbeddedServer, EventLoopGroup) async throws -> T
) async throws -> T {
    try await withLoopGroup { group in
        let server = try await EmbeddedServer.bind(configuration, on: group)
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask(executorPreference: server.taskExecutor) {
                await server.run()
                return nil
            }
            let result = try await body(server, group)
            tasks.cancelAll()
            while try await tasks.next() != nil {}
            return result
        }
    }
}

/// A child process (the real `wsload`, or a helper such as `setpriv`) whose stdout and stderr are
/// collected by threads of their own, so a chatty child never blocks and the cooperative pool never waits on a pipe.
final class ChildProcess: @unchecked Sendable {
    let process = SpawnedProcess()
    private let collected = Lock<(output: Data, errors: Data)>((Data(), Data()))
    private let readers = DispatchGroup()

    /// Held open for peers that stop at the end of their input (Tests/Peers/websockets_server.py).
    private let input = Pipe()

    /// Starts `executable` (a path) with `arguments`; with `holdsInput`, its stdin stays open until it ends.
    init(_ executable: String, _ arguments: [String], holdsInput: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = holdsInput ? input : FileHandle.nullDevice
        try TiedProcess.start(process)  // dies with the test process, even a killed one
        for (pipe, isOutput) in [(output, true), (errors, false)] {
            readers.enter()
            Thread { [self] in
                while true {
                    let chunk = pipe.fileHandleForReading.nextChunk()
                    if chunk.isEmpty { break }
                    collected.withLock { isOutput ? $0.output.append(chunk) : $0.errors.append(chunk) }
                }
                readers.leave()
            }.start()
        }
    }

    /// Starts the real `wsload` with `arguments`.
    static func wsload(_ arguments: [String]) throws -> ChildProcess { try ChildProcess(wsloadExecutable, arguments) }

    var output: String { String(decoding: collected.withLock { $0.output }, as: UTF8.self) }
    var errors: String { String(decoding: collected.withLock { $0.errors }, as: UTF8.self) }

    /// Waits up to `limit` for the child to exit and its output to end; returns its exit status, or nil
    /// (after killing it) when it did not exit in time.
    func exitStatus(within limit: Duration = .seconds(30)) async throws -> Int32? {
        let deadline = ContinuousClock.now + limit
        while process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        guard !process.isRunning else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        process.waitUntilExit()
        while readers.wait(timeout: .now()) == .timedOut && ContinuousClock.now < deadline + .seconds(5) {
            try await Task.sleep(for: .milliseconds(10))
        }
        return process.terminationStatus
    }

    /// Runs `command` (an executable's path, then its arguments) to completion, at most `limit`; fails the
    /// test when it does not exit in time.
    static func run(_ command: [String], within limit: Duration = .seconds(60)) async throws -> (status: Int32, output: String, errors: String) {
        let child = try ChildProcess(command[0], Array(command.dropFirst()))
        let status = try #require(try await child.exitStatus(within: limit), "\(command) did not exit within \(limit)")
        return (status, child.output, child.errors)
    }

    /// Kills the child if it still runs (cleanup on a failed test).
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// Polls `condition` from a thread of its own every 5 ms until it holds, `process` exits or `limit` passes,
/// then sends `signal` to `process` if the condition held. A dedicated thread, because the cooperative pool
/// may be busy with other suites and a late look would find the child already finished.
/// - Returns: whether the condition held (and the signal was sent).
func sendSignal(
    _ signal: Int32, to process: SpawnedProcess, when condition: @escaping @Sendable () -> Bool, limit: Duration = .seconds(20)
) async -> Bool {
    await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        Thread {
            let deadline = ContinuousClock.now + limit
            while !condition() && process.isRunning && ContinuousClock.now < deadline { usleep(5_000) }
            let held = condition() && process.isRunning
            if held { kill(process.processIdentifier, signal) }
            continuation.resume(returning: held)
        }.start()
    }
}

/// The SHA-256 of a file's contents, in hex.
func sha256Hex(ofFile path: String) throws -> String {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return Crypto.hex(Crypto.sha256(Array(data)))
}

/// The real `wsload serve` in a child process, on a free port (`--port 0`: it prints the address it got).
final class ServeChild: Sendable {
    let child: ChildProcess
    /// `ws://HOST:PORT/` (or wss) and `http://HOST:PORT` (or https), as the server printed them.
    let url: String
    let httpURL: String

    init(_ options: [String]) async throws {
        child = try ChildProcess.wsload(["serve", "--port", "0", "--loops", "1", "--duration", "90s"] + options)
        // Generous: on one busy CPU a debug wsload has taken over 20 s to print its address.
        let deadline = ContinuousClock.now + .seconds(60)
        var printed: (String, String)?
        while printed == nil && child.process.isRunning && ContinuousClock.now < deadline {
            printed = child.output.firstMatch(of: /listening on (wss?:\/\/\S+\/) and (https?:\/\/\S+?)\/ \(/)
                .map { (String($0.output.1), String($0.output.2)) }
            if printed == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        guard let printed else {
            child.stop()
            throw TestProcess.Failure(description: "wsload serve printed no address within 60 s: \(child.output) \(child.errors)")
        }
        (url, httpURL) = printed
    }

    /// Stops it as Ctrl-C does and returns what it printed; it must exit 0 after saying why it stopped.
    @discardableResult
    func stop() async throws -> String {
        kill(child.process.processIdentifier, SIGINT)
        let status = try #require(try await child.exitStatus(within: .seconds(20)), "wsload serve did not stop within 20 s of SIGINT")
        #expect(status == 0, "\(child.errors)")
        #expect(child.output.contains("stopped after SIGINT"), "\(child.output)")
        return child.output
    }
}

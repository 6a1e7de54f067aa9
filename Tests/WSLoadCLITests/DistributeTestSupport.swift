import Foundation
import Runtime
import TestSupport
@testable import WSLoadCLI

/// A path no shell may split or expand: quotes, `$(…)`, backquotes, a backslash, `%` (a Slurm pattern symbol), a
/// glob, spaces and a newline. A script that mis-quotes any of it either fails or creates `…/pwned`.
let hostileName = "we'ird \"dir\" $(touch pwned) `touch pwned` \\ %x %% * ; &\nline"

/// ``hostileName`` without the backslash, which `wsload distribute slurm` refuses in DIR (Slurm's log patterns).
let slurmHostileName = hostileName.replacingOccurrences(of: "\\ ", with: "")

/// A scratch directory whose own name is hostile, removed with the value.
final class DistributeScratch: @unchecked Sendable {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-dist-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    let path: String
    init(hostile: Bool = true, name: String = hostileName) throws {
        path = root + "/" + (hostile ? name : "plain")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: root) }

    func file(_ name: String) -> String { path + "/" + name }

    @discardableResult
    func write(_ name: String, _ text: String, executable: Bool = false) throws -> String {
        let file = file(name)
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        if executable { chmod(file, 0o755) }
        return file
    }

    func read(_ name: String) throws -> String { try String(contentsOfFile: file(name), encoding: .utf8) }

    /// Whether a mis-quoted script ran `touch pwned` anywhere under the scratch root (or in the current directory).
    var wasInjected: Bool {
        let found = FileManager.default.enumerator(atPath: root)?.contains { ($0 as? String)?.hasSuffix("pwned") == true } ?? false
        return found || FileManager.default.fileExists(atPath: "pwned")
    }

    /// Writes `bin/<name>`: a stand-in that records its arguments (NUL-separated), working directory and soft
    /// open-file limit as `record/<key>-<n>.*` (`key` defaults to the name), prints `output` followed by n, and exits
    /// with `$FAKE_STATUS` (or 0); with `failOnCall`, its n-th run fails instead.
    @discardableResult
    func recorder(_ name: String, key: String? = nil, output: String = "", failOnCall: Int? = nil) throws -> String {
        let key = key ?? name
        let failure = failOnCall.map { "[ \"$n\" = \($0) ] && { echo \"\(key): refused\" >&2; exit 1; }" } ?? ""
        return try write("bin/" + name, """
            #!/bin/sh
            dir=\(DistributeText.shellWord(path + "/record"))
            mkdir -p "$dir"
            n=$(ls "$dir" | grep -c '^\(key)-[0-9]*\\.args$' || true)
            n=$((n + 1))
            printf '%s\\0' "$@" >"$dir/\(key)-$n.args"
            pwd >"$dir/\(key)-$n.pwd"
            ulimit -S -n >"$dir/\(key)-$n.nofile"
            \(failure)
            \(output.isEmpty ? "" : "echo \(DistributeText.shellWord(output))$n")
            exit "${FAKE_STATUS:-0}"

            """, executable: true)
    }

    /// The arguments of the `call`-th run of the recorder `name`.
    func recorded(_ name: String, call: Int = 1) throws -> [String] {
        let text = try read("record/\(name)-\(call).args")
        return text.split(separator: "\0", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    func recordedText(_ name: String, _ kind: String, call: Int = 1) throws -> String {
        try read("record/\(name)-\(call).\(kind)").trimmingCharacters(in: .newlines)
    }

    /// How many times the recorder `name` ran.
    func calls(_ name: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: path + "/record")) ?? []).filter {
            $0.hasPrefix(name + "-") && $0.hasSuffix(".args")
        }.count
    }
}

/// The outcome of a script or program run to completion.
struct ScriptRun: Sendable {
    var status: Int32
    var output: String
    var errors: String
}

/// Runs `arguments` with `environment` added (PATH first gets `path` when given), on a thread of its own so the
/// cooperative pool never waits on it; killed after `deadline`.
func runScript(_ arguments: [String], environment: [String: String] = [:], prependingPath path: String? = nil,
               in directory: String? = nil, deadline: Duration = .seconds(60)) async throws -> ScriptRun {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(with: Result {
                let process = SpawnedProcess()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = arguments
                var merged = ProcessInfo.processInfo.environment
                for (name, value) in environment { merged[name] = value }
                if let path { merged["PATH"] = path + ":" + (merged["PATH"] ?? "/usr/bin:/bin") }
                process.environment = merged
                if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
                let output = Pipe()
                let errors = Pipe()
                process.standardOutput = output
                process.standardError = errors
                process.standardInput = FileHandle.nullDevice
                try TiedProcess.launch(process)
                let collected = Lock((Data(), Data()))
                let group = DispatchGroup()
                for (pipe, isOutput) in [(output, true), (errors, false)] {
                    group.enter()
                    Thread {
                        let data = pipe.fileHandleForReading.readToEndRetryingInterrupts()
                        collected.withLock { if isOutput { $0.0 = data } else { $0.1 = data } }
                        group.leave()
                    }.start()
                }
                let end = ContinuousClock.now + deadline
                let seconds = Double(deadline.components.seconds)
                if group.wait(timeout: .now() + seconds) == .timedOut {
                    process.terminate()
                    throw TestProcess.Failure(description: "\(arguments.joined(separator: " ")) did not finish within \(deadline)")
                }
                // Polled with a deadline rather than waitUntilExit: a script that starts daemons (slurm-cluster.sh up)
                // must still be bounded.
                while process.isRunning {
                    guard ContinuousClock.now < end else {
                        kill(process.processIdentifier, SIGKILL)
                        throw TestProcess.Failure(description: "\(arguments.joined(separator: " ")) did not exit within \(deadline)")
                    }
                    Thread.sleep(forTimeInterval: 0.02)
                }
                let exitStatus = process.terminationReason == .uncaughtSignal
                    ? 128 + process.terminationStatus : process.terminationStatus
                let (out, err) = collected.withLock { $0 }
                return ScriptRun(status: exitStatus, output: String(decoding: out, as: UTF8.self),
                                 errors: String(decoding: err, as: UTF8.self))
            })
        }.start()
    }
}

/// `wsload ARGUMENTS` in-process.
func runDistribute(_ arguments: [String]) async -> (code: ExitCode, output: String, error: String) {
    let captured = CapturedOutput()
    let code = await WSLoad.main(arguments: arguments, output: captured.commandOutput)
    return (code, captured.output, captured.error)
}

/// A plan with every path under `directory` and hostile names everywhere a path goes.
func hostilePlan(in scratch: DistributeScratch, shards: Int = 4, target: String? = "ws://127.0.0.1:9/echo?a='b'&c=$(x)")
    -> DistributionPlan
{
    DistributionPlan(
        profileName: "echo-run_1.v2", profilePath: scratch.file("profiles/" + hostileName + ".json"),
        profileText: "{\"name\": \"echo-run_1.v2\"}\n", shards: shards, lead: .seconds(30), timeLimit: .seconds(345),
        target: target, directory: scratch.file("out"), workingDirectory: scratch.file("cwd"), tokenEnvironment: nil)
}

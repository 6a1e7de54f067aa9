import Foundation
import Runtime

/// What the tests start children with instead of Foundation's `Process`, with the part of its interface they use.
///
/// Foundation's `Process.run()` on Linux scans `/proc/self/fd` and copies a fixed 256 bytes of each entry's name, past
/// the end of short records (swift-corelibs-foundation #5472); when the last record lands at the end of a heap mapping
/// the test process dies in that memcpy (CI: SIGSEGV in `__memcpy_avx512_unaligned_erms` under `Process.run`, then
/// Foundation's own fatal error on a pipe read the crash report interrupted). Serializing the spawns did not help: the
/// over-read needs only the descriptor table's shape. This starts children with `posix_spawn` (``ProcessSpawn``), as
/// wsload itself does: no directory scan.
///
/// Standard streams: a `Pipe` (the child gets its end; this process closes that end once the child has it), a
/// `FileHandle` (`FileHandle.nullDevice`: `/dev/null`), or nil for this process's own. An environment or a working directory goes through `/usr/bin/env`,
/// which execs the executable (``processIdentifier`` is then the executable's).
public final class SpawnedProcess: @unchecked Sendable {
    public var executableURL: URL?
    public var arguments: [String]?
    /// The whole environment (nil: this process's).
    public var environment: [String: String]?
    public var currentDirectoryURL: URL?
    public var standardInput: Any?
    public var standardOutput: Any?
    public var standardError: Any?

    private let state = Lock(State())

    private struct State {
        var pid: Int32 = 0
        var termination: ProcessSpawn.Termination?
    }

    public init() {}

    public var processIdentifier: Int32 { state.withLock { $0.pid } }

    /// Starts the child. - Throws: when it cannot be started (no executable, `posix_spawn` failed).
    public func run() throws {
        guard let executable = executableURL?.path else {
            throw TestProcess.Failure(description: "SpawnedProcess.run: no executable")
        }
        var command = [executable] + (arguments ?? [])
        if environment != nil || currentDirectoryURL != nil {
            // env's options, then `--`, then the assignments (an operand with `=`), then the command.
            var prefix = ["/usr/bin/env"]
            if let directory = currentDirectoryURL?.path { prefix += ["-C", directory] }
            if environment != nil { prefix.append("-i") }
            prefix.append("--")
            prefix += (environment ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            command = prefix + command
        }
        var descriptors: [Int32: ProcessSpawn.Descriptor] = [:]
        var handedOver: [FileHandle] = []
        for (number, stream) in [(Int32(0), standardInput), (1, standardOutput), (2, standardError)] {
            switch stream {
            case let pipe as Pipe:
                let end = number == 0 ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                descriptors[number] = .duplicate(end.fileDescriptor)
                handedOver.append(end)
            case let handle as FileHandle where handle.fileDescriptor >= 0:
                descriptors[number] = .duplicate(handle.fileDescriptor)
            case is FileHandle:
                descriptors[number] = .null(isWritable: number != 0)  // FileHandle.nullDevice has no descriptor (-1)
            default:
                // This process's own, when it has one open.
                descriptors[number] = fcntl(number, F_GETFD) >= 0 ? .duplicate(number) : .null(isWritable: number != 0)
            }
        }
        // Each child leads a process group of its own, as Foundation's do (what the tests' helpers were written for).
        let pid = try ProcessSpawn.spawn(command[0], arguments: command, descriptors: descriptors, isGroupLeader: true)
        state.withLock { $0.pid = pid }
        // The child has its copies: this process's ends would keep a reader from ever seeing EOF.
        for end in handedOver { try? end.close() }
    }

    /// Whether the child still runs (reaping it once it ended).
    public var isRunning: Bool { processIdentifier > 0 && termination == nil }

    /// Blocks until the child ends.
    public func waitUntilExit() {
        while isRunning { usleep(5_000) }
    }

    /// The exit status, or the signal's number for a child a signal ended (as Foundation's); 0 while it runs.
    public var terminationStatus: Int32 {
        switch termination {
        case .exited(let code): code
        case .signalled(let signal): signal
        case nil: 0
        }
    }

    public var terminationReason: Process.TerminationReason {
        if case .signalled = termination { return .uncaughtSignal }
        return .exit
    }

    /// SIGTERM.
    public func terminate() { signal(SIGTERM) }
    /// SIGINT.
    public func interrupt() { signal(SIGINT) }

    private func signal(_ number: Int32) {
        let pid = processIdentifier
        if pid > 0 && isRunning { ProcessSpawn.send(number, to: pid) }
    }

    /// How the child ended, reaped at most once (under the lock: a second `waitpid` would find no child).
    private var termination: ProcessSpawn.Termination? {
        state.withLock { state in
            guard state.pid > 0 else { return nil }
            if state.termination == nil { state.termination = ProcessSpawn.reap(state.pid) }
            return state.termination
        }
    }
}

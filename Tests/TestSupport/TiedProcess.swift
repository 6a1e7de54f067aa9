import Foundation
import Runtime

/// Starts the long-lived helpers tests run (Prometheus, nginx, Python peers, a `wsload` child) so that they die with
/// the test process even when it is killed (SIGKILL by a CI timeout or a person): each is started through
/// util-linux `setpriv --pdeathsig KILL`, which asks the kernel for SIGKILL when its parent goes, then execs it.
///
/// The kernel's "parent" is the *thread* that spawned the child, not the process: a child started from a
/// cooperative-pool or libdispatch worker would be killed when that idle thread retires, mid-test. So every start
/// happens on one spawner thread that lives as long as the test process.
public enum TiedProcess {
    /// The command line that runs `executable` with `arguments` under the parent-death signal.
    public static func command(_ executable: String, _ arguments: [String]) -> (executable: String, arguments: [String]) {
        ("/usr/bin/setpriv", ["--pdeathsig", "KILL", "--", executable] + arguments)
    }

    /// Runs `process` (configured, not started) under the parent-death signal, from the spawner thread.
    /// `process.processIdentifier` is then the helper's own (setpriv execs it).
    public static func start(_ process: SpawnedProcess) throws {
        guard let executable = process.executableURL?.path else {
            throw TestProcess.Failure(description: "TiedProcess.start: the process has no executable")
        }
        let tied = command(executable, process.arguments ?? [])
        process.executableURL = URL(fileURLWithPath: tied.executable)
        process.arguments = tied.arguments
        try spawner.perform { try process.run() }
    }

    /// Runs `process` as configured (no parent-death signal), from the same spawner thread: every child the tests start
    /// goes through one thread, one at a time. (The crash once blamed on concurrent spawns was Foundation's
    /// `Process.run()` over-reading `/proc/self/fd`, which serializing does not prevent: see ``SpawnedProcess``.)
    public static func launch(_ process: SpawnedProcess) throws {
        try spawner.perform { try process.run() }
    }

    private static let spawner = SpawnerThread()
}

/// One thread, started once and never ended, that runs the closures given to it in order.
private final class SpawnerThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []

    init() {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }
        }
        thread.name = "TiedProcess spawner"
        thread.start()
    }

    func perform(_ body: @escaping () throws -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        let outcome = Lock<Result<Void, any Error>>(.success(()))
        condition.lock()
        jobs.append {
            outcome.withLock { $0 = Result { try body() } }
            done.signal()
        }
        condition.signal()
        condition.unlock()
        done.wait()
        try outcome.withLock { $0 }.get()
    }
}

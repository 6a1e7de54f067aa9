import Foundation
import Glibc
import Testing
import TestSupport

/// The helpers tests start die with their parent: a test-like parent (Python, spawning from a thread that lives on,
/// as TiedProcess's spawner does) starts `sleep` through ``TiedProcess/command(_:_:)`` and is killed with SIGKILL.
@Suite(.timeLimit(.minutes(2))) struct TiedProcessTests {
    /// Whether `pid` is gone: no such process, or a zombie nobody reaps yet (a container's init may not).
    private func isGone(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 else { return errno == ESRCH }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    @Test("kill -9 of the parent kills a child started through TiedProcess's command line")
    func childDiesWithParent() async throws {
        let tied = TiedProcess.command("/bin/sleep", ["300"])
        let argv = ([tied.executable] + tied.arguments).map { "'\($0)'" }.joined(separator: ", ")
        let parent = try BackgroundProcess(["python3", "-c", """
            import subprocess, threading, time
            def spawn():
                child = subprocess.Popen([\(argv)])
                print(f"child {child.pid}", flush=True)
                time.sleep(300)
            threading.Thread(target=spawn).start()
            """])
        defer { parent.stop() }
        let line = try #require(parent.waitForLine(containing: "child"), "the parent script printed its child's pid")
        let child = try #require(Int32(line.split(separator: " ").last ?? ""))
        defer { if !isGone(child) { kill(child, SIGKILL) } }
        #expect(!isGone(child), "the child runs while its parent does")
        // setpriv asks for the signal, then execs sleep: kill the parent only once the child is sleep (before, on a
        // busy CPU, the parent could die while setpriv had not asked yet, and nothing would tie the child).
        try await Deadline.waitUntil("pid \(child) to exec sleep through setpriv", timeout: .seconds(30),
                                     interval: .milliseconds(20)) {
            (try? String(contentsOfFile: "/proc/\(child)/comm", encoding: .utf8))?.hasPrefix("sleep") ?? false
        }
        kill(parent.process.processIdentifier, SIGKILL)
        try await Deadline.waitUntil("sleep (pid \(child)) to die with its killed parent", timeout: .seconds(30),
                                     interval: .milliseconds(50)) { isGone(child) }
    }

    @Test("a child TiedProcess starts from a pool thread keeps running after the call (its parent is the spawner thread)")
    func childOutlivesCallingThread() async throws {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["300"]
        try TiedProcess.start(process)
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        #expect(process.arguments == ["--pdeathsig", "KILL", "--", "/bin/sleep", "300"])
        // Hop across pool threads for a while: none of them is the child's parent.
        for _ in 0..<20 { try await Task.sleep(for: .milliseconds(50)) }
        #expect(process.isRunning)
    }
}

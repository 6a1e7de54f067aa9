// A child process for the signal tests: it runs the runtime with real handles, waits for SIGINT or
// SIGTERM through `withShutdownSignals`, and then shuts down in order (tasks, then handles, then loops).
//
//   wsload-runtime-probe graceful   stop on the first signal, report leaks, exit 130
//   wsload-runtime-probe stuck      ignore the first signal's request, so only a second one ends it
//   wsload-runtime-probe CHECK ...  one input check of InputChecks.swift (huge-timer, file-time PATH, ...)
import Glibc
import Runtime

/// Writes a line to stdout unbuffered, so the parent sees it at once through a pipe.
func say(_ line: String) {
    _ = (line + "\n").withCString { write(STDOUT_FILENO, $0, strlen($0)) }
}

let mode = CommandLine.arguments.dropFirst().first ?? "graceful"
if try await runInputCheck(mode, Array(CommandLine.arguments.dropFirst(2))) { exit(0) }
let group = try EventLoopGroup(loopCount: 2)
let loop = group.loops[0]

let signal = try await withShutdownSignals(on: loop) { shutdown in
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        // Real work in flight: a listener, a connection blocked on read, and a long timer.
        let listener = try await loop.submit { try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop) }
        tasks.addTask(executorPreference: loop.taskExecutor) {
            let server = try await listener.accept()
            var buffer: [UInt8] = []
            _ = try await server.read(into: &buffer)
        }
        tasks.addTask(executorPreference: group.loops[1].taskExecutor) {
            let client = try await TCPConnection.connect(to: listener.localAddress, on: group.loops[1])
            say("ready")
            var buffer: [UInt8] = []
            _ = try await client.read(into: &buffer)
        }
        tasks.addTask(executorPreference: loop.taskExecutor) { try await loop.sleep(for: .seconds(3600)) }
        let signal = await shutdown.wait() ?? 0
        say("stopping after \(signalName(signal))")
        if mode == "stuck" {
            while true { try? await Task.sleep(for: .seconds(1)) }
        }
        tasks.cancelAll()
        while (try? await tasks.next()) != nil {}
        listener.close()
        return signal
    }
}
// Handles close asynchronously; give libuv a few iterations.
for _ in 0..<100 where group.liveHandleCount > 0 { usleep(1000) }
let leaked = group.shutdown()
say("waiting tasks \(group.waitingTaskCount), leaked handles \(leaked)")
exit(128 + signal)

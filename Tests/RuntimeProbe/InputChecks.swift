// Input-derived values that once trapped inside the runtime, each run alone in this child process so a
// trap fails one test (the parent sees the signal) instead of killing the suite. Each check prints one
// line saying what the runtime did with the value.
import Glibc
import Runtime

/// Runs the input check named `mode` and returns true, or returns false when `mode` names none.
func runInputCheck(_ mode: String, _ arguments: [String]) async throws -> Bool {
    switch mode {
    case "huge-timer":
        // A timeout or sleep of 2^63 s (a profile's huge number): a timer that never fires, not a trap.
        let group = try EventLoopGroup(loopCount: 1)
        let loop = group.loops[0]
        let sleeper = Task(executorPreference: loop.taskExecutor) {
            try await loop.sleep(for: .seconds(Int64.max))
        }
        try await loop.submit {
            ScheduledTimer(on: loop, after: .seconds(Int64.max)) { say("fired") }.cancel()
        }
        try await Task.sleep(for: .milliseconds(50))
        sleeper.cancel()
        let result = await sleeper.result
        for _ in 0..<100 where group.liveHandleCount > 0 { usleep(1000) }
        if case .failure(let error) = result, error is CancellationError {
            say("sleep cancelled")
        } else {
            say("sleep ended: \(result)")
        }
        group.shutdown()
    case "file-time":
        let status = FileSystem.status(of: arguments[0])
        say("modified \(status.map { String($0.modifiedNanoseconds) } ?? "none")")
    case "negative-read":
        let file = try DataFile.open(arguments[0], mode: .read)
        var buffer: [UInt8] = []
        do {
            try file.read(into: &buffer, count: -1, at: 0)
            say("read \(buffer.count)")
        } catch {
            say("refused \(error.code.name)")
        }
    case "long-alpn":
        do {
            _ = try TLSContext(role: .client, configuration: TLSConfiguration(applicationProtocols: [String(repeating: "h", count: 256)]))
            say("accepted")
        } catch {
            say("refused \(error.code.name)")
        }
    case "list-directory":
        // Under AddressSanitizer a read past readdir's buffer ends this process with a report.
        let names = FileSystem.contents(of: arguments[0]) ?? []
        say("listed \(names.count), first \(names.first ?? "none")")
    default:
        return false
    }
    return true
}

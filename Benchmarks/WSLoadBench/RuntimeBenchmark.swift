import Foundation
import Runtime
import Synchronization

/// CPU seconds (user + system) used by this process so far.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// A loop-bound actor for the executor figure: two tasks hand a token back and forth through it.
private actor Relay {
    let loop: EventLoop
    private var waiter: CheckedContinuation<Void, Never>?

    init(loop: EventLoop) { self.loop = loop }
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    /// Wakes the other side, then waits to be woken.
    func pass() async {
        let other = waiter
        waiter = nil
        other?.resume()
        await withCheckedContinuation { waiter = $0 }
    }

    func release() {
        waiter?.resume()
        waiter = nil
    }
}

struct RuntimeBenchmark {
    let echoConnections: Int
    let idleConnections: Int
    let seconds: Int

    func run() async throws {
        let limit = ResourceLimits.raiseOpenFileLimit()
        let group = try EventLoopGroup()
        print("wsload-bench runtime: \(group.loops.count) loops, open-file limit \(limit), peer in a child process")
        try await executorThroughput(group)
        let server = try startEchoServerProcess()
        defer {
            kill(server.process.processIdentifier, SIGKILL)
            server.process.waitUntilExit()
        }
        let target = try SocketAddress(ip: "127.0.0.1", port: server.port)
        try await connectRate(group, target: target, count: 1000)
        try await connectRate(group, target: target, count: min(idleConnections, 10_000))
        try await echo(group, target: target)
        try await idleMemory(group, target: target)
        let leaked = group.shutdown()
        print("leaked handles at shutdown: \(leaked)")
    }

    /// Jobs per second through one loop's executor: each hand-off resumes a continuation (one job).
    private func executorThroughput(_ group: EventLoopGroup) async throws {
        let loop = group.loops[0]
        let relay = Relay(loop: loop)
        let rounds = 1_000_000
        let start = ContinuousClock.now
        let cpuStart = processCPUSeconds()
        await withTaskGroup(of: Void.self) { tasks in
            for _ in 0..<2 {
                tasks.addTask(executorPreference: loop.taskExecutor) {
                    for _ in 0..<rounds / 2 { await relay.pass() }
                }
            }
            await tasks.next()
            await relay.release()
            await tasks.next()
        }
        let elapsed = (ContinuousClock.now - start).figureSeconds
        let cpu = processCPUSeconds() - cpuStart
        print(String(format: "executor: %.2f M jobs/s (continuation hand-offs on one loop, %.2f CPU-s)",
                     Double(rounds) / elapsed / 1e6, cpu))
    }

    private func connectRate(_ group: EventLoopGroup, target: SocketAddress, count: Int) async throws {
        let start = ContinuousClock.now
        let connections = try await withThrowingTaskGroup(of: [TCPConnection].self) { tasks in
            // A bounded number of connects in flight per loop, as a load generator ramps.
            for loop in group.loops {
                tasks.addTask(executorPreference: loop.taskExecutor) {
                    let share = count / group.loops.count + (loop.index < count % group.loops.count ? 1 : 0)
                    return try await withThrowingTaskGroup(of: TCPConnection.self) { connects in
                        var opened: [TCPConnection] = []
                        var started = 0
                        while started < min(share, 256) {
                            connects.addTask(executorPreference: loop.taskExecutor) { try await TCPConnection.connect(to: target, on: loop) }
                            started += 1
                        }
                        while let connection = try await connects.next() {
                            opened.append(connection)
                            if started < share {
                                connects.addTask(executorPreference: loop.taskExecutor) { try await TCPConnection.connect(to: target, on: loop) }
                                started += 1
                            }
                        }
                        return opened
                    }
                }
            }
            var all: [TCPConnection] = []
            for try await part in tasks { all += part }
            return all
        }
        let elapsed = (ContinuousClock.now - start).figureSeconds
        print(String(format: "connect: %d connections in %.3f s = %.0f connections/s", connections.count, elapsed,
                     Double(connections.count) / elapsed))
        for connection in connections { connection.close() }
        try await Task.sleep(for: .milliseconds(200))
    }

    /// 64-byte round trips, one in flight per connection, for `seconds`.
    private func echo(_ group: EventLoopGroup, target: SocketAddress) async throws {
        let isStopped = StopFlag()
        let message = [UInt8](repeating: 0x5a, count: 64)
        let connections = try await withThrowingTaskGroup(of: TCPConnection.self) { tasks in
            for index in 0..<echoConnections {
                let loop = group.loop(for: index)
                tasks.addTask(executorPreference: loop.taskExecutor) { try await TCPConnection.connect(to: target, on: loop) }
            }
            var all: [TCPConnection] = []
            for try await connection in tasks { all.append(connection) }
            return all
        }
        let cpuStart = processCPUSeconds()
        let start = ContinuousClock.now
        let roundTrips = try await withThrowingTaskGroup(of: Int.self) { tasks in
            for connection in connections {
                tasks.addTask(executorPreference: connection.loop.taskExecutor) {
                    var buffer: [UInt8] = []
                    buffer.reserveCapacity(128)
                    var count = 0
                    while !isStopped.value {
                        try await connection.write(message)
                        buffer.removeAll(keepingCapacity: true)
                        while buffer.count < message.count {
                            if try await connection.read(into: &buffer, maxBytes: message.count - buffer.count) == 0 {
                                throw RuntimeError(.endOfStream, function: "echo")
                            }
                        }
                        count += 1
                    }
                    return count
                }
            }
            try await Task.sleep(for: .seconds(seconds))
            isStopped.set()
            var total = 0
            for try await count in tasks { total += count }
            return total
        }
        let elapsed = (ContinuousClock.now - start).figureSeconds
        let cpu = processCPUSeconds() - cpuStart
        print(String(format: "echo: %d connections, 64 B: %.0f round trips/s, %.0f per client CPU-second (%.2f CPU-s in %.2f s)",
                     connections.count, Double(roundTrips) / elapsed, Double(roundTrips) / cpu, cpu, elapsed))
        for connection in connections { connection.close() }
        try await Task.sleep(for: .milliseconds(200))
    }

    /// RSS growth per open, idle connection with a task parked in `read` on it.
    private func idleMemory(_ group: EventLoopGroup, target: SocketAddress) async throws {
        ResourceLimits.trimHeap()
        let before = ResourceLimits.residentMemoryBytes()
        let count = idleConnections
        let connected = Counter()
        let holder = Task {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for index in 0..<count {
                    let loop = group.loop(for: index)
                    tasks.addTask(executorPreference: loop.taskExecutor) {
                        let connection = try await TCPConnection.connect(to: target, on: loop)
                        connected.increment()
                        var buffer: [UInt8] = []
                        _ = try await connection.read(into: &buffer)
                    }
                }
                try await tasks.waitForAll()
            }
        }
        while connected.value < count { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(300))
        ResourceLimits.trimHeap()
        let after = ResourceLimits.residentMemoryBytes()
        print(String(format: "idle: %d connections, RSS +%.1f MiB = %.2f KB per connection (client side, reader task parked)",
                     count, Double(after - before) / 1_048_576, Double(after - before) / Double(count) / 1024))
        holder.cancel()
        _ = try? await holder.value
    }
}

final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var value: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
}

final class Counter: Sendable {
    private let storage = Atomic<Int>(0)
    func increment() { storage.add(1, ordering: .relaxed) }
    var value: Int { storage.load(ordering: .relaxed) }
}

import Clients
import Foundation
import Runtime
import WebSocket

/// WebSocket echo at N connections, one 64-byte message in flight per connection, against a peer in
/// a child process (the embedded server via `wsload serve`, or Node `ws`), and RSS per idle connection.
struct WebSocketBenchmark {
    let connections: Int
    let idleConnections: Int
    let seconds: Int
    let peers: [String]
    /// `events` (run() + the events stream, a reader task per connection) and/or `receive` (one task
    /// per connection that sends and then calls receive()).
    let apis: [String]
    /// Client event loops (default: one per core).
    let loops: Int

    func run() async throws {
        ResourceLimits.raiseOpenFileLimit()
        let group = try EventLoopGroup(loopCount: loops)
        print("wsload-bench websocket: \(group.loops.count) client loops; peers in child processes (1 core's worth each)")
        for peer in peers {
            let server = try startPeer(peer)
            defer {
                kill(server.process.processIdentifier, SIGKILL)
                server.process.waitUntilExit()
            }
            for api in apis {
                try await echo(group, url: server.url, peer: peer, api: api)
            }
            if idleConnections > 0 { try await idle(group, url: server.url, peer: peer) }
        }
        print("leaked handles at shutdown: \(group.shutdown())")
    }

    /// Starts a peer and reads its URL from its first line.
    private func startPeer(_ name: String) throws -> (process: Process, url: String) {
        let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let (process, text): (Process, String)
        switch name {
        case "embedded":
            (process, text) = try startChildProcess(binaries.appendingPathComponent("wsload"),
                                                    arguments: ["serve", "--port", "0", "--loops", "1", "--no-compression"])
        case "node":
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("peers/node_ws_echo.js")
            (process, text) = try startChildProcess(URL(fileURLWithPath: "/usr/bin/env"), arguments: ["node", script.path])
        default:
            throw RuntimeError(.invalidArgument, function: "peer", detail: "unknown peer \(name) (embedded, node)")
        }
        if let range = text.range(of: "ws://") {
            return (process, String(text[range.lowerBound...].prefix { $0 != " " }))
        }
        if text.hasPrefix("listening "), let port = Int(text.dropFirst(10)) {
            return (process, "ws://127.0.0.1:\(port)/")
        }
        throw RuntimeError(.io, function: name, detail: "unexpected first line: \(text)")
    }

    /// One connection's driver with receive(): connect, then send and receive in turn.
    private static func receiveDriver(
        target: WebSocketURL, loop: EventLoop, message: String, connected: Counter, measuring: StopFlag, isStopped: StopFlag
    ) async -> (count: Int, samples: [Int64]) {
        await drive(WebSocketManager(url: target, loop: loop), message: message, connected: connected, measuring: measuring,
                    isStopped: isStopped)
    }

    /// Runs isolated to the manager (an `isolated` parameter), so its calls into the manager need no
    /// executor hop: the per-connection logic lives on the connection's actor, as RUNTIME-NOTES advises.
    private static func drive(
        _ manager: isolated WebSocketManager, message: String, connected: Counter, measuring: StopFlag, isStopped: StopFlag
    ) async -> (count: Int, samples: [Int64]) {
        let clock = LoopClock()
        var count = 0
        var samples: [Int64] = []
        samples.reserveCapacity(4096)
        do {
            try await manager.connect()
            connected.increment()
            while !isStopped.value {
                let sentAt = clock.now
                try await manager.send(text: message)
                _ = try await manager.receive()
                if measuring.value && !isStopped.value {
                    count += 1
                    samples.append(sentAt.duration(to: clock.now).nanoseconds)
                }
            }
        } catch {
            print("driver: \(error)")
        }
        await manager.disconnect()
        return (count, samples)
    }

    private func echo(_ group: EventLoopGroup, url: String, peer: String, api: String) async throws {
        let target = try WebSocketURL(url)
        let message = String(repeating: "x", count: 64)
        let isStopped = StopFlag()
        let connected = Counter()
        let measuring = StopFlag()
        let clock = LoopClock()
        let results = try await withThrowingTaskGroup(of: (count: Int, samples: [Int64]).self) { tasks in
            for index in 0..<connections {
                let loop = group.loop(for: index)
                if api == "receive" {
                    tasks.addTask(executorPreference: loop.taskExecutor) {
                        await Self.receiveDriver(target: target, loop: loop, message: message, connected: connected,
                                                 measuring: measuring, isStopped: isStopped)
                    }
                    continue
                }
                tasks.addTask(executorPreference: loop.taskExecutor) {
                    let manager = WebSocketManager(url: target, loop: loop)
                    return await withTaskGroup(of: (count: Int, samples: [Int64])?.self) { connection in
                        connection.addTask(executorPreference: loop.taskExecutor) {
                            await manager.run()
                            return nil
                        }
                        connection.addTask(executorPreference: loop.taskExecutor) {
                            var count = 0
                            var samples: [Int64] = []
                            samples.reserveCapacity(4096)
                            var sentAt = clock.now
                            for await event in manager.events() {
                                switch event {
                                case .connected:
                                    connected.increment()
                                    sentAt = clock.now
                                    try? await manager.send(text: message)
                                case .text:
                                    if measuring.value && !isStopped.value {
                                        count += 1
                                        samples.append(sentAt.duration(to: clock.now).nanoseconds)
                                    }
                                    if isStopped.value {
                                        await manager.disconnect()
                                    } else {
                                        sentAt = clock.now
                                        try? await manager.send(text: message)
                                    }
                                default:
                                    break
                                }
                            }
                            return (count, samples)
                        }
                        var result = (count: 0, samples: [Int64]())
                        for await item in connection { if let item { result = item } }
                        return result
                    }
                }
            }
            while connected.value < connections { try await Task.sleep(for: .milliseconds(10)) }
            // Warm up, then measure a window of `seconds`.
            try await Task.sleep(for: .milliseconds(500))
            let cpuStart = processCPUSeconds()
            let start = ContinuousClock.now
            measuring.set()
            try await Task.sleep(for: .seconds(seconds))
            isStopped.set()
            let elapsed = ContinuousClock.now - start
            let cpu = processCPUSeconds() - cpuStart
            var total = 0
            var samples: [Int64] = []
            for try await result in tasks {
                total += result.count
                samples += result.samples
            }
            return (total, samples, elapsed, cpu)
        }
        let (total, samples, elapsed, cpu) = results
        let wall = elapsed.figureSeconds
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1e6
        }
        print(String(format: "echo vs %@ (%@ API): %d connections, 64 B text: %.0f round trips/s, %.0f per client CPU-second "
                        + "(%.2f CPU-s in %.2f s); RTT p50 %.2f ms, p99 %.2f ms",
                     peer, api, connections, Double(total) / wall, Double(total) / max(cpu, 0.001), cpu, wall, percentile(0.5),
                     percentile(0.99)))
        try await Task.sleep(for: .milliseconds(300))
    }

    /// RSS growth per open, idle WebSocket connection: the manager, its socket, and run()'s task with its
    /// reader parked in a read (no pings configured).
    private func idle(_ group: EventLoopGroup, url: String, peer: String) async throws {
        for api in apis { try await idle(group, url: url, peer: peer, api: api) }
    }

    private func idle(_ group: EventLoopGroup, url: String, peer: String, api: String) async throws {
        let target = try WebSocketURL(url)
        ResourceLimits.trimHeap()
        let before = ResourceLimits.residentMemoryBytes()
        let connected = Counter()
        let managers = Locked<[WebSocketManager]>([])
        let holder = Task {
            await withTaskGroup(of: Void.self) { tasks in
                for index in 0..<idleConnections {
                    let loop = group.loop(for: index)
                    let manager = WebSocketManager(url: target, loop: loop)
                    managers.withLock { $0.append(manager) }
                    // As a load driver holds an idle connection: connect, then run() (its reader parked).
                    tasks.addTask(executorPreference: loop.taskExecutor) {
                        guard (try? await manager.connect()) != nil else { return }
                        connected.increment()
                        if api == "receive" {
                            _ = try? await manager.receive()  // One task, parked in the read.
                        } else {
                            await manager.run()
                        }
                    }
                    if index % 500 == 499 { try? await Task.sleep(for: .milliseconds(20)) }
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while connected.value < idleConnections && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .milliseconds(500))
        ResourceLimits.trimHeap()
        let after = ResourceLimits.residentMemoryBytes()
        print(String(format: "idle vs %@ (%@ API): %d of %d connected, RSS +%.1f MiB = %.2f KB per connection (client side)",
                     peer, api, connected.value, idleConnections, Double(after - before) / 1_048_576,
                     Double(after - before) / Double(max(1, connected.value)) / 1024))
        for manager in managers.withLock({ $0 }) { await manager.disconnect() }
        await holder.value
    }
}

/// A lock-protected value for the benchmark's bookkeeping.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

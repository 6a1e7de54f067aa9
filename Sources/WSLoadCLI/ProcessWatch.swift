import Foundation
import Runtime

/// Watches the processes `wsload run --processes` started, from one thread of its own: reads their pipes' lines
/// (`poll(2)` over every open descriptor), reaps them as they end (`waitpid` with `WNOHANG`), and delivers it all
/// as ``Event``s on an `AsyncStream`, with a tick every 100 ms, so the parent's one loop sees lines, deaths and
/// the passing of time without a task or a pipe reader per child.
final class ProcessWatch: Sendable {
    /// Who a process is.
    enum Role: Hashable, Sendable, CustomStringConvertible {
        case server(Int)
        case shard(Int, of: Int)

        var description: String {
            switch self {
            case .server(let index): "server \(index + 1)"
            case .shard(let index, let count): "shard \(index + 1)/\(count)"
            }
        }
    }

    /// Which of a process's pipes a line came from.
    enum Stream: Sendable { case data, errors }

    enum Event: Sendable {
        case line(Role, Stream, String)
        /// The pipe reached its end (every line of it was delivered before).
        case closed(Role, Stream)
        case exited(Role, pid: Int32, ProcessSpawn.Termination)
        case tick
    }

    private struct Watched {
        var role: Role
        var pid: Int32
        var isReaped = false
    }

    private struct State {
        var processes: [Watched] = []
        var pipes: [Int32: (role: Role, stream: Stream)] = [:]
        var isStopped = false
        var queued: [Event] = []
        var waiter: CheckedContinuation<Event?, Never>?
        var isFinished = false
    }

    private let state = Lock(State())

    init() {
        let thread = Thread { [self] in watch() }
        thread.name = "wsload-processes"
        thread.start()
    }

    /// The next event (one consumer), or nil once the watch stopped.
    func next() async -> Event? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Event?? in
                if !state.queued.isEmpty { return .some(state.queued.removeFirst()) }
                if state.isFinished { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func yield(_ event: Event) {
        let waiter = state.withLock { state -> CheckedContinuation<Event?, Never>? in
            guard let waiter = state.waiter else {
                state.queued.append(event)
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: event)
    }

    /// Watches `pid` and the read ends of its pipes (closed here once they reach their end).
    func add(_ role: Role, pid: Int32, data: Int32?, errors: Int32?) {
        state.withLock { state in
            state.processes.append(Watched(role: role, pid: pid))
            if let data { state.pipes[data] = (role, .data) }
            if let errors { state.pipes[errors] = (role, .errors) }
        }
    }

    /// The processes not reaped yet.
    var running: [(role: Role, pid: Int32)] {
        state.withLock { $0.processes.filter { !$0.isReaped }.map { ($0.role, $0.pid) } }
    }

    /// Ends the thread (after its current poll) and the stream.
    func stop() { state.withLock { $0.isStopped = true } }

    private func watch() {
        var readers: [Int32: DescriptorLines] = [:]
        let clock = ContinuousClock()
        var lastTick = clock.now
        while true {
            let (pipes, processes, isStopped) = state.withLock { ($0.pipes, $0.processes, $0.isStopped) }
            if isStopped { break }
            for descriptor in DescriptorLines.ready(Array(pipes.keys), milliseconds: 100) {
                guard let source = pipes[descriptor] else { continue }
                var reader = readers[descriptor] ?? DescriptorLines(descriptor: descriptor)
                for line in reader.readLines() { yield(.line(source.role, source.stream, line)) }
                if reader.isAtEnd {
                    yield(.closed(source.role, source.stream))
                    readers[descriptor] = nil
                    state.withLock { _ = $0.pipes.removeValue(forKey: descriptor) }
                    ProcessPipe.close(descriptor)
                } else {
                    readers[descriptor] = reader
                }
            }
            for process in processes where !process.isReaped {
                guard let termination = ProcessSpawn.reap(process.pid) else { continue }
                state.withLock { state in
                    if let index = state.processes.firstIndex(where: { $0.pid == process.pid }) { state.processes[index].isReaped = true }
                }
                yield(.exited(process.role, pid: process.pid, termination))
            }
            if clock.now - lastTick >= .milliseconds(100) {
                lastTick = clock.now
                yield(.tick)
            }
        }
        for descriptor in state.withLock({ Array($0.pipes.keys) }) { ProcessPipe.close(descriptor) }
        let waiter = state.withLock { state -> CheckedContinuation<Event?, Never>? in
            state.isFinished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}

import Runtime
import Synchronization
import TestSupport
import Testing

/// ``ByteStream/writeWithoutWaiting(_:)`` from a caller with no task to suspend (a loop timer's callback): nothing
/// is thrown, so a failure must reach whoever reads the stream.
@Suite("writes without waiting", .timeLimit(.minutes(1)))
struct WriteWithoutWaitingTests {
    @Test("a write without waiting that fails closes the stream: the read waiting on it reports the failure")
    func failureSurfacesOnTheRead() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let listener = try await loop.submit { try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop) }
            let target = listener.localAddress
            async let accepted = onLoop(loop) { try await listener.accept() }
            let client = try await onLoop(loop) { try await TCPConnection.connect(to: target, on: loop) }
            let peer = try await accepted
            // The peer stays open and silent: only the failed write can end this read.
            let read = Task(executorPreference: loop.taskExecutor) { () -> RuntimeError.Code? in
                var buffer: [UInt8] = []
                do {
                    _ = try await client.read(into: &buffer)
                    return nil
                } catch {
                    return (error as? RuntimeError)?.code
                }
            }
            try await waitUntil { loop.waitingTaskCount == 1 }
            try await onLoop(loop) {
                try await client.shutdownWrite()
                client.writeWithoutWaiting([1, 2, 3])  // after our FIN: EPIPE
            }
            // Bounded: without the close the read would wait for ever (it is cancelled then, closing the stream).
            let ended = Atomic<Bool>(false)
            let watcher = Task { _ = await read.value; ended.store(true, ordering: .relaxed) }
            do {
                try await waitUntil(limit: .seconds(10)) { ended.load(ordering: .relaxed) }
            } catch {
                read.cancel()
                Issue.record("the read still waits after the failed write")
            }
            await watcher.value
            if ended.load(ordering: .relaxed) { #expect(await read.value == .brokenPipe) }
            peer.close()
            listener.close()
        }
    }
}

import Runtime
import TestSupport
import Testing

/// A reader that waits hands its buffer to the stream, and the bytes that wake it are appended to that buffer
/// straight from the loop's scratch buffer: what the buffer held stays in front, at most `maxBytes` are added, the
/// rest waits for the next read in order, and a failed wait gives the buffer back as it was.
@Suite("TCP: a waiting reader's buffer", .timeLimit(.minutes(1)))
struct WaitingReadTests {
    @Test("bytes that wake a reader are appended after what its buffer held; the excess comes with the next read")
    func appendsAfterHeldBytesAndKeepsTheExcess() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let server = try await EchoServer.start(on: group)
            let target = server.address
            let loop = group.loops[0]
            try await onLoop(loop) {
                let connection = try await TCPConnection.connect(to: target, on: loop)
                let sent: [UInt8] = Array(10...19)
                async let first: (count: Int, buffer: [UInt8]) = {
                    var buffer: [UInt8] = [1, 2, 3]
                    let count = try await connection.read(into: &buffer, maxBytes: 4)
                    return (count, buffer)
                }()
                // The write goes out once the read above waits (a bound, not a timing claim: were the read late,
                // it would find the bytes waiting and the test would still hold, without the waiting path).
                try await Task.sleep(for: .milliseconds(50))
                try await connection.write(sent)
                let (count, buffer) = try await first
                #expect(count == 4)
                #expect(buffer == [1, 2, 3] + sent.prefix(4))
                // Past the limit, the rest would be short and the reads below would wait forever.
                guard count == 4 else { return connection.close() }
                var rest: [UInt8] = []
                while rest.count < 6 { _ = try await connection.read(into: &rest, maxBytes: 64) }
                #expect(rest == Array(sent.dropFirst(4)))
                connection.close()
            }
            await server.stop()
        }
    }

    @Test("a waiting reader whose task is cancelled gets its buffer back unchanged")
    func cancelledWaitKeepsTheBuffer() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let server = try await EchoServer.start(on: group)
            let target = server.address
            let loop = group.loops[0]
            let connection = try await onLoop(loop) { try await TCPConnection.connect(to: target, on: loop) }
            let reader = Task(executorPreference: loop.taskExecutor) { () -> ([UInt8], Bool) in
                var buffer: [UInt8] = [7, 8, 9]
                do {
                    _ = try await connection.read(into: &buffer, maxBytes: 16)
                    return (buffer, false)
                } catch {
                    return (buffer, true)
                }
            }
            try await Task.sleep(for: .milliseconds(50))
            reader.cancel()
            let (buffer, failed) = await reader.value
            #expect(failed)
            #expect(buffer == [7, 8, 9])
            connection.close()
            await server.stop()
        }
    }
}

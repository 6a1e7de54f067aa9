import Runtime
import Synchronization
import TestSupport
import Testing

/// Which stream the writers share.
enum SharedStreamKind: String, CustomTestStringConvertible, CaseIterable {
    case tcp, tls
    var testDescription: String { rawValue }
}

/// Writer-side state shared with the reading peer on the other loop.
private final class WriterProgress: Sendable {
    /// Bit `i` set: writer `i` has started its `write`.
    let started = Atomic<Int>(0)
    /// Bit `i` set: writer `i`'s `write` returned.
    let finished = Atomic<Int>(0)

    func didStart(_ index: Int) { started.bitwiseOr(1 << index, ordering: .sequentiallyConsistent) }
    func didFinish(_ index: Int) { finished.bitwiseOr(1 << index, ordering: .sequentiallyConsistent) }
    func hasStarted(_ index: Int) -> Bool { started.load(ordering: .sequentiallyConsistent) & (1 << index) != 0 }
    func hasFinished(_ index: Int) -> Bool { finished.load(ordering: .sequentiallyConsistent) & (1 << index) != 0 }
}

/// The runs of equal bytes in `bytes`: (value, length) in order. A message that arrived contiguous is one run.
private func runs(_ bytes: [UInt8]) -> [(value: UInt8, count: Int)] {
    var result: [(value: UInt8, count: Int)] = []
    bytes.withUnsafeBufferPointer { bytes in
        var start = 0
        while start < bytes.count {
            let value = bytes[start]
            var end = start + 1
            while end < bytes.count && bytes[end] == value { end += 1 }
            result.append((value, end - start))
            start = end
        }
    }
    return result
}

/// Several tasks write to one stream at once (a server's push task and its echo loop, a client's ping task and its
/// sender); whatever the transport does between its pieces, each `write` must reach the peer whole and in call order.
@Suite("concurrent writers on one stream", .serialized, .timeLimit(.minutes(3)))
struct ConcurrentWriteTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates.shared.get()
    }

    /// A small queue high-water mark, so the first writer waits for the slow peer mid-message.
    private static let options = TCPOptions(writeHighWaterMark: 64 * 1024, writeLowWaterMark: 16 * 1024)
    /// Far more than loopback's kernel buffers hold while the peer does not read.
    private static let messageSize = 8 << 20

    /// Connects a writer stream on `writerLoop` to a reader stream on `readerLoop` over loopback.
    private func connectedPair(
        _ kind: SharedStreamKind, writerLoop: EventLoop, readerLoop: EventLoop
    ) async throws -> (writer: any ByteStream, reader: any ByteStream) {
        let listener = try await readerLoop.submit {
            try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: readerLoop)
        }
        defer { listener.close() }
        let target = listener.localAddress
        let serverContext = try TLSContext(role: .server, configuration: TLSConfiguration(
            certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
        let clientContext = try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile))
        async let accepted = onLoop(readerLoop) { () async throws -> any ByteStream in
            let tcp = try await listener.accept()
            return kind == .tls ? try await TLSConnection.accept(over: tcp, context: serverContext) : tcp
        }
        let writer = try await onLoop(writerLoop) { () async throws -> any ByteStream in
            let tcp = try await TCPConnection.connect(to: target, on: writerLoop, options: Self.options)
            return kind == .tls ? try await TLSConnection.connect(over: tcp, context: clientContext, serverName: "localhost") : tcp
        }
        return (writer, try await accepted)
    }

    /// Starts `messages.count` writers on `stream`'s loop, in order; writer `i` writes `messages[i]` and records
    /// in `progress` when it starts and ends. Returns the tasks (results: nil, or the error the write threw).
    private func startWriters(
        _ messages: [[UInt8]], on stream: any ByteStream, progress: WriterProgress
    ) async throws -> [Task<String?, Never>] {
        let loop = stream.loop
        // Created from the loop thread, so they start in this order, each running until its first real wait.
        return try await onLoop(loop) {
            messages.indices.map { index in
                Task(executorPreference: loop.taskExecutor) { () -> String? in
                    progress.didStart(index)
                    defer { progress.didFinish(index) }
                    do {
                        try await stream.write(messages[index])
                        return nil
                    } catch {
                        return "\(error)"
                    }
                }
            }
        }
    }

    /// Reads exactly `count` bytes on the stream's loop.
    private func read(_ count: Int, from stream: any ByteStream) async throws -> [UInt8] {
        try await onLoop(stream.loop) { try await stream.read(exactly: count) }
    }

    @Test("three large messages written at once reach a slowly reading peer each whole, in call order",
          arguments: SharedStreamKind.allCases)
    func writersSlowPeer(kind: SharedStreamKind) async throws {
        try await withLoopGroup(loopCount: 2) { group in
            let (writer, reader) = try await connectedPair(kind, writerLoop: group.loops[0], readerLoop: group.loops[1])
            let messages = [
                [UInt8](repeating: 0xA1, count: Self.messageSize), [UInt8](repeating: 0xB2, count: Self.messageSize / 4),
                [UInt8](repeating: 0xC3, count: Self.messageSize / 4),
            ]
            let progress = WriterProgress()
            let writers = try await startWriters(messages, on: writer, progress: progress)
            // The peer reads nothing until the last writer is under way.
            try await waitUntil { progress.hasStarted(2) }
            // Otherwise the first message fit the buffers at once and nothing ran concurrently: the test proves nothing.
            #expect(!progress.hasFinished(0), "the first writer must still be mid-message when the others start")
            let received = try await read(messages.reduce(0) { $0 + $1.count }, from: reader)
            for writer in writers { #expect(await writer.value == nil) }
            let found = runs(received)
            #expect(found.map(\.value) == [0xA1, 0xB2, 0xC3] && found.map(\.count) == messages.map(\.count),
                    "\(kind): \(found.count) runs, the first \(found.prefix(6).map { "\($0.count)×\($0.value)" })")
            writer.close()
            reader.close()
        }
    }

    @Test("a write without waiting takes its turn behind the writer under way, before the writers after it",
          arguments: SharedStreamKind.allCases)
    func writeWithoutWaitingTakesItsTurn(kind: SharedStreamKind) async throws {
        try await withLoopGroup(loopCount: 2) { group in
            let (writer, reader) = try await connectedPair(kind, writerLoop: group.loops[0], readerLoop: group.loops[1])
            let messages = [
                [UInt8](repeating: 0xA1, count: Self.messageSize), [UInt8](repeating: 0xB2, count: 4096),
                [UInt8](repeating: 0xC3, count: 4096),
            ]
            let progress = WriterProgress()
            let first = try await startWriters([messages[0]], on: writer, progress: progress)
            try await waitUntil { progress.hasStarted(0) }
            // A loop timer's callback would write so: the first writer is suspended mid-message meanwhile.
            try await onLoop(writer.loop) { writer.writeWithoutWaiting(messages[1]) }
            let lastProgress = WriterProgress()
            let last = try await startWriters([messages[2]], on: writer, progress: lastProgress)
            try await waitUntil { lastProgress.hasStarted(0) }
            #expect(!progress.hasFinished(0), "the first writer must still be mid-message when the others write")
            let received = try await read(messages.reduce(0) { $0 + $1.count }, from: reader)
            #expect(await first[0].value == nil)
            #expect(await last[0].value == nil)
            let found = runs(received)
            #expect(found.map(\.value) == [0xA1, 0xB2, 0xC3] && found.map(\.count) == messages.map(\.count),
                    "\(kind): \(found.count) runs, the first \(found.prefix(6).map { "\($0.count)×\($0.value)" })")
            writer.close()
            reader.close()
        }
    }

    @Test("writeIfReady declines, sending nothing, while write would wait; once the queue drained it sends in order",
          arguments: SharedStreamKind.allCases)
    func writeIfReadyDeclinesAboveTheMark(kind: SharedStreamKind) async throws {
        try await withLoopGroup(loopCount: 2) { group in
            let (writer, reader) = try await connectedPair(kind, writerLoop: group.loops[0], readerLoop: group.loops[1])
            let declined = [UInt8](repeating: 0xEE, count: 100)
            // Past the high-water mark with no writer under way (a timer's write without waiting), then with one.
            let queuedAlone = try await onLoop(writer.loop) { () throws -> Bool in
                writer.writeWithoutWaiting([UInt8](repeating: 0xA1, count: Self.messageSize))
                return try writer.writeIfReady(declined)
            }
            #expect(!queuedAlone, "\(kind): above the mark, with no writer under way, writeIfReady took the message")
            let progress = WriterProgress()
            let second = try await startWriters([[UInt8](repeating: 0xB2, count: Self.messageSize / 4)], on: writer, progress: progress)
            try await waitUntil { progress.hasStarted(0) }
            let queuedBehind = try await onLoop(writer.loop) { try writer.writeIfReady(declined) }
            #expect(!queuedBehind, "\(kind): behind a waiting writer, writeIfReady took the message")
            var received = try await read(Self.messageSize + Self.messageSize / 4, from: reader)
            #expect(await second[0].value == nil)
            let taken = try await onLoop(writer.loop) { try writer.writeIfReady([UInt8](repeating: 0xC3, count: 100)) }
            #expect(taken, "\(kind): with the queue drained, writeIfReady declined")
            received += try await read(100, from: reader)
            let found = runs(received)
            #expect(found.map(\.value) == [0xA1, 0xB2, 0xC3] && found.map(\.count) == [Self.messageSize, Self.messageSize / 4, 100],
                    "\(kind): runs \(found.prefix(6).map { "\($0.count)×\($0.value)" })")
            writer.close()
            reader.close()
        }
    }

    /// TLS only: TCP accepts every write at once (in order) and has no queue a writer could leave; a TCP writer
    /// cancelled while it waits for the queue to drain closes the stream, as ``ByteStream`` documents.
    @Test("TLS: a queued writer that is cancelled leaves the queue; the writers behind it still write, in order")
    func cancelledQueuedWriter() async throws {
        let kind = SharedStreamKind.tls
        try await withLoopGroup(loopCount: 2) { group in
            let (writer, reader) = try await connectedPair(kind, writerLoop: group.loops[0], readerLoop: group.loops[1])
            let messages = [
                [UInt8](repeating: 0xA1, count: Self.messageSize), [UInt8](repeating: 0xB2, count: 4096),
                [UInt8](repeating: 0xC3, count: 4096),
            ]
            let progress = WriterProgress()
            let writers = try await startWriters(messages, on: writer, progress: progress)
            try await waitUntil { progress.hasStarted(2) }
            #expect(!progress.hasFinished(0), "the first writer must still be mid-message when the others start")
            writers[1].cancel()
            // Bounded: a cancelled writer left waiting would only end after the first, which waits for this peer.
            try await waitUntil { progress.hasFinished(1) }
            let cancelled = await writers[1].value
            #expect(cancelled?.contains("CancellationError") == true, "the cancelled writer: \(cancelled ?? "no error")")
            let expected: [(UInt8, Int)] = [(0xA1, Self.messageSize), (0xC3, 4096)]
            let received = try await read(expected.reduce(0) { $0 + $1.1 }, from: reader)
            #expect(await writers[2].value == nil)
            #expect(await writers[0].value == nil)
            let found = runs(received)
            #expect(found.map(\.value) == expected.map(\.0) && found.map(\.count) == expected.map(\.1),
                    "\(kind): runs \(found.prefix(6).map { "\($0.count)×\($0.value)" })")
            // The stream still works after the cancelled writer left.
            try await onLoop(writer.loop) { try await writer.write([0x0D]) }
            #expect(try await read(1, from: reader) == [0x0D])
            writer.close()
            reader.close()
        }
    }
}

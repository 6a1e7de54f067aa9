import Testing
@testable import WebSocket

/// The allocation-free hot path: a read appends straight to the parser's lent buffer, and a written output
/// buffer is reused for the next frames. Both must leave the bytes exactly as the copying path did.
@Suite("Connection: lent receive buffer and recycled output", .timeLimit(.minutes(1)))
struct BufferReuseTests {
    /// A masking-key source that counts up (the keys are visible in the frames).
    struct CountingRandom: RandomNumberGenerator, Sendable {
        var value: UInt64 = 0x0102_0304
        mutating func next() -> UInt64 {
            defer { value &+= 0x1111_1111 }
            return value
        }
    }

    @Test("bytes appended to the lent buffer, split anywhere, parse as the same messages; unparsed bytes stay in front")
    func lentBufferParsesAcrossSplits() throws {
        let stream = serverBytes(
            WebSocketFrame(opcode: .text, payload: Array("first message".utf8)),
            WebSocketFrame(opcode: .binary, payload: Array(0..<200)),
            WebSocketFrame(opcode: .text, payload: Array("third".utf8)))
        for split in [1, 2, 7, 16, 100, stream.count] {
            var connection = WebSocketConnection(role: .client)
            var events: [WebSocketConnection.Event] = []
            var offset = 0
            while offset < stream.count {
                var lent = connection.lendReceiveBuffer()
                let end = min(stream.count, offset + split)
                lent.append(contentsOf: stream[offset..<end])
                offset = end
                connection.returnReceiveBuffer(lent)
                while let event = connection.nextEvent() { events.append(event) }
            }
            #expect(events == [.message(.text("first message")), .message(.binary(Array(0..<200))), .message(.text("third"))],
                    "split every \(split) bytes")
        }
    }

    @Test("frames encoded into a recycled output buffer are byte-exact, and big buffers are not kept")
    func recycledOutputIsByteExact() {
        var reused = WebSocketConnection(role: .client, random: CountingRandom())
        var fresh = WebSocketConnection(role: .client, random: CountingRandom())
        for round in 0..<5 {
            let message = WebSocketConnection.Message.text("round \(round) " + String(repeating: "x", count: round * 10))
            reused.send(message)
            fresh.send(message)
            let written = reused.takeOutput()
            let expected = fresh.takeOutput()
            #expect(written == expected)
            reused.recycleOutput(written)
        }
        // The recycled buffer is empty and keeps its capacity; a big one is dropped.
        reused.send(.binary([UInt8](repeating: 1, count: WebSocketConnection.recycledOutputCapacity * 2)))
        let big = reused.takeOutput()
        reused.recycleOutput(big)
        #expect(!reused.hasOutput)
        reused.send(.binary([9]))
        fresh.send(.binary([UInt8](repeating: 1, count: WebSocketConnection.recycledOutputCapacity * 2)))
        _ = fresh.takeOutput()
        fresh.send(.binary([9]))
        #expect(reused.takeOutput() == fresh.takeOutput())
    }

    @Test("output put back unwritten goes out first, ahead of frames queued after it, byte for byte")
    func restoredOutputGoesFirst() {
        var connection = WebSocketConnection(role: .client, random: CountingRandom())
        var reference = WebSocketConnection(role: .client, random: CountingRandom())
        connection.send(.text("declined"))
        reference.send(.text("declined"))
        let declined = connection.takeOutput()
        #expect(!connection.hasOutput)
        connection.restoreOutput(declined)  // alone: exactly what was taken
        #expect(connection.takeOutput() == declined)
        connection.send(.binary([1, 2, 3]))  // queued after the take, before the put-back
        connection.restoreOutput(declined)
        reference.send(.binary([1, 2, 3]))
        #expect(connection.takeOutput() == reference.takeOutput())
    }
}

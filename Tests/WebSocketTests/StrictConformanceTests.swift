import Testing
@testable import WebSocket

/// Autobahn 6.4.x's message: valid UTF-8, then U+110000's first bytes (f4 90: invalid at byte 12), then ASCII.
private let utf8Payload: [UInt8] = [0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5,
                                    0xF4, 0x90, 0x80, 0x80, 0x65, 0x64, 0x69, 0x74, 0x65, 0x64]

/// Drains every event the connection has for the bytes received so far.
private func drain(_ connection: inout WebSocketConnection) -> [WebSocketConnection.Event] {
    var events: [WebSocketConnection.Event] = []
    while let event = connection.nextEvent() { events.append(event) }
    return events
}

@Suite("Strict-canonical conformance: fail fast inside a frame", .timeLimit(.minutes(1)))
struct StrictConformanceTests {
    @Test("6.4.4: one text frame in chops fails with 1007 at the invalid byte, before the rest of the frame arrives")
    func failFastInsideOneFrame() throws {
        var connection = WebSocketConnection(role: .client)
        let head: [UInt8] = [0x81, UInt8(utf8Payload.count)]
        connection.receive(head + utf8Payload[..<12])
        #expect(drain(&connection).isEmpty)
        #expect(!connection.hasOutput)
        connection.receive(utf8Payload[12..<13])
        let events = drain(&connection)
        #expect(events == [.failed(WebSocketProtocolError(.invalidFramePayloadData, "text message is not valid UTF-8", offset: 14))],
                "\(events)")
        #expect(try queuedCloseCode(&connection) == 1007)
    }

    @Test("6.4.3: the invalid chop fails at once in a continuation frame too, and from a masked client (server side)")
    func failFastContinuationMasked() throws {
        // A text message: the first fragment complete, the second one's payload in two chops.
        var wire: [UInt8] = []
        WebSocketFrame(isFinal: false, opcode: .text, payload: Array(utf8Payload[..<11])).encode(maskingKey: 0x1234_5678, into: &wire)
        WebSocketFrame(isFinal: true, opcode: .continuation, payload: Array(utf8Payload[11...]))
            .encode(maskingKey: 0x9ABC_DEF0, into: &wire)
        let secondStart = 2 + 4 + 11
        let invalidByte = secondStart + 2 + 4 + 1  // f4 is a valid start; 90 is the first invalid byte
        var server = WebSocketConnection(role: .server)
        server.receive(wire[..<(invalidByte - 1)])
        #expect(drain(&server).isEmpty)
        server.receive(wire[(invalidByte - 1)...invalidByte])
        let events = drain(&server)
        #expect(events == [.failed(WebSocketProtocolError(.invalidFramePayloadData, "text message is not valid UTF-8",
                                                          offset: invalidByte))], "\(events)")
        var parser = WebSocketFrameParser(role: .client)
        parser.append(server.takeOutput())
        #expect(try parser.nextFrame()?.payload.prefix(2) == [0x03, 0xEF])
    }

    @Test("a valid text frame arriving byte by byte (code points split across reads) is delivered whole, once")
    func validChopsDelivered() {
        let text = "κόσμε — ✓ 𝄞 edited"
        for role in [WebSocketConnection.Role.client, .server] {
            var wire: [UInt8] = []
            WebSocketFrame(opcode: .text, payload: Array(text.utf8)).encode(maskingKey: role == .server ? 0xA1B2_C3D4 : nil, into: &wire)
            var connection = WebSocketConnection(role: role)
            var events: [WebSocketConnection.Event] = []
            for byte in wire {
                connection.receive([byte])
                events += drain(&connection)
            }
            #expect(events == [.message(.text(text))], "\(role): \(events)")
        }
    }

    @Test("an incomplete code point at a frame's end still fails when the message ends (not early)")
    func truncatedCodePointAtEnd() {
        var connection = WebSocketConnection(role: .client)
        connection.receive([0x81, 3, 0x61, 0xE2])
        #expect(drain(&connection).isEmpty)
        connection.receive([0x82])
        #expect(drain(&connection) == [.failed(WebSocketProtocolError(.invalidFramePayloadData, "text message is not valid UTF-8",
                                                                     offset: 0))])
    }

    @Test("a frame declaring a large length reserves at most a bounded step beyond the bytes that arrived")
    func reserveIsBounded() throws {
        var parser = WebSocketFrameParser(role: .client)
        let length = 16 * 1024 * 1024
        parser.append([0x82, 127, 0, 0, 0, 0, UInt8(length >> 24 & 0xFF), UInt8(length >> 16 & 0xFF), 0, 0, 1])
        #expect(try parser.nextFrame() == nil)
        #expect(parser.bufferCapacity <= WebSocketFrameParser.reserveStep + 64 * 1024, "reserved \(parser.bufferCapacity)")
        // The whole frame, once it has arrived, is still returned.
        parser.append([UInt8](repeating: 7, count: length - 1))
        #expect(try parser.nextFrame()?.payload.count == length)
    }

    @Test("a 16 MiB frame arriving in 64 KiB reads grows the buffer geometrically: O(log n) reallocations, not one per read")
    func growthIsGeometric() throws {
        // Before the fix: every read reserved exactly `count + 256 KiB`, so each of the 256 reads reallocated and
        // copied the whole buffer (254 capacity changes, ~2 GiB of memcpy for one frame).
        var parser = WebSocketFrameParser(role: .client)
        let length = 16 * 1024 * 1024
        let piece = [UInt8](repeating: 7, count: 64 * 1024)
        parser.append([0x82, 127, 0, 0, 0, 0, UInt8(length >> 24 & 0xFF), UInt8(length >> 16 & 0xFF), 0, 0])
        var capacity = parser.bufferCapacity
        var growths = 0
        var frame: WebSocketFrame?
        for _ in 0..<(length / piece.count) {
            parser.append(piece)
            frame = try parser.nextFrame()
            if parser.bufferCapacity != capacity {
                growths += 1
                capacity = parser.bufferCapacity
            }
            // Still bounded by what arrived: never the declared length ahead of its bytes.
            if frame == nil {
                #expect(parser.bufferCapacity <= 2 * (parser.bufferedByteCount + WebSocketFrameParser.reserveStep) + 64 * 1024)
            }
        }
        #expect(frame?.payload.count == length)
        #expect(growths <= 12, "\(growths) reallocations for one 16 MiB frame")
    }

    @Test("a masked text frame longer than the validator's scratch chunk fails at the exact invalid byte, read in pieces")
    func maskedFailFastAcrossChunks() throws {
        var payload = [UInt8](repeating: UInt8(ascii: "a"), count: 3000)
        payload[1301] = 0xC3  // a two-byte lead ...
        payload[1302] = 0x28  // ... whose continuation is not one: invalid at payload byte 1302
        var wire: [UInt8] = []
        WebSocketFrame(opcode: .text, payload: payload + [0x61]).encode(maskingKey: 0x0102_0304, into: &wire)
        let payloadStart = 2 + 2 + 4
        var server = WebSocketConnection(role: .server)
        server.receive(wire[..<(payloadStart + 701)])  // an odd split: the key's phase carries into the next read
        #expect(drain(&server).isEmpty)
        server.receive(wire[(payloadStart + 701)..<(payloadStart + 2000)])
        #expect(drain(&server) == [.failed(WebSocketProtocolError(.invalidFramePayloadData, "text message is not valid UTF-8",
                                                                 offset: payloadStart + 1302))])
    }

    @Test("a masked valid text frame read in odd pieces is delivered intact (the key's phase carries across reads)")
    func maskedValidAcrossChunks() {
        let text = String(repeating: "κόσμε ✓ 𝄞 ", count: 200)
        var wire: [UInt8] = []
        WebSocketFrame(opcode: .text, payload: Array(text.utf8)).encode(maskingKey: 0xDEAD_BEEF, into: &wire)
        var server = WebSocketConnection(role: .server)
        var events: [WebSocketConnection.Event] = []
        var start = 0
        while start < wire.count {
            let end = Swift.min(wire.count, start + 777)
            server.receive(wire[start..<end])
            events += drain(&server)
            start = end
        }
        #expect(events == [.message(.text(text))])
    }
}

@Suite("permessage-deflate: BFINAL blocks (RFC 7692 §7.2.3.4)", .timeLimit(.minutes(1)))
struct DeflateFinalBlockTests {
    /// zlib Z_FINISH on raw deflate streams (python3: `compressobj(6, DEFLATED, -15).compress(x) + flush(Z_FINISH)`):
    /// "Hello" alone, and "Hello, Hello, Hello!" compressed with "Hello" as its window (context takeover).
    static let helloFinal: [UInt8] = [0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
    static let helloAgainWithWindow: [UInt8] = [0xF3, 0x00, 0x11, 0x3A, 0x0A, 0xC8, 0x94, 0x22, 0x00]

    @Test("with context takeover, messages after a BFINAL block inflate, and may use the window before it")
    func contextTakeover() throws {
        let inflater = MessageInflater(isContextReset: false, maximumMessageSize: 1 << 20)
        var first: [UInt8] = []
        try inflater.inflate(Self.helloFinal, isFinal: true, into: &first)
        #expect(first == Array("Hello".utf8))
        var second: [UInt8] = []
        try inflater.inflate(Self.helloAgainWithWindow, isFinal: true, into: &second)
        #expect(String(decoding: second, as: UTF8.self) == "Hello, Hello, Hello!")
        var third: [UInt8] = []
        try inflater.inflate(Self.helloFinal, isFinal: true, into: &third)
        #expect(third == Array("Hello".utf8))
    }

    @Test("through the connection: BFINAL messages, fragmented or not, each deliver their text")
    func throughConnection() {
        var configuration = WebSocketConnection.Configuration()
        configuration.compression = PerMessageDeflateParameters()
        var connection = WebSocketConnection(role: .client, configuration: configuration)
        connection.receive(serverBytes(
            WebSocketFrame(rsv1: true, opcode: .text, payload: Self.helloFinal),
            WebSocketFrame(isFinal: false, rsv1: true, opcode: .text, payload: Array(Self.helloFinal[..<3])),
            WebSocketFrame(opcode: .continuation, payload: Array(Self.helloFinal[3...])),
            WebSocketFrame(rsv1: true, opcode: .text, payload: Self.helloAgainWithWindow)))
        #expect(drain(&connection) == [.message(.text("Hello")), .message(.text("Hello")), .message(.text("Hello, Hello, Hello!"))])
    }
}

import Crypto
import Testing
@testable import WebSocket

/// Frames as a server sends them (unmasked), concatenated.
func serverBytes(_ frames: WebSocketFrame...) -> [UInt8] { frames.flatMap { $0.encoded(maskingKey: nil) } }

/// All events a client-side connection produces from `bytes`.
func clientEvents(_ bytes: [UInt8], configuration: WebSocketConnection.Configuration = .init()) -> (events: [WebSocketConnection.Event], connection: WebSocketConnection) {
    var connection = WebSocketConnection(role: .client, configuration: configuration)
    connection.receive(bytes)
    var events: [WebSocketConnection.Event] = []
    while let event = connection.nextEvent() { events.append(event) }
    return (events, connection)
}

/// The close code of the frame a failing connection queued.
func queuedCloseCode(_ connection: inout WebSocketConnection) throws -> UInt16? {
    var parser = WebSocketFrameParser(role: .server)
    parser.append(connection.takeOutput())
    guard let frame = try parser.nextFrame(), frame.opcode == .close, frame.payload.count >= 2 else { return nil }
    return UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1])
}

@Suite("Connection state machine", .timeLimit(.minutes(1)))
struct ConnectionTests {
    @Test("reassembles fragments with control frames between them; answers pings")
    func reassembly() throws {
        let (events, connection) = clientEvents(serverBytes(
            WebSocketFrame(isFinal: false, opcode: .text, payload: Array("Hel".utf8)),
            WebSocketFrame(opcode: .ping, payload: [1, 2]),
            WebSocketFrame(isFinal: false, opcode: .continuation, payload: Array("lo, ".utf8)),
            WebSocketFrame(opcode: .pong, payload: [3]),
            WebSocketFrame(opcode: .continuation, payload: Array("world".utf8)),
            WebSocketFrame(opcode: .binary, payload: [0, 255])))
        #expect(events == [.ping([1, 2]), .pong([3]), .message(.text("Hello, world")), .message(.binary([0, 255]))])
        var copy = connection
        var parser = WebSocketFrameParser(role: .server)
        parser.append(copy.takeOutput())
        #expect(try parser.nextFrame() == WebSocketFrame(opcode: .pong, payload: [1, 2]))
    }

    @Test("each failure fails the connection with its close code and queues that close", arguments: [
        (serverBytes(WebSocketFrame(opcode: .continuation, payload: [1])), 1002, "continuation frame without"),
        (serverBytes(WebSocketFrame(isFinal: false, opcode: .text, payload: [0x41]), WebSocketFrame(opcode: .binary, payload: [])),
         1002, "while a fragmented one is open"),
        (serverBytes(WebSocketFrame(opcode: .text, payload: [0xC0, 0x80])), 1007, "not valid UTF-8"),
        (serverBytes(WebSocketFrame(isFinal: false, opcode: .text, payload: [0xE2, 0x82]),
                     WebSocketFrame(opcode: .continuation, payload: [0x41])), 1007, "not valid UTF-8"),
        (serverBytes(WebSocketFrame(opcode: .text, payload: [0xF0, 0x9D])), 1007, "not valid UTF-8"),
        (serverBytes(WebSocketFrame(opcode: .close, payload: [0x03])), 1002, "1-byte payload"),
        (serverBytes(WebSocketFrame(opcode: .close, payload: [0x03, 0xED])), 1002, "1005 is not allowed"),
        (serverBytes(WebSocketFrame(opcode: .close, payload: [0x03, 0xE7])), 1002, "999 is not allowed"),
        (serverBytes(WebSocketFrame(opcode: .close, payload: [0x13, 0x88])), 1002, "5000 is not allowed"),
        (serverBytes(WebSocketFrame(opcode: .close, payload: [0x03, 0xE8, 0xFF])), 1007, "close reason"),
        (serverBytes(WebSocketFrame(opcode: .binary, payload: [UInt8](repeating: 0, count: 2000))), 1009, "exceeds"),
        // One frame within the frame limit but over the message limit, text (read in place) and binary.
        (serverBytes(WebSocketFrame(opcode: .text, payload: [UInt8](repeating: 0x61, count: 1200))), 1009, "exceeds 1024"),
        (serverBytes(WebSocketFrame(opcode: .binary, payload: [UInt8](repeating: 0, count: 1200))), 1009, "exceeds 1024"),
        (serverBytes(WebSocketFrame(isFinal: false, opcode: .binary, payload: [UInt8](repeating: 0, count: 600)),
                     WebSocketFrame(opcode: .continuation, payload: [UInt8](repeating: 0, count: 600))), 1009, "exceeds 1024"),
        (serverBytes(WebSocketFrame(isFinal: false, opcode: .binary, payload: [1]), WebSocketFrame(isFinal: false, opcode: .continuation, payload: [1]),
                     WebSocketFrame(isFinal: false, opcode: .continuation, payload: [1]), WebSocketFrame(isFinal: false, opcode: .continuation, payload: [1])),
         1009, "fragments"),
    ] as [([UInt8], UInt16, String)])
    func failures(bytes: [UInt8], code: UInt16, reason: String) throws {
        let configuration = WebSocketConnection.Configuration(maximumFrameSize: 1500, maximumMessageSize: 1024, maximumFragmentCount: 3)
        var (events, connection) = clientEvents(bytes, configuration: configuration)
        guard case .failed(let error)? = events.last else {
            Issue.record("expected a failure, got \(events)")
            return
        }
        #expect(error.closeCode.rawValue == code)
        #expect(error.reason.contains(reason), "\(error.reason)")
        #expect(connection.state == .closed)
        #expect(try queuedCloseCode(&connection) == code)
    }

    @Test("invalid UTF-8 in the first fragment fails before the message ends (fail fast)")
    func failFast() {
        var connection = WebSocketConnection(role: .client)
        connection.receive(serverBytes(WebSocketFrame(isFinal: false, opcode: .text, payload: [0x41, 0xFF])))
        guard case .failed(let error)? = connection.nextEvent() else {
            Issue.record("no failure on the first fragment")
            return
        }
        #expect(error.closeCode == .invalidFramePayloadData)
    }

    @Test("closing handshake started by the client")
    func clientInitiatedClose() throws {
        var client = WebSocketConnection(role: .client)
        var server = WebSocketConnection(role: .server)
        client.close(code: .goingAway, reason: "bye")
        #expect(client.state == .closeSent)
        server.receive(client.takeOutput())
        #expect(server.nextEvent() == .closeReceived(code: .goingAway, reason: "bye"))
        #expect(server.state == .closed)
        client.receive(server.takeOutput())
        #expect(client.nextEvent() == .closeReceived(code: .goingAway, reason: ""))
        #expect(client.state == .closed)
        #expect(!client.hasOutput)
    }

    @Test("closing handshake started by the server, data still delivered while closing; empty close answered empty")
    func serverInitiatedClose() {
        var client = WebSocketConnection(role: .client)
        var server = WebSocketConnection(role: .server)
        server.send(.text("last words"))
        server.close(code: WebSocketCloseCode(rawValue: 4000), reason: "")
        client.receive(server.takeOutput())
        #expect(client.nextEvent() == .message(.text("last words")))
        #expect(client.nextEvent() == .closeReceived(code: WebSocketCloseCode(rawValue: 4000), reason: ""))
        server.receive(client.takeOutput())
        #expect(server.nextEvent() == .closeReceived(code: WebSocketCloseCode(rawValue: 4000), reason: ""))

        var empty = WebSocketConnection(role: .client)
        empty.receive(serverBytes(WebSocketFrame(opcode: .close)))
        #expect(empty.nextEvent() == .closeReceived(code: nil, reason: ""))
        #expect(empty.takeOutput() .count == 6)  // 2-byte header + 4-byte mask, no payload.
    }

    @Test("close reasons are cut to 123 bytes on a character boundary")
    func longReason() throws {
        var client = WebSocketConnection(role: .client)
        client.close(code: .normalClosure, reason: String(repeating: "é", count: 100))
        var parser = WebSocketFrameParser(role: .server)
        parser.append(client.takeOutput())
        let frame = try #require(try parser.nextFrame())
        #expect(frame.payload.count <= 125)
        let (_, reason) = try WebSocketConnection.parseClosePayload(frame.payload)
        #expect(reason == String(repeating: "é", count: 61))
    }

    @Test("client frames are masked with fresh keys; server frames are not masked")
    func maskingDirection() {
        var client = WebSocketConnection(role: .client)
        client.send(.text("a"))
        client.send(.text("a"))
        let bytes = client.takeOutput()
        #expect(bytes[1] & 0x80 != 0)
        #expect(Array(bytes[2..<6]) != Array(bytes[9..<13]), "two frames reused a masking key")
        var server = WebSocketConnection(role: .server)
        server.send(.binary([1, 2, 3]))
        #expect(server.takeOutput() == [0x82, 0x03, 1, 2, 3])
    }

    @Test("outgoing fragmentation round-trips through a peer")
    func outgoingFragments() {
        var client = WebSocketConnection(role: .client, configuration: .init(outgoingFragmentSize: 7))
        let text = String(repeating: "fragmented κόσμε ", count: 20)
        client.send(.text(text))
        var server = WebSocketConnection(role: .server)
        server.receive(client.takeOutput())
        #expect(server.nextEvent() == .message(.text(text)))
    }
}

@Suite("permessage-deflate (RFC 7692)", .timeLimit(.minutes(1)))
struct DeflateTests {
    @Test("§7.2.3.1: \"Hello\" compresses to f2 48 cd c9 c9 07 00 and decodes back")
    func rfcExample() {
        let deflater = MessageDeflater(windowBits: 15, isContextReset: false)
        let compressed = Array("Hello".utf8).withUnsafeBytes { deflater.compress($0) }
        #expect(compressed == [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
        var client = WebSocketConnection(role: .client, configuration: .init(compression: PerMessageDeflateParameters()))
        client.receive([0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
        #expect(client.nextEvent() == .message(.text("Hello")))
        // §7.2.3.2: the same message again with context takeover uses a back-reference.
        client.receive([0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00, 0x00])
        #expect(client.nextEvent() == .message(.text("Hello")))
    }

    @Test("round trips both ways, with and without context takeover, fragmented and not", arguments: [
        PerMessageDeflateParameters(),
        PerMessageDeflateParameters(serverNoContextTakeover: true, clientNoContextTakeover: true),
        PerMessageDeflateParameters(serverMaxWindowBits: 9, clientMaxWindowBits: 10),
    ])
    func roundTrips(parameters: PerMessageDeflateParameters) {
        for fragmentSize in [nil, 5] as [Int?] {
            var client = WebSocketConnection(role: .client, configuration: .init(compression: parameters, outgoingFragmentSize: fragmentSize))
            var server = WebSocketConnection(role: .server, configuration: .init(compression: parameters, outgoingFragmentSize: fragmentSize))
            var generator = SystemRandomNumberGenerator()
            let messages: [WebSocketConnection.Message] = [
                .text(""), .text(String(repeating: "compressible text ", count: 500)),
                .binary((0..<10_000).map { _ in UInt8.random(in: 0...255, using: &generator) }), .text("ünïcödé"), .binary([]),
            ]
            for message in messages {
                client.send(message)
                server.receive(client.takeOutput())
                #expect(server.nextEvent() == .message(message))
                server.send(message)
                client.receive(server.takeOutput())
                #expect(client.nextEvent() == .message(message))
            }
        }
    }

    @Test("§7.2.3.6: an empty message is one 0x00 byte, also after context takeover, and later messages still inflate")
    func emptyMessageAfterTakeover() throws {
        // Fuzz/Corpus/PerMessageDeflate/empty-message-after-takeover: zlib emits nothing for a second sync flush
        // with no input, so the empty payload + 00 00 FF FF left the inflater inside a stored block.
        let deflater = MessageDeflater(windowBits: 15, isContextReset: false)
        let inflater = MessageInflater(isContextReset: false, maximumMessageSize: 1 << 20)
        var payloads: [[UInt8]] = []
        for message in ["Hello", "", "", "Hello"] {
            let compressed = Array(message.utf8).withUnsafeBytes { deflater.compress($0) }
            payloads.append(compressed)
            var restored: [UInt8] = []
            try inflater.inflate(compressed, isFinal: true, into: &restored)
            #expect(restored == Array(message.utf8), "\(message.debugDescription) from \(compressed)")
        }
        #expect(payloads[1] == [0x00] && payloads[2] == [0x00])
        #expect(payloads[3] == [0xf2, 0x00, 0x11, 0x00, 0x00])
        // A peer that sends an empty payload (what zlib gives) leaves the stream where it was.
        let peer = MessageInflater(isContextReset: false, maximumMessageSize: 1 << 20)
        for (payload, message) in [([0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], "Hello"), ([], ""), ([0xf2, 0x00, 0x11, 0x00, 0x00], "Hello")]
            as [([UInt8], String)] {
            var restored: [UInt8] = []
            try peer.inflate(payload, isFinal: true, into: &restored)
            #expect(restored == Array(message.utf8), "\(payload)")
        }
    }

    @Test("a decompression bomb fails with 1009: the size cap and the ratio cap")
    func bombCap() throws {
        let zeros = [UInt8](repeating: 0, count: 20 << 20)
        let deflater = MessageDeflater(windowBits: 15, isContextReset: true)
        let bomb = zeros.withUnsafeBytes { deflater.compress($0) }
        #expect(bomb.count < 64 * 1024)
        let frame = serverBytes(WebSocketFrame(rsv1: true, opcode: .binary, payload: bomb))
        var (events, _) = clientEvents(frame, configuration: .init(compression: PerMessageDeflateParameters(), maximumCompressionRatio: 100_000))
        guard case .failed(let sizeError)? = events.last else { Issue.record("no failure: \(events.count) events"); return }
        #expect(sizeError.closeCode == .messageTooBig)
        #expect(sizeError.reason.contains("exceeds"))

        let smaller = [UInt8](repeating: 0, count: 4 << 20).withUnsafeBytes { deflater.compress($0) }
        (events, _) = clientEvents(serverBytes(WebSocketFrame(rsv1: true, opcode: .binary, payload: smaller)),
                                   configuration: .init(compression: PerMessageDeflateParameters()))
        guard case .failed(let ratioError)? = events.last else { Issue.record("no ratio failure"); return }
        #expect(ratioError.closeCode == .messageTooBig)
        #expect(ratioError.reason.contains("ratio"))
    }

    @Test("corrupt compressed data fails with 1007")
    func corrupt() {
        let (events, _) = clientEvents(serverBytes(WebSocketFrame(rsv1: true, opcode: .binary, payload: [0xFF, 0xFF, 0xFF, 0xFF])),
                                       configuration: .init(compression: PerMessageDeflateParameters()))
        guard case .failed(let error)? = events.last else { Issue.record("no failure: \(events)"); return }
        #expect(error.closeCode == .invalidFramePayloadData)
    }
}

@Suite("Limits with compression", .timeLimit(.minutes(1)))
struct CompressedLimitTests {
    @Test("an incompressible message at the size limit passes even though its compressed frame is larger")
    func incompressibleAtLimit() {
        let limit = 1 << 20
        let parameters = PerMessageDeflateParameters()
        let configuration = WebSocketConnection.Configuration(maximumFrameSize: limit, maximumMessageSize: limit, compression: parameters)
        var server = WebSocketConnection(role: .server, configuration: configuration)
        var client = WebSocketConnection(role: .client, configuration: configuration)
        let payload = Crypto.randomBytes(limit)
        server.send(.binary(payload))
        let wire = server.takeOutput()
        #expect(wire.count > limit)
        client.receive(wire)
        #expect(client.nextEvent() == .message(.binary(payload)))
    }
}

import Testing
@testable import WebSocket

/// Parses `stream` fed in pieces of the given sizes (cycling), returning frames; all bytes must be used.
func parseFrames(_ stream: [UInt8], role: WebSocketFrameParser.Role, chunkSizes: [Int]) throws -> [WebSocketFrame] {
    var parser = WebSocketFrameParser(role: role)
    var frames: [WebSocketFrame] = []
    var offset = 0
    var chunkIndex = 0
    while offset < stream.count {
        let size = max(1, chunkSizes[chunkIndex % chunkSizes.count])
        chunkIndex += 1
        parser.append(stream[offset..<min(stream.count, offset + size)])
        offset += size
        while let frame = try parser.nextFrame() { frames.append(frame) }
    }
    #expect(parser.bufferedByteCount == 0, "leftover bytes after the last frame")
    return frames
}

/// Runs `body` expecting a protocol error (a helper: `#expect(throws:)` cannot mutate captured state).
func expectProtocolError<T>(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T
) -> WebSocketProtocolError? {
    do {
        let value = try body()
        Issue.record("expected a protocol error, got \(value)", sourceLocation: sourceLocation)
    } catch let error as WebSocketProtocolError {
        return error
    } catch {
        Issue.record("expected a protocol error, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The verifier of swift-nio's ByteToMessageDecoderVerifier: all at once, byte by byte, random chunks.
func verifyDecoding(_ stream: [UInt8], role: WebSocketFrameParser.Role, expected: [WebSocketFrame]) throws {
    var generator = SystemRandomNumberGenerator()
    let randomChunks = (0..<64).map { _ in Int.random(in: 1...17, using: &generator) }
    for chunks in [[stream.count], [1], randomChunks] {
        #expect(try parseFrames(stream, role: role, chunkSizes: chunks) == expected, "chunks \(chunks.prefix(8))")
    }
}

@Suite("Frame codec (RFC 6455 §5)", .timeLimit(.minutes(1)))
struct FrameCodecTests {
    let hello = Array("Hello".utf8)

    @Test("§5.7 examples, byte-exact in both directions")
    func rfcExamples() throws {
        let key: UInt32 = 0x37FA_213D
        let unmaskedText: [UInt8] = [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]
        let maskedText: [UInt8] = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        let fragmented: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f]
        let unmaskedPing: [UInt8] = [0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]
        let maskedPong: [UInt8] = [0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]

        #expect(WebSocketFrame(opcode: .text, payload: hello).encoded(maskingKey: nil) == unmaskedText)
        #expect(WebSocketFrame(opcode: .text, payload: hello).encoded(maskingKey: key) == maskedText)
        #expect(WebSocketFrame(isFinal: false, opcode: .text, payload: Array("Hel".utf8)).encoded(maskingKey: nil)
            + WebSocketFrame(opcode: .continuation, payload: Array("lo".utf8)).encoded(maskingKey: nil) == fragmented)
        #expect(WebSocketFrame(opcode: .ping, payload: hello).encoded(maskingKey: nil) == unmaskedPing)
        #expect(WebSocketFrame(opcode: .pong, payload: hello).encoded(maskingKey: key) == maskedPong)

        let bytes256 = [UInt8](repeating: 0xAB, count: 256)
        #expect(Array(WebSocketFrame(opcode: .binary, payload: bytes256).encoded(maskingKey: nil).prefix(4)) == [0x82, 0x7E, 0x01, 0x00])
        let bytes64k = [UInt8](repeating: 0xCD, count: 65536)
        #expect(Array(WebSocketFrame(opcode: .binary, payload: bytes64k).encoded(maskingKey: nil).prefix(10))
            == [0x82, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00])

        try verifyDecoding(unmaskedText, role: .client, expected: [WebSocketFrame(opcode: .text, payload: hello)])
        try verifyDecoding(maskedText, role: .server, expected: [WebSocketFrame(opcode: .text, payload: hello)])
        try verifyDecoding(fragmented, role: .client, expected: [
            WebSocketFrame(isFinal: false, opcode: .text, payload: Array("Hel".utf8)),
            WebSocketFrame(opcode: .continuation, payload: Array("lo".utf8)),
        ])
        try verifyDecoding(unmaskedPing, role: .client, expected: [WebSocketFrame(opcode: .ping, payload: hello)])
        try verifyDecoding(maskedPong, role: .server, expected: [WebSocketFrame(opcode: .pong, payload: hello)])
    }

    @Test("round trips at every length-encoding boundary, masked and unmasked, decoded in any chunking")
    func lengthBoundaries() throws {
        var generator = SystemRandomNumberGenerator()
        let lengths = [0, 1, 2, 7, 8, 9, 124, 125, 126, 127, 128, 65534, 65535, 65536, 65537, 1 << 20]
        var clientStream: [UInt8] = []
        var serverStream: [UInt8] = []
        var frames: [WebSocketFrame] = []
        for length in lengths {
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let frame = WebSocketFrame(opcode: .binary, payload: payload)
            frames.append(frame)
            frame.encode(maskingKey: UInt32.random(in: .min ... .max, using: &generator), into: &serverStream)
            frame.encode(maskingKey: nil, into: &clientStream)
        }
        try verifyDecoding(clientStream, role: .client, expected: frames)
        try verifyDecoding(serverStream, role: .server, expected: frames)
    }

    @Test("masking is its own inverse and matches a byte-wise XOR at every alignment")
    func masking() {
        let key: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        for count in 0..<40 {
            let original = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37) }
            var masked = original
            masked.withUnsafeMutableBufferPointer { WebSocketFrame.applyMask(key: key, to: $0) }
            #expect(masked == original.enumerated().map { $0.element ^ key[$0.offset % 4] })
            masked.withUnsafeMutableBufferPointer { WebSocketFrame.applyMask(key: key, to: $0) }
            #expect(masked == original)
        }
    }

    @Test("header violations fail with their close code before the payload is buffered", arguments: [
        ([0x83, 0x00], WebSocketFrameParser.Role.client, 1002, "reserved opcode"),
        ([0x8B, 0x00], .client, 1002, "reserved opcode"),
        ([0xC1, 0x00], .client, 1002, "RSV1"),
        ([0xA1, 0x00], .client, 1002, "RSV2"),
        ([0x91, 0x00], .client, 1002, "RSV2/RSV3"),
        ([0x09, 0x00], .client, 1002, "fragmented ping"),
        ([0x89, 0x7E, 0x00, 0x7E], .client, 1002, "longer than 125"),
        ([0x81, 0x85, 1, 2, 3, 4, 0], .client, 1002, "masked frame from the server"),
        ([0x81, 0x05, 0x48], .server, 1002, "unmasked frame from the client"),
        ([0x82, 0x7E, 0x00, 0x05], .client, 1002, "not minimal"),
        ([0x82, 0x7F, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF], .client, 1002, "not minimal"),
        ([0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0], .client, 1002, "most significant bit"),
        ([0x82, 0x7F, 0, 0, 0, 0, 0x10, 0, 0, 0], .client, 1009, "exceeds"),
    ] as [([UInt8], WebSocketFrameParser.Role, UInt16, String)])
    func headerViolations(bytes: [UInt8], role: WebSocketFrameParser.Role, code: UInt16, reason: String) throws {
        var parser = WebSocketFrameParser(role: role, maximumFrameSize: 1 << 20)
        // A valid empty pong first (masked from a client), so the error's offset is not zero.
        parser.append(role == .server ? [0x8A, 0x80, 0, 0, 0, 0] : [0x8A, 0x00])
        #expect(try parser.nextFrame()?.opcode == .pong)
        let offset = parser.streamOffset
        #expect(offset > 0)
        parser.append(bytes)
        let error = expectProtocolError { try parser.nextFrame() }
        #expect(error?.closeCode.rawValue == code)
        #expect(error?.reason.contains(reason) == true, "\(error?.reason ?? "")")
        #expect(error?.offset == offset)
    }
}

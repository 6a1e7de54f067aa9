import Crypto

/// The protocol state of one WebSocket connection after the handshake (RFC 6455 §5–7, RFC 7692):
/// bytes in, events and bytes out. No sockets, no clocks.
///
/// Feed received bytes with ``receive(_:)`` and drain ``nextEvent()``; anything the protocol must
/// send (pong replies, the close reply, the close that reports a failure) is queued with what the
/// caller sends, and taken in order with ``takeOutput()``. After a `.failed` or a completed closing
/// handshake the connection is closed and the caller closes the transport.
public struct WebSocketConnection: Sendable {
    /// Which side of the connection this is (clients mask, servers do not).
    public typealias Role = WebSocketFrameParser.Role

    /// Limits and negotiated options.
    public struct Configuration: Sendable, Hashable {
        /// Largest frame payload accepted (1009 beyond it, checked before buffering).
        public var maximumFrameSize: Int
        /// Largest reassembled (and inflated) message (1009 beyond it).
        public var maximumMessageSize: Int
        /// Most fragments one message may arrive in (1009 beyond it).
        public var maximumFragmentCount: Int
        /// permessage-deflate parameters agreed in the handshake, if any.
        public var compression: PerMessageDeflateParameters?
        /// Inflated-to-compressed ratio allowed per message once past 1 MiB.
        public var maximumCompressionRatio: Int
        /// Split outgoing messages into frames of at most this many payload bytes; nil sends one frame.
        public var outgoingFragmentSize: Int?

        public init(
            maximumFrameSize: Int = 16 * 1024 * 1024, maximumMessageSize: Int = 16 * 1024 * 1024,
            maximumFragmentCount: Int = 65536, compression: PerMessageDeflateParameters? = nil,
            maximumCompressionRatio: Int = 100, outgoingFragmentSize: Int? = nil
        ) {
            self.maximumFrameSize = maximumFrameSize
            self.maximumMessageSize = maximumMessageSize
            self.maximumFragmentCount = maximumFragmentCount
            self.compression = compression
            self.maximumCompressionRatio = maximumCompressionRatio
            self.outgoingFragmentSize = outgoingFragmentSize
        }
    }

    /// A complete data message.
    public enum Message: Sendable, Hashable {
        case text(String)
        case binary([UInt8])
    }

    /// What the peer did.
    public enum Event: Sendable, Hashable {
        case message(Message)
        /// A ping arrived; its pong is already queued.
        case ping([UInt8])
        case pong([UInt8])
        /// The peer's close frame: `code` is nil when it carried none (report 1005). If we had not sent a
        /// close, the reply is queued; either way the closing handshake is complete.
        case closeReceived(code: WebSocketCloseCode?, reason: String)
        /// The peer broke the protocol; a close frame with the error's code is queued (unless we had
        /// already sent one). Close the transport after sending it.
        case failed(WebSocketProtocolError)
    }

    /// Where the connection is in its life: open, closing (either side first), or closed.
    public enum State: Sendable, Hashable {
        case open
        /// We sent a close frame and wait for the peer's.
        case closeSent
        /// The closing handshake completed or the connection failed.
        case closed
    }

    public let role: Role
    public let configuration: Configuration
    public private(set) var state: State = .open
    /// The close code we sent, if we sent a close frame.
    public private(set) var sentCloseCode: WebSocketCloseCode?

    private var parser: WebSocketFrameParser
    private var output: [UInt8] = []
    private var assembly: Assembly?
    private var random: any RandomNumberGenerator & Sendable
    // Reference types inside a struct: the connection is owned by one actor, never shared.
    nonisolated(unsafe) private var deflater: MessageDeflater?
    nonisolated(unsafe) private var inflater: MessageInflater?

    /// How far the UTF-8 check has read into a text frame still arriving (fail fast inside a frame).
    private var partialText: PartialText?

    private struct PartialText: Sendable {
        /// The stream offset of the frame's header: which frame this is.
        var frameOffset: Int
        /// Payload bytes already validated.
        var checked: Int
        var validator: UTF8Validator
    }

    private struct Assembly: Sendable {
        var opcode: WebSocketOpcode
        var isCompressed: Bool
        var bytes: [UInt8]
        var fragmentCount: Int
        var validator: UTF8Validator
    }

    /// - Parameter random: the masking-key source for clients; a CSPRNG unless a test injects one.
    public init(
        role: Role, configuration: Configuration = Configuration(),
        random: any RandomNumberGenerator & Sendable = SecureRandomNumberGenerator()
    ) {
        self.role = role
        self.configuration = configuration
        self.random = random
        // A compressed frame of incompressible data is larger than its message: deflate adds 5 bytes per
        // stored block, and peers with a small memLevel use blocks of 128 B (memLevel 1: ~4%) to 2 KiB
        // (Python websockets' memLevel 5: 0.24%). Allow 1/16 on top of the frame limit.
        let frameLimit = configuration.compression == nil
            ? configuration.maximumFrameSize
            : configuration.maximumFrameSize + configuration.maximumFrameSize / 16 + 1024
        parser = WebSocketFrameParser(role: role, maximumFrameSize: frameLimit, isRSV1Allowed: configuration.compression != nil)
        if let compression = configuration.compression {
            let isClient = role == .client
            deflater = MessageDeflater(
                windowBits: isClient ? compression.clientMaxWindowBits : compression.serverMaxWindowBits,
                isContextReset: isClient ? compression.clientNoContextTakeover : compression.serverNoContextTakeover)
            inflater = MessageInflater(
                isContextReset: isClient ? compression.serverNoContextTakeover : compression.clientNoContextTakeover,
                maximumMessageSize: configuration.maximumMessageSize, maximumRatio: configuration.maximumCompressionRatio)
        }
    }

    /// A connection that is already closed: a cheap stand-in for owners that create the real one later.
    public static var closedPlaceholder: WebSocketConnection {
        var connection = WebSocketConnection(role: .client, random: SystemRandomNumberGenerator())
        connection.state = .closed
        return connection
    }

    // MARK: Inbound

    /// Appends received bytes; then drain ``nextEvent()``.
    public mutating func receive(_ bytes: some Sequence<UInt8>) {
        guard state != .closed else { return }
        parser.append(bytes)
    }

    /// Appends received bytes by letting `body` write straight into the parser's buffer.
    public mutating func receive(using body: (inout [UInt8]) throws -> Void) rethrows {
        try parser.append(using: body)
    }

    /// Lends the receive buffer to an async read that appends to it in place (``WebSocketFrameParser/lendBuffer()``);
    /// ``returnReceiveBuffer(_:)`` gives it back before the next ``nextEvent()``.
    public mutating func lendReceiveBuffer() -> [UInt8] { parser.lendBuffer() }

    /// Takes back the lent receive buffer with the bytes read appended (ignored, like ``receive(_:)``, once closed:
    /// the parser keeps it, but nothing is parsed after the close).
    public mutating func returnReceiveBuffer(_ buffer: [UInt8]) { parser.returnBuffer(buffer) }

    /// The next event from the bytes received so far, or nil when more bytes are needed.
    public mutating func nextEvent() -> Event? {
        while state != .closed {
            let offset = parser.streamOffset
            let frame: WebSocketFrame
            do {
                guard let header = try parser.nextHeader() else { return checkPartialText() }
                if let text = wholeText(header, offset: offset) { return .message(.text(text)) }
                frame = parser.take(header)
            } catch {
                return fail(error)
            }
            do {
                if let event = try handle(frame, offset: offset) { return event }
            } catch {
                return fail(error)
            }
        }
        return nil
    }

    /// A frame that is a whole text message — final, uncompressed, unmasked, with no message open — valid UTF-8 and
    /// within the size limit: its String made straight from the parser's buffer (one allocation, not a payload array
    /// and then the String). Nil, the frame left in the buffer, for anything else: ``handle(_:offset:)`` takes it as
    /// any frame, with its errors.
    private mutating func wholeText(_ header: WebSocketFrameParser.Header, offset: Int) -> String? {
        guard header.opcode == .text, header.isFinal, !header.rsv1, !header.isMasked, assembly == nil,
              header.length <= configuration.maximumMessageSize, configuration.maximumFragmentCount >= 1
        else { return nil }
        let partial = partialCheck(ofFrameAt: offset)
        let text = parser.takeInPlace(header) { payload -> String? in
            var validator = partial?.validator ?? UTF8Validator()
            let checked = min(partial?.checked ?? 0, payload.count)
            guard validator.firstInvalidIndex(in: UnsafeBufferPointer(rebasing: payload[checked...])) == nil,
                  validator.isComplete else { return nil }
            return String(decoding: payload, as: UTF8.self)
        }
        if text != nil { partialText = nil }
        return text
    }

    private mutating func handle(_ frame: WebSocketFrame, offset: Int) throws(WebSocketProtocolError) -> Event? {
        switch frame.opcode {
        case .ping:
            if state == .open { appendFrame(opcode: .pong, payload: frame.payload) }
            return .ping(frame.payload)
        case .pong:
            return .pong(frame.payload)
        case .close:
            let (code, reason) = try Self.parseClosePayload(frame.payload, offset: offset)
            if state == .open {
                // Echo the peer's code (§5.5.1); an empty close is answered with an empty close.
                appendClose(code: code, reason: "")
            }
            state = .closed
            assembly = nil
            return .closeReceived(code: code, reason: reason)
        case .text, .binary:
            guard assembly == nil else {
                throw WebSocketProtocolError(.protocolError, "new \(frame.opcode) message while a fragmented one is open",
                                             offset: offset)
            }
            assembly = Assembly(opcode: frame.opcode, isCompressed: frame.rsv1, bytes: [], fragmentCount: 0,
                                validator: UTF8Validator())
            return try appendFragment(frame, offset: offset)
        default:  // .continuation; reserved opcodes were rejected by the parser.
            guard assembly != nil else {
                throw WebSocketProtocolError(.protocolError, "continuation frame without a message to continue", offset: offset)
            }
            return try appendFragment(frame, offset: offset)
        }
    }

    private mutating func appendFragment(_ frame: WebSocketFrame, offset: Int) throws(WebSocketProtocolError) -> Event? {
        guard var message = assembly else { return nil }
        assembly = nil  // Avoid a copy of the growing buffer while we mutate it.
        message.fragmentCount += 1
        if message.fragmentCount > configuration.maximumFragmentCount {
            throw WebSocketProtocolError(.messageTooBig, "message exceeds \(configuration.maximumFragmentCount) fragments", offset: offset)
        }
        let start = message.bytes.count
        if message.isCompressed, let inflater {
            do {
                try inflater.inflate(frame.payload, isFinal: frame.isFinal, into: &message.bytes)
            } catch let error as MessageInflater.LimitExceeded {
                throw WebSocketProtocolError(.messageTooBig, error.description, offset: offset)
            } catch {
                throw WebSocketProtocolError(.invalidFramePayloadData, "permessage-deflate: \(error)", offset: offset)
            }
        } else {
            if start + frame.payload.count > configuration.maximumMessageSize {
                throw WebSocketProtocolError(.messageTooBig, "message exceeds \(configuration.maximumMessageSize) bytes", offset: offset)
            }
            if start == 0 && frame.isFinal {
                message.bytes = frame.payload
            } else {
                message.bytes.append(contentsOf: frame.payload)
            }
        }
        if message.opcode == .text {
            var validateFrom = start
            if !message.isCompressed, let partial = partialCheck(ofFrameAt: offset) {
                message.validator = partial.validator
                validateFrom = start + partial.checked
            }
            partialText = nil
            let invalid = message.bytes.withUnsafeBufferPointer { bytes in
                message.validator.firstInvalidIndex(in: UnsafeBufferPointer(rebasing: bytes[validateFrom...]))
            }
            if invalid != nil || (frame.isFinal && !message.validator.isComplete) {
                throw WebSocketProtocolError(.invalidFramePayloadData, "text message is not valid UTF-8", offset: offset)
            }
        }
        guard frame.isFinal else {
            assembly = message
            return nil
        }
        return .message(message.opcode == .text ? .text(String(decoding: message.bytes, as: UTF8.self)) : .binary(message.bytes))
    }

    /// How far the fail-fast check read into the frame at stream offset `offset` while it arrived (its validator and
    /// the payload bytes it validated, which are not validated again), if it did.
    private func partialCheck(ofFrameAt offset: Int) -> PartialText? {
        partialText.flatMap { $0.frameOffset == offset ? $0 : nil }
    }

    /// Fail fast (RFC 6455 §8.1): the payload of an uncompressed text frame still arriving is validated as its
    /// bytes come, so invalid UTF-8 fails the connection (1007, at the byte's stream offset) without waiting for
    /// the rest of the frame. Returns nil unless it failed.
    private mutating func checkPartialText() -> Event? {
        let previous = partialText
        let message = assembly.map { (isText: $0.opcode == .text && !$0.isCompressed, validator: $0.validator) }
        let outcome: (check: PartialText, invalidAt: Int?)?? = parser.withPartialFrame { frame, bytes in
            var check: PartialText
            if let previous, previous.frameOffset == frame.frameOffset {
                check = previous
            } else if frame.opcode == .text && !frame.rsv1 && message == nil {
                check = PartialText(frameOffset: frame.frameOffset, checked: 0, validator: UTF8Validator())
            } else if frame.opcode == .continuation, let message, message.isText {
                check = PartialText(frameOffset: frame.frameOffset, checked: 0, validator: message.validator)
            } else {
                return nil
            }
            guard bytes.count > check.checked else { return (check, nil) }
            let fresh = UnsafeBufferPointer(rebasing: bytes[check.checked...])
            let invalid: Int?
            if let key = frame.maskingKey {
                invalid = Self.firstInvalidMasked(fresh, key: key, phase: check.checked, validator: &check.validator)
            } else {
                invalid = check.validator.firstInvalidIndex(in: fresh)
            }
            let at = invalid.map { frame.payloadOffset + check.checked + $0 }
            check.checked = bytes.count
            return (check, at)
        }
        guard let outcome = outcome ?? nil else { return nil }
        partialText = outcome.check
        guard let at = outcome.invalidAt else { return nil }
        return fail(WebSocketProtocolError(.invalidFramePayloadData, "text message is not valid UTF-8", offset: at))
    }

    /// Validates masked bytes without copying them to the heap: unmasked a stack chunk at a time (the
    /// validator carries a code point across chunks). Returns the first invalid byte's index in `bytes`.
    private static func firstInvalidMasked(
        _ bytes: UnsafeBufferPointer<UInt8>, key: UInt32, phase: Int, validator: inout UTF8Validator
    ) -> Int? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 512) { chunk in
            var start = 0
            while start < bytes.count {
                let count = Swift.min(chunk.count, bytes.count - start)
                let piece = UnsafeMutableBufferPointer(rebasing: chunk[..<count])
                _ = piece.initialize(from: UnsafeBufferPointer(rebasing: bytes[start..<(start + count)]))
                WebSocketFrame.applyMask(key: key, phase: phase + start, to: piece)
                if let invalid = validator.firstInvalidIndex(in: UnsafeBufferPointer(piece)) { return start + invalid }
                start += count
            }
            return nil
        }
    }

    private mutating func fail(_ error: WebSocketProtocolError) -> Event {
        if state == .open { appendClose(code: error.closeCode, reason: "") }
        state = .closed
        assembly = nil
        partialText = nil
        return .failed(error)
    }

    /// Parses a close frame's payload (§5.5.1, §7.4): empty, or a valid code plus a UTF-8 reason.
    public static func parseClosePayload(
        _ payload: [UInt8], offset: Int = 0
    ) throws(WebSocketProtocolError) -> (code: WebSocketCloseCode?, reason: String) {
        if payload.isEmpty { return (nil, "") }
        guard payload.count >= 2 else {
            throw WebSocketProtocolError(.protocolError, "close frame with a 1-byte payload", offset: offset)
        }
        let code = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isValidOnWire else {
            throw WebSocketProtocolError(.protocolError, "close code \(code.rawValue) is not allowed on the wire", offset: offset)
        }
        let reason = Array(payload[2...])
        var validator = UTF8Validator()
        guard validator.validate(reason), validator.isComplete else {
            throw WebSocketProtocolError(.invalidFramePayloadData, "close reason is not valid UTF-8", offset: offset)
        }
        return (code, String(decoding: reason, as: UTF8.self))
    }

    // MARK: Outbound

    /// Takes the bytes queued for the peer, in order.
    public mutating func takeOutput() -> [UInt8] {
        defer { output = [] }
        return output
    }

    /// Hands back a buffer ``takeOutput()`` returned, once written: the next frames are encoded into its capacity
    /// instead of a new allocation per message. Only small buffers are kept (at most ``recycledOutputCapacity``
    /// bytes), so an idle connection holds no more than that.
    public mutating func recycleOutput(_ buffer: consuming [UInt8]) {
        guard output.isEmpty, buffer.capacity <= Self.recycledOutputCapacity else { return }
        buffer.removeAll(keepingCapacity: true)
        output = buffer
    }

    /// Puts back, unwritten, a buffer ``takeOutput()`` returned, ahead of anything queued since: the transport would
    /// not take it without waiting, and the next ``takeOutput()`` returns it (WebSocketChannel's `flushIfReady`).
    public mutating func restoreOutput(_ buffer: [UInt8]) {
        output = output.isEmpty ? buffer : buffer + output
    }

    /// The largest written buffer ``recycleOutput(_:)`` keeps.
    public static let recycledOutputCapacity = 1024

    /// Whether bytes are waiting in ``takeOutput()``.
    public var hasOutput: Bool { !output.isEmpty }

    /// Queues a data message (compressed and fragmented as configured). Ignored once a close was sent.
    public mutating func send(_ message: Message) {
        switch message {
        case .text(let text):
            var text = text
            text.withUTF8 { send(opcode: .text, payload: UnsafeRawBufferPointer($0)) }
        case .binary(let bytes):
            bytes.withUnsafeBytes { send(opcode: .binary, payload: $0) }
        }
    }

    /// Queues a data message from raw bytes.
    public mutating func send(opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer) {
        precondition(opcode == .text || opcode == .binary, "send(opcode:) takes text or binary")
        guard state == .open else { return }
        if let deflater {
            let compressed = deflater.compress(payload)
            compressed.withUnsafeBytes { appendFragmented(opcode: opcode, payload: $0, isCompressed: true) }
        } else {
            appendFragmented(opcode: opcode, payload: payload, isCompressed: false)
        }
    }

    private mutating func appendFragmented(opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer, isCompressed: Bool) {
        let size = configuration.outgoingFragmentSize.map { max(1, $0) } ?? max(1, payload.count)
        var start = 0
        repeat {
            let end = min(payload.count, start + size)
            let isFirst = start == 0
            WebSocketFrame.encode(isFinal: end == payload.count, rsv1: isCompressed && isFirst,
                                  opcode: isFirst ? opcode : .continuation,
                                  payload: UnsafeRawBufferPointer(rebasing: payload[start..<end]), maskingKey: nextMaskingKey(),
                                  into: &output)
            start = end
        } while start < payload.count
    }

    /// Queues a ping (payload at most 125 bytes, §5.5).
    public mutating func sendPing(_ payload: [UInt8] = []) {
        precondition(payload.count <= 125, "ping payloads are at most 125 bytes")
        guard state == .open else { return }
        appendFrame(opcode: .ping, payload: payload)
    }

    /// Queues an unsolicited pong (a heartbeat that expects no answer, §5.5.3).
    public mutating func sendPong(_ payload: [UInt8] = []) {
        precondition(payload.count <= 125, "pong payloads are at most 125 bytes")
        guard state == .open else { return }
        appendFrame(opcode: .pong, payload: payload)
    }

    /// Starts the closing handshake (§7.1.2). The reason is cut to fit 123 bytes on a character boundary.
    public mutating func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") {
        guard state == .open else { return }
        appendClose(code: code, reason: reason)
        state = .closeSent
    }

    private mutating func appendClose(code: WebSocketCloseCode?, reason: String) {
        var payload: [UInt8] = []
        if let code {
            payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
            var reasonBytes = Array(reason.utf8)
            while reasonBytes.count > 123 {
                reasonBytes.removeLast()
                // Drop continuation bytes so we never cut a code point in half.
                while let last = reasonBytes.last, last & 0xC0 == 0x80 { reasonBytes.removeLast() }
                if let last = reasonBytes.last, last >= 0xC0 { reasonBytes.removeLast() }
            }
            payload += reasonBytes
            sentCloseCode = code
        }
        appendFrame(opcode: .close, payload: payload)
    }

    private mutating func appendFrame(opcode: WebSocketOpcode, payload: [UInt8]) {
        payload.withUnsafeBytes {
            WebSocketFrame.encode(isFinal: true, opcode: opcode, payload: $0, maskingKey: nextMaskingKey(), into: &output)
        }
    }

    private mutating func nextMaskingKey() -> UInt32? {
        // `next()` truncated, not `random(in:using:)`: through the existential the generic is not specialized
        // (metadata and witness lookups per frame, 4% of the closed echo's client CPU in perf). The same key
        // either way: the full range takes the low 32 bits of one draw.
        role == .client ? UInt32(truncatingIfNeeded: random.next()) : nil
    }

    /// The peer ended the transport: a message still being assembled is lost (report 1006).
    public mutating func transportClosed() {
        state = .closed
        assembly = nil
        partialText = nil
    }
}

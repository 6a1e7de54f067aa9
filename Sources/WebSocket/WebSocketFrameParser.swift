/// Incremental frame parser (RFC 6455 §5.2): append bytes as they arrive, take frames as they complete.
///
/// Every check that can be made from a frame header is made before its payload is buffered: reserved
/// bits and opcodes, control-frame rules, masking direction, the shortest length encoding, and the
/// frame size limit. Payloads of masked frames are unmasked.
public struct WebSocketFrameParser: Sendable {
    /// Which side we are: servers expect masked frames, clients unmasked ones (§5.1).
    public enum Role: Sendable { case client, server }

    public let role: Role
    /// Frames whose payload is longer fail with 1009 before their payload is buffered.
    public var maximumFrameSize: Int
    /// RSV1 is allowed on the first frame of a data message (permessage-deflate negotiated).
    public var isRSV1Allowed: Bool

    private var buffer: [UInt8] = []
    /// The most capacity reserved ahead of the bytes received for a frame still arriving.
    static let reserveStep = 256 * 1024
    private var readIndex = 0
    /// Bytes consumed before `buffer[0]`, for error offsets.
    private var consumedBefore = 0

    public init(role: Role, maximumFrameSize: Int = 16 * 1024 * 1024, isRSV1Allowed: Bool = false) {
        self.role = role
        self.maximumFrameSize = maximumFrameSize
        self.isRSV1Allowed = isRSV1Allowed
    }

    /// Bytes received but not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// The stream offset of the next unparsed byte.
    public var streamOffset: Int { consumedBefore + readIndex }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        compactIfWorthwhile()
        buffer.append(contentsOf: bytes)
    }

    /// Appends up to `maxBytes` read by `body` directly into the parser's buffer (no intermediate copy).
    public mutating func append(using body: (inout [UInt8]) throws -> Void) rethrows {
        compactIfWorthwhile()
        try body(&buffer)
    }

    /// Lends the parser's buffer (compacted; the bytes not yet parsed at its front) so an async read can append
    /// to it in place: no copy through a buffer of the reader's own. Give it back with ``returnBuffer(_:)``
    /// before the next ``nextFrame()``; meanwhile the parser holds nothing.
    public mutating func lendBuffer() -> [UInt8] {
        compactIfWorthwhile()
        defer { buffer = [] }
        return buffer
    }

    /// Takes back what ``lendBuffer()`` lent, with the bytes read appended.
    public mutating func returnBuffer(_ lent: [UInt8]) {
        precondition(lent.count >= readIndex, "a lent parser buffer came back shorter than it went")
        buffer = lent
    }

    private mutating func compactIfWorthwhile() {
        if readIndex > 0 && (readIndex == buffer.count || readIndex >= 64 * 1024 && readIndex * 2 >= buffer.count) {
            consumedBefore += readIndex
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
            if buffer.isEmpty && buffer.capacity > 64 * 1024 { buffer = [] }
        }
    }

    /// Returns the next complete frame, `nil` if more bytes are needed.
    /// - Throws: ``WebSocketProtocolError`` (1002 for framing violations, 1009 for oversize frames).
    public mutating func nextFrame() throws(WebSocketProtocolError) -> WebSocketFrame? {
        guard let header = try nextHeader() else { return nil }
        return take(header)
    }

    /// A complete frame's header, checked as ``nextFrame()`` checks it, with where its payload lies in the buffer.
    struct Header {
        var isFinal: Bool
        var rsv1: Bool
        var opcode: WebSocketOpcode
        var isMasked: Bool
        var payloadStart: Int
        var length: Int
    }

    /// The next frame's header once the whole frame has arrived (nil before: the buffer is grown towards it); nothing
    /// is consumed until ``take(_:)`` or ``takeInPlace(_:_:)``.
    mutating func nextHeader() throws(WebSocketProtocolError) -> Header? {
        let available = buffer.count - readIndex
        guard available >= 2 else { return nil }
        let offset = streamOffset
        let first = buffer[readIndex]
        let second = buffer[readIndex + 1]
        let isFinal = first & 0x80 != 0
        let rsv1 = first & 0x40 != 0
        let rsv2 = first & 0x20 != 0
        let rsv3 = first & 0x10 != 0
        let opcode = WebSocketOpcode(rawValue: first & 0x0F)!
        let isMasked = second & 0x80 != 0
        let shortLength = Int(second & 0x7F)

        if opcode.isReserved {
            throw WebSocketProtocolError(.protocolError, "reserved opcode 0x\(String(opcode.rawValue, radix: 16))", offset: offset)
        }
        if rsv2 || rsv3 {
            throw WebSocketProtocolError(.protocolError, "RSV2/RSV3 set without a negotiated extension", offset: offset)
        }
        if rsv1 && (!isRSV1Allowed || opcode.isControl || opcode == .continuation) {
            throw WebSocketProtocolError(
                .protocolError,
                isRSV1Allowed ? "RSV1 set on a \(opcode) frame" : "RSV1 set without a negotiated extension", offset: offset)
        }
        if opcode.isControl {
            if !isFinal { throw WebSocketProtocolError(.protocolError, "fragmented \(opcode) frame", offset: offset) }
            if shortLength > 125 {
                throw WebSocketProtocolError(.protocolError, "\(opcode) frame longer than 125 bytes", offset: offset)
            }
        }
        switch (role, isMasked) {
        case (.client, true): throw WebSocketProtocolError(.protocolError, "masked frame from the server", offset: offset)
        case (.server, false): throw WebSocketProtocolError(.protocolError, "unmasked frame from the client", offset: offset)
        default: break
        }

        var headerLength = 2
        var length = shortLength
        if shortLength == 126 {
            guard available >= 4 else { return nil }
            length = Int(buffer[readIndex + 2]) << 8 | Int(buffer[readIndex + 3])
            headerLength = 4
            if length < 126 {
                throw WebSocketProtocolError(.protocolError, "16-bit length \(length) is not minimal", offset: offset)
            }
        } else if shortLength == 127 {
            guard available >= 10 else { return nil }
            var value: UInt64 = 0
            for index in 0..<8 { value = value << 8 | UInt64(buffer[readIndex + 2 + index]) }
            headerLength = 10
            if value >> 63 != 0 {
                throw WebSocketProtocolError(.protocolError, "64-bit length has its most significant bit set", offset: offset)
            }
            if value <= 0xFFFF {
                throw WebSocketProtocolError(.protocolError, "64-bit length \(value) is not minimal", offset: offset)
            }
            if value > UInt64(maximumFrameSize) {
                throw WebSocketProtocolError(.messageTooBig, "frame of \(value) bytes exceeds the \(maximumFrameSize)-byte limit",
                                             offset: offset)
            }
            length = Int(value)
        }
        if length > maximumFrameSize {
            throw WebSocketProtocolError(.messageTooBig, "frame of \(length) bytes exceeds the \(maximumFrameSize)-byte limit",
                                         offset: offset)
        }
        let maskLength = isMasked ? 4 : 0
        guard available >= headerLength + maskLength + length else {
            // Grow towards the declared length, never past twice what has arrived plus a bounded step: a peer
            // that declares 16 MiB and sends a byte must not make us hold 16 MiB. `reserveCapacity` allocates
            // exactly what it is asked for, so each growth at least doubles the capacity: a frame arriving in
            // 64 KiB reads then costs O(log n) reallocations, not one copy of everything so far per read.
            let wanted = readIndex + headerLength + maskLength + length
            let needed = Swift.min(wanted, buffer.count + Self.reserveStep)
            if buffer.capacity < needed {
                buffer.reserveCapacity(Swift.min(wanted, Swift.max(needed, buffer.capacity * 2)))
            }
            return nil
        }
        return Header(isFinal: isFinal, rsv1: rsv1, opcode: opcode, isMasked: isMasked,
                      payloadStart: readIndex + headerLength + maskLength, length: length)
    }

    /// Consumes the frame `header` (from ``nextHeader()``) describes, its payload copied out and unmasked.
    mutating func take(_ header: Header) -> WebSocketFrame {
        var payload = Array(buffer[header.payloadStart..<(header.payloadStart + header.length)])
        if header.isMasked {
            let key = maskingKey(at: header.payloadStart - 4)
            payload.withUnsafeMutableBufferPointer { WebSocketFrame.applyMask(key: key, to: $0) }
        }
        readIndex = header.payloadStart + header.length
        // RSV2 and RSV3 are refused by nextHeader(): a frame taken has them clear.
        return WebSocketFrame(isFinal: header.isFinal, rsv1: header.rsv1, opcode: header.opcode, payload: payload)
    }

    /// Hands the unmasked payload of the frame `header` describes to `body` where it lies, and consumes the frame if
    /// `body` returns a value; nil leaves it for ``take(_:)``. The caller makes what it keeps (a text message's
    /// String) straight from the buffer, with no payload array between.
    mutating func takeInPlace<R>(_ header: Header, _ body: (UnsafeBufferPointer<UInt8>) -> R?) -> R? {
        precondition(!header.isMasked, "a masked payload is not readable in place")
        let end = header.payloadStart + header.length
        let result = buffer.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[header.payloadStart..<end])) }
        guard let result else { return nil }
        readIndex = end
        return result
    }

    /// The frame still arriving after ``nextFrame()`` returned nil (its header complete and checked, its payload
    /// not): what has come of it so far, for checks that need not wait for the rest (UTF-8 fail-fast). Nil when
    /// no header is complete.
    public struct PartialFrame {
        public var opcode: WebSocketOpcode
        public var rsv1: Bool
        /// The stream offset of the frame's first header byte (what errors about the frame name).
        public var frameOffset: Int
        /// The stream offset of the payload's first byte.
        public var payloadOffset: Int
        /// The masking key (server role; its bytes in wire order, most significant first), or nil.
        public var maskingKey: UInt32?
    }

    /// Calls `body` with the partial frame and the payload bytes received so far (still masked if masked).
    public func withPartialFrame<R>(_ body: (PartialFrame, UnsafeBufferPointer<UInt8>) -> R) -> R? {
        let available = buffer.count - readIndex
        guard available >= 2 else { return nil }
        let first = buffer[readIndex]
        let second = buffer[readIndex + 1]
        let isMasked = second & 0x80 != 0
        var headerLength = 2
        var length = Int(second & 0x7F)
        if length == 126 {
            guard available >= 4 else { return nil }
            length = Int(buffer[readIndex + 2]) << 8 | Int(buffer[readIndex + 3])
            headerLength = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            var value: UInt64 = 0
            for index in 0..<8 { value = value << 8 | UInt64(buffer[readIndex + 2 + index]) }
            guard let exact = Int(exactly: value), exact <= maximumFrameSize else { return nil }
            length = exact
            headerLength = 10
        }
        let keyLength = isMasked ? 4 : 0
        let payloadStart = readIndex + headerLength + keyLength
        guard available > headerLength + keyLength, payloadStart + length > buffer.count,
              let opcode = WebSocketOpcode(rawValue: first & 0x0F) else { return nil }
        let frame = PartialFrame(
            opcode: opcode, rsv1: first & 0x40 != 0, frameOffset: streamOffset,
            payloadOffset: consumedBefore + payloadStart,
            maskingKey: isMasked ? maskingKey(at: payloadStart - 4) : nil)
        return buffer.withUnsafeBufferPointer { body(frame, UnsafeBufferPointer(rebasing: $0[payloadStart...])) }
    }

    /// The four key bytes at `index` as one word (wire order, most significant first): no array per frame.
    private func maskingKey(at index: Int) -> UInt32 {
        UInt32(buffer[index]) << 24 | UInt32(buffer[index + 1]) << 16 | UInt32(buffer[index + 2]) << 8 | UInt32(buffer[index + 3])
    }

    /// Capacity held by the buffer (tests check that a declared length is not reserved ahead of its bytes).
    var bufferCapacity: Int { buffer.capacity }

    /// Takes the bytes not yet parsed (e.g. after the closing handshake, for diagnostics).
    public mutating func takeRemainingBytes() -> [UInt8] {
        defer {
            consumedBefore += buffer.count
            buffer = []
            readIndex = 0
        }
        return Array(buffer[readIndex...])
    }
}

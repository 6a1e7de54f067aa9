import CZlib

/// Negotiated permessage-deflate parameters (RFC 7692 §7.1).
public struct PerMessageDeflateParameters: Hashable, Sendable, CustomStringConvertible {
    public var serverNoContextTakeover = false
    public var clientNoContextTakeover = false
    /// LZ77 window the server compresses with (8–15).
    public var serverMaxWindowBits = 15
    /// LZ77 window the client compresses with (9–15; zlib cannot produce an 8-bit window).
    public var clientMaxWindowBits = 15

    public init(
        serverNoContextTakeover: Bool = false, clientNoContextTakeover: Bool = false,
        serverMaxWindowBits: Int = 15, clientMaxWindowBits: Int = 15
    ) {
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientNoContextTakeover = clientNoContextTakeover
        self.serverMaxWindowBits = serverMaxWindowBits
        self.clientMaxWindowBits = clientMaxWindowBits
    }

    /// The extension header element for these parameters (used in offers and answers).
    public var headerValue: String {
        var parts = ["permessage-deflate"]
        if serverNoContextTakeover { parts.append("server_no_context_takeover") }
        if clientNoContextTakeover { parts.append("client_no_context_takeover") }
        if serverMaxWindowBits != 15 { parts.append("server_max_window_bits=\(serverMaxWindowBits)") }
        if clientMaxWindowBits != 15 { parts.append("client_max_window_bits=\(clientMaxWindowBits)") }
        return parts.joined(separator: "; ")
    }

    public var description: String { headerValue }
}

/// What a client offers (RFC 7692 §7.1): the parameters it asks the server to honour.
public struct PerMessageDeflateOffer: Hashable, Sendable {
    public var requestServerNoContextTakeover = false
    public var requestClientNoContextTakeover = false
    /// Ask the server to use at most this window (8–15), or nil to leave it to the server.
    public var serverMaxWindowBits: Int?
    /// Tell the server we accept a client window limit (the server may then send `client_max_window_bits`).
    public var acceptsClientMaxWindowBits = true

    public init(
        requestServerNoContextTakeover: Bool = false, requestClientNoContextTakeover: Bool = false,
        serverMaxWindowBits: Int? = nil, acceptsClientMaxWindowBits: Bool = true
    ) {
        self.requestServerNoContextTakeover = requestServerNoContextTakeover
        self.requestClientNoContextTakeover = requestClientNoContextTakeover
        self.serverMaxWindowBits = serverMaxWindowBits
        self.acceptsClientMaxWindowBits = acceptsClientMaxWindowBits
    }

    /// The `Sec-WebSocket-Extensions` element for this offer.
    public var headerValue: String {
        var parts = ["permessage-deflate"]
        if requestServerNoContextTakeover { parts.append("server_no_context_takeover") }
        if requestClientNoContextTakeover { parts.append("client_no_context_takeover") }
        if let bits = serverMaxWindowBits { parts.append("server_max_window_bits=\(bits)") }
        if acceptsClientMaxWindowBits { parts.append("client_max_window_bits") }
        return parts.joined(separator: "; ")
    }

    /// Validates the server's answer against this offer (RFC 7692 §7.1.1–7.1.2).
    /// - Throws: a reason when the answer has unknown, repeated or out-of-range parameters, or
    ///   parameters we did not allow.
    public func accept(answer parameters: [(name: String, value: String?)]) throws(PerMessageDeflateError) -> PerMessageDeflateParameters {
        var result = PerMessageDeflateParameters()
        var seen: Set<String> = []
        for (name, value) in parameters {
            guard seen.insert(name).inserted else { throw PerMessageDeflateError("parameter \(name) appears twice") }
            switch name {
            case "server_no_context_takeover":
                guard value == nil else { throw PerMessageDeflateError("server_no_context_takeover takes no value") }
                result.serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard value == nil else { throw PerMessageDeflateError("client_no_context_takeover takes no value") }
                result.clientNoContextTakeover = true
            case "server_max_window_bits":
                guard let bits = value.flatMap(Self.windowBits) else {
                    throw PerMessageDeflateError("server_max_window_bits needs a value from 8 to 15")
                }
                if let asked = serverMaxWindowBits, bits > asked {
                    throw PerMessageDeflateError("server_max_window_bits=\(bits) exceeds the offered \(asked)")
                }
                result.serverMaxWindowBits = bits
            case "client_max_window_bits":
                guard acceptsClientMaxWindowBits else {
                    throw PerMessageDeflateError("client_max_window_bits was not offered")
                }
                guard let bits = value.flatMap(Self.windowBits) else {
                    throw PerMessageDeflateError("client_max_window_bits needs a value from 8 to 15")
                }
                guard bits >= 9 else { throw PerMessageDeflateError("client_max_window_bits=8 cannot be honoured by zlib") }
                result.clientMaxWindowBits = bits
            default:
                throw PerMessageDeflateError("unknown parameter \(name)")
            }
        }
        // A server may decline server_no_context_takeover (§7.1.1.1): nothing to enforce there.
        return result
    }

    /// A server's answer to a client's offer (used by the embedded server): honours what was asked.
    public static func answer(
        offer parameters: [(name: String, value: String?)]
    ) -> PerMessageDeflateParameters? {
        var result = PerMessageDeflateParameters()
        var seen: Set<String> = []
        for (name, value) in parameters {
            guard seen.insert(name).inserted else { return nil }
            switch name {
            case "server_no_context_takeover": if value != nil { return nil }; result.serverNoContextTakeover = true
            case "client_no_context_takeover": if value != nil { return nil }; result.clientNoContextTakeover = true
            case "server_max_window_bits":
                // zlib cannot deflate with an 8-bit window: decline such an offer rather than exceed it.
                guard let bits = value.flatMap(windowBits), bits >= 9 else { return nil }
                result.serverMaxWindowBits = bits
            case "client_max_window_bits":
                if let value {
                    guard let bits = windowBits(value) else { return nil }
                    result.clientMaxWindowBits = bits
                }
            default:
                return nil
            }
        }
        return result
    }

    private static func windowBits(_ text: String) -> Int? {
        var text = text
        if text.count >= 2 && text.hasPrefix("\"") && text.hasSuffix("\"") { text = String(text.dropFirst().dropLast()) }
        guard text.count <= 2, text.allSatisfy(\.isASCII), let bits = Int(text), (8...15).contains(bits) else { return nil }
        return bits
    }
}

/// Why a permessage-deflate negotiation or stream failed.
public struct PerMessageDeflateError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Compresses messages for permessage-deflate: raw deflate, sync flush, trailing 00 00 FF FF removed.
public final class MessageDeflater {
    private var stream = z_stream()
    private let isContextReset: Bool
    private var isInitialized = false

    /// - Parameters:
    ///   - windowBits: the negotiated window for our direction (9–15).
    ///   - isContextReset: `*_no_context_takeover` for our direction: each message starts fresh.
    public init(windowBits: Int, isContextReset: Bool, level: Int32 = 6) {
        self.isContextReset = isContextReset
        isInitialized = wsload_deflateInit2(&stream, level, -Int32(max(9, windowBits)), 8) == Z_OK
        precondition(isInitialized, "deflateInit2 failed (out of memory)")
    }

    deinit { deflateEnd(&stream) }

    /// The compressed form of one whole message.
    public func compress(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(message.count / 2 + 64)
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        stream.next_in = UnsafeMutablePointer(mutating: message.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = uInt(message.count)
        repeat {
            chunk.withUnsafeMutableBufferPointer { buffer in
                stream.next_out = buffer.baseAddress
                stream.avail_out = uInt(buffer.count)
                _ = deflate(&stream, Z_SYNC_FLUSH)
                output.append(contentsOf: buffer.prefix(buffer.count - Int(stream.avail_out)))
            }
        } while stream.avail_out == 0
        stream.next_in = nil
        if output.count >= 4 && output.suffix(4) == [0x00, 0x00, 0xFF, 0xFF] { output.removeLast(4) }
        // A second sync flush with no new input gives nothing (zlib), and an empty payload + 00 00 FF FF leaves
        // the peer's inflater inside a stored block. §7.2.3.6: an empty message is one 0x00 byte (BFINAL 0,
        // BTYPE 00, padding), which the appended 00 00 FF FF completes to an empty stored block.
        if output.isEmpty { output.append(0x00) }
        if isContextReset { deflateReset(&stream) }
        return output
    }
}

/// Decompresses permessage-deflate messages with a size cap and a ratio cap (no decompression bomb).
public final class MessageInflater {
    private var stream = z_stream()
    private let isContextReset: Bool
    /// Inflated bytes allowed per message.
    public let maximumMessageSize: Int
    /// Inflated-to-compressed ratio allowed once a message passes `ratioFloor` bytes.
    public let maximumRatio: Int
    public let ratioFloor: Int
    private var inflatedCount = 0
    private var compressedCount = 0
    /// The last input ran exactly to the end of a BFINAL block (the stream was restarted there).
    private var isStreamEndedByLastPiece = false

    /// - Parameter isContextReset: the peer's `*_no_context_takeover`: each message starts fresh.
    public init(isContextReset: Bool, maximumMessageSize: Int, maximumRatio: Int = 100, ratioFloor: Int = 1 << 20) {
        self.isContextReset = isContextReset
        self.maximumMessageSize = maximumMessageSize
        self.maximumRatio = maximumRatio
        self.ratioFloor = ratioFloor
        // A 15-bit window inflates streams made with any smaller window.
        let status = wsload_inflateInit2(&stream, -15)
        precondition(status == Z_OK, "inflateInit2 failed (out of memory)")
    }

    deinit { inflateEnd(&stream) }

    /// Inflates the next piece of a compressed message, appending to `output`. Pass `isFinal` with the
    /// message's last fragment (the 00 00 FF FF tail is added here).
    /// - Throws: a reason for a corrupt stream (close 1007) or ``MessageInflater/LimitExceeded`` (1009).
    public func inflate(_ piece: [UInt8], isFinal: Bool, into output: inout [UInt8]) throws {
        compressedCount += piece.count
        try run(piece, into: &output)
        if isFinal {
            // After a BFINAL block the appended 00 00 FF FF is no block of the new stream: it is not fed. Nor is
            // it after an empty message (a peer whose zlib gave nothing): alone it would open a stored block
            // that the next message's bytes would be read into.
            if !isStreamEndedByLastPiece && compressedCount > 0 { try run([0x00, 0x00, 0xFF, 0xFF], into: &output) }
            isStreamEndedByLastPiece = false
            inflatedCount = 0
            compressedCount = 0
            if isContextReset { inflateReset(&stream) }
        }
    }

    /// After Z_STREAM_END: a fresh stream that, with context takeover, keeps the last 32 KiB as its window
    /// (a peer may go on referring to them after a BFINAL block); without it, a clean one. Input not yet read
    /// (`next_in`/`avail_in`) is carried over.
    private func restartStream() throws {
        let pendingInput = stream.next_in
        let pendingCount = stream.avail_in
        var window = [UInt8](repeating: 0, count: isContextReset ? 0 : 32 * 1024)
        var windowCount: uInt = 0
        if !isContextReset {
            window.withUnsafeMutableBufferPointer { _ = inflateGetDictionary(&stream, $0.baseAddress, &windowCount) }
        }
        guard inflateReset(&stream) == Z_OK else { throw PerMessageDeflateError("cannot restart the deflate stream") }
        if windowCount > 0 {
            let status = window.withUnsafeBufferPointer { inflateSetDictionary(&stream, $0.baseAddress, windowCount) }
            guard status == Z_OK else { throw PerMessageDeflateError("cannot keep the window (zlib status \(status))") }
        }
        stream.next_in = pendingInput
        stream.avail_in = pendingCount
    }

    /// The inflated message would pass the size or ratio cap.
    public struct LimitExceeded: Error, CustomStringConvertible {
        public var description: String
    }

    private func run(_ input: [UInt8], into output: inout [UInt8]) throws {
        guard !input.isEmpty else { return }
        isStreamEndedByLastPiece = false
        var chunk = [UInt8](repeating: 0, count: 32 * 1024)
        try input.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            while true {
                let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer -> (Int32, Int) in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(buffer.count)
                    let status = CZlib.inflate(&stream, Z_SYNC_FLUSH)
                    return (status, buffer.count - Int(stream.avail_out))
                }
                inflatedCount += produced
                if inflatedCount > maximumMessageSize {
                    throw LimitExceeded(description: "inflated message exceeds \(maximumMessageSize) bytes")
                }
                let (ratioLimit, ratioOverflow) = maximumRatio.multipliedReportingOverflow(by: max(1, compressedCount))
                if inflatedCount > ratioFloor && !ratioOverflow && inflatedCount > ratioLimit {
                    throw LimitExceeded(description: "compression ratio exceeds \(maximumRatio):1")
                }
                output.append(contentsOf: chunk[0..<produced])
                if status == Z_STREAM_END {
                    // A BFINAL block (RFC 7692 §7.2.3.4) ended the deflate stream: start the next one, so the rest
                    // of this message and every later message inflate instead of vanishing.
                    try restartStream()
                    if stream.avail_in == 0 {
                        isStreamEndedByLastPiece = true
                        break
                    }
                    continue
                }
                if status == Z_BUF_ERROR && stream.avail_in == 0 { break }
                guard status == Z_OK else {
                    throw PerMessageDeflateError("corrupt deflate data (zlib status \(status))")
                }
                if stream.avail_in == 0 && stream.avail_out != 0 { break }
            }
            stream.next_in = nil
        }
    }
}

/// Parses a `Sec-WebSocket-Extensions` value into extensions and their parameters (RFC 6455 §9.1).
public func parseExtensionHeader(_ values: [String]) -> [(name: String, parameters: [(name: String, value: String?)])]? {
    var result: [(name: String, parameters: [(name: String, value: String?)])] = []
    for value in values {
        for element in value.split(separator: ",") {
            let parts = element.split(separator: ";").map { String($0).trimmingCharacters(in: " \t") }
            guard let name = parts.first, !name.isEmpty else { return nil }
            var parameters: [(name: String, value: String?)] = []
            for part in parts.dropFirst() {
                let pair = part.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharacters(in: " \t") }
                guard let key = pair.first, !key.isEmpty else { return nil }
                parameters.append((key, pair.count == 2 ? pair[1] : nil))
            }
            result.append((name, parameters))
        }
    }
    return result
}

extension String {
    func trimmingCharacters(in characters: String) -> String {
        var slice = Substring(self)
        while let first = slice.first, characters.contains(first) { slice.removeFirst() }
        while let last = slice.last, characters.contains(last) { slice.removeLast() }
        return String(slice)
    }
}

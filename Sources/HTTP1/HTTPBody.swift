/// How an HTTP/1.1 response body is delimited (RFC 9112 §6.3).
public enum HTTPBodyFraming: Sendable, Hashable {
    /// No body: a HEAD response, 1xx, 204 or 304.
    case empty
    /// Exactly this many bytes.
    case length(Int64)
    /// `Transfer-Encoding: chunked`.
    case chunked
    /// Until the server closes the connection (no length given).
    case untilClose

    /// The framing of `head`, the response to a request with `requestMethod`.
    /// - Throws: `HTTPParseError` for a negative, non-numeric, overflowing or conflicting
    ///   `Content-Length`, or a transfer coding other than chunked (offsets are 0: they concern the head).
    public init(response head: HTTPResponseHead, requestMethod: String) throws(HTTPParseError) {
        if requestMethod == "HEAD" || (100..<200).contains(head.status) || head.status == 204 || head.status == 304 {
            self = .empty
            return
        }
        let codings = head.headers.listValues("Transfer-Encoding").map { $0.lowercased() }
        if !codings.isEmpty {
            // §6.3 rule 4: chunked must be last; anything else means "read until close", which we refuse
            // rather than guess at a compressed or unknown coding.
            guard codings == ["chunked"] else {
                throw HTTPParseError(offset: 0, reason: "unsupported Transfer-Encoding \"\(codings.joined(separator: ", "))\"")
            }
            // §6.3 rule 3: Transfer-Encoding overrides Content-Length; a message with both is a smuggling
            // attempt or a broken server, so it is refused.
            if head.headers["Content-Length"] != nil {
                throw HTTPParseError(offset: 0, reason: "both Transfer-Encoding and Content-Length")
            }
            self = .chunked
            return
        }
        if let length = try HTTPBodyFraming.contentLength(head.headers) {
            self = .length(length)
        } else {
            self = .untilClose
        }
    }

    /// The request's or response's `Content-Length`, nil when absent.
    /// - Throws: when a value is not a non-negative decimal that fits in 63 bits, or values disagree.
    public static func contentLength(_ headers: HTTPHeaders) throws(HTTPParseError) -> Int64? {
        let values = headers.listValues("Content-Length")
        guard let first = values.first else {
            if headers["Content-Length"] != nil { throw HTTPParseError(offset: 0, reason: "empty Content-Length") }
            return nil
        }
        guard let length = parseDecimal(first) else {
            throw HTTPParseError(offset: 0, reason: "Content-Length \"\(first.prefix(32))\" is not a non-negative 63-bit integer")
        }
        if values.contains(where: { $0 != first }) {
            throw HTTPParseError(offset: 0, reason: "conflicting Content-Length values")
        }
        return length
    }
}

/// A non-negative decimal of at most 18 digits' magnitude that fits in `Int64`, or nil.
func parseDecimal<S: StringProtocol>(_ text: S) -> Int64? {
    guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
    var value: Int64 = 0
    for byte in text.utf8 {
        let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - 48))
        if overflow1 || overflow2 { return nil }
        value = sum
    }
    return value
}

/// Incremental decoder of a response body with a known framing.
///
/// Feed it what the connection delivers; it hands the body's bytes to a sink as slices of the input
/// (no copies) and says when the message is complete and how much of the input it used, so bytes
/// after the body (a pipelined or keep-alive response) stay with the caller. Limits on chunk-size
/// lines and trailers apply before anything is buffered.
public struct HTTPBodyDecoder: Sendable {
    /// What ``decode(_:into:)`` found.
    public enum Progress: Sendable, Hashable {
        /// All input was used; the body is not complete.
        case needMoreData
        /// The body ended after `consumed` bytes of this input.
        case complete(consumed: Int)
    }

    private enum State: Sendable, Hashable {
        case length(remaining: Int64)
        case untilClose
        /// Reading a chunk-size line (size digits, extensions) up to CRLF.
        case chunkSize
        case chunkData(remaining: Int64)
        /// The CRLF after a chunk's data.
        case chunkDataEnd(sawCR: Bool)
        /// Trailer lines after the last chunk, up to the empty line.
        case trailers
        case done
    }

    private var state: State
    /// The current chunk-size or trailer line (bounded).
    private var line: [UInt8] = []
    private var trailerBytes = 0
    /// Body bytes (after decoding) delivered so far.
    public private(set) var bodyBytes: Int64 = 0
    /// Wire bytes consumed so far: the offset errors name.
    public private(set) var wireOffset: Int64 = 0
    public let maximumChunkLineLength: Int
    public let maximumTrailerSize: Int

    public init(framing: HTTPBodyFraming, maximumChunkLineLength: Int = 4096, maximumTrailerSize: Int = 16 * 1024) {
        switch framing {
        case .empty: state = .done
        case .length(let length): state = length == 0 ? .done : .length(remaining: length)
        case .chunked: state = .chunkSize
        case .untilClose: state = .untilClose
        }
        self.maximumChunkLineLength = maximumChunkLineLength
        self.maximumTrailerSize = maximumTrailerSize
    }

    /// True once the whole body has been decoded.
    public var isComplete: Bool { state == .done }

    /// Decodes `input`, passing body bytes to `sink` in order.
    /// - Throws: `HTTPParseError` (offset in the body's wire bytes) for a malformed chunk size, a
    ///   missing CRLF after chunk data, or an oversized chunk line or trailer; whatever `sink` throws.
    public mutating func decode(
        _ input: ArraySlice<UInt8>, into sink: (ArraySlice<UInt8>) throws -> Void
    ) throws -> Progress {
        var index = input.startIndex
        defer { wireOffset += Int64(index - input.startIndex) }
        while index < input.endIndex {
            switch state {
            case .done:
                return .complete(consumed: index - input.startIndex)
            case .untilClose:
                try deliver(input[index...], sink)
                index = input.endIndex
            case .length(let remaining):
                let count = Int(min(Int64(input.endIndex - index), remaining))
                try deliver(input[index..<(index + count)], sink)
                index += count
                state = remaining == Int64(count) ? .done : .length(remaining: remaining - Int64(count))
            case .chunkData(let remaining):
                let count = Int(min(Int64(input.endIndex - index), remaining))
                try deliver(input[index..<(index + count)], sink)
                index += count
                state = remaining == Int64(count) ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - Int64(count))
            case .chunkDataEnd(let sawCR):
                let byte = input[index]
                let offset = wireOffset + Int64(index - input.startIndex)
                if !sawCR {
                    guard byte == 13 else { throw HTTPParseError(offset: Int(offset), reason: "chunk data not followed by CRLF") }
                    state = .chunkDataEnd(sawCR: true)
                } else {
                    guard byte == 10 else { throw HTTPParseError(offset: Int(offset), reason: "chunk data not followed by CRLF") }
                    state = .chunkSize
                }
                index += 1
            case .chunkSize, .trailers:
                let isTrailer = state == .trailers
                guard let lineEnd = input[index...].firstIndex(of: 10) else {
                    try appendLine(input[index...], at: wireOffset + Int64(index - input.startIndex), isTrailer: isTrailer)
                    index = input.endIndex
                    continue
                }
                try appendLine(input[index..<lineEnd], at: wireOffset + Int64(index - input.startIndex), isTrailer: isTrailer)
                let lineOffset = wireOffset + Int64(lineEnd - input.startIndex) - Int64(line.count)
                index = lineEnd + 1
                guard line.last == 13 else { throw HTTPParseError(offset: Int(lineOffset), reason: "bare LF in chunked framing") }
                line.removeLast()
                if isTrailer {
                    if line.isEmpty { state = .done }
                } else {
                    let size = try Self.chunkSize(line, offset: lineOffset)
                    state = size == 0 ? .trailers : .chunkData(remaining: size)
                }
                line.removeAll(keepingCapacity: true)
            }
        }
        return state == .done ? .complete(consumed: index - input.startIndex) : .needMoreData
    }

    /// The connection ended: fine for a close-delimited body, an error for any other unfinished one.
    public func finish() throws(HTTPParseError) {
        switch state {
        case .done, .untilClose: return
        case .length(let remaining):
            throw HTTPParseError(offset: Int(wireOffset), reason: "connection closed with \(remaining) of the body's bytes missing")
        default:
            throw HTTPParseError(offset: Int(wireOffset), reason: "connection closed inside chunked framing")
        }
    }

    private mutating func deliver(_ bytes: ArraySlice<UInt8>, _ sink: (ArraySlice<UInt8>) throws -> Void) throws {
        guard !bytes.isEmpty else { return }
        bodyBytes += Int64(bytes.count)
        try sink(bytes)
    }

    /// Adds the next piece of the current line, which this input holds from wire offset `offset` on.
    private mutating func appendLine(_ bytes: ArraySlice<UInt8>, at offset: Int64, isTrailer: Bool) throws(HTTPParseError) {
        // Errors name where the line starts, whichever piece of the input crossed the limit.
        let lineStart = Int(offset) - line.count
        if isTrailer {
            trailerBytes += bytes.count
            if trailerBytes > maximumTrailerSize {
                throw HTTPParseError(offset: lineStart, reason: "trailers exceed \(maximumTrailerSize) bytes")
            }
        } else if line.count + bytes.count > maximumChunkLineLength {
            throw HTTPParseError(offset: lineStart, reason: "chunk-size line exceeds \(maximumChunkLineLength) bytes")
        }
        line.append(contentsOf: bytes)
    }

    /// `chunk-size [ chunk-ext ]`: hex digits, at most 15 (so the size fits in 60 bits), then `;` or spaces.
    static func chunkSize(_ line: [UInt8], offset: Int64) throws(HTTPParseError) -> Int64 {
        var size: Int64 = 0
        var digits = 0
        for byte in line {
            let digit: Int64
            switch byte {
            case 48...57: digit = Int64(byte - 48)
            case 65...70: digit = Int64(byte - 55)
            case 97...102: digit = Int64(byte - 87)
            case UInt8(ascii: ";"), UInt8(ascii: " "), UInt8(ascii: "\t"):
                guard digits > 0 else { throw HTTPParseError(offset: Int(offset), reason: "chunk size missing") }
                return size
            default:
                throw HTTPParseError(offset: Int(offset) + digits, reason: "invalid character in chunk size")
            }
            digits += 1
            guard digits <= 15 else { throw HTTPParseError(offset: Int(offset), reason: "chunk size too large") }
            size = size << 4 | digit
        }
        guard digits > 0 else { throw HTTPParseError(offset: Int(offset), reason: "chunk size missing") }
        return size
    }
}

/// Encodes a body as chunked transfer coding (for requests whose length is not known up front).
public enum HTTPChunkedEncoder {
    /// One chunk: hex size, CRLF, data, CRLF. An empty `data` gives nothing (use ``lastChunk``).
    public static func chunk(_ data: ArraySlice<UInt8>) -> [UInt8] {
        guard !data.isEmpty else { return [] }
        var bytes = Array(String(data.count, radix: 16).utf8) + [13, 10]
        bytes.append(contentsOf: data)
        bytes.append(contentsOf: [13, 10])
        return bytes
    }

    /// The last chunk and an empty trailer section.
    public static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)
}

extension HTTPResponseHead {
    /// Whether the connection can carry another request after this response (RFC 9112 §9.3).
    public var keepsConnectionAlive: Bool {
        if headers.listContains("Connection", token: "close") { return false }
        if version == "HTTP/1.0" { return headers.listContains("Connection", token: "keep-alive") }
        return true
    }
}

extension HTTPRequestHead {
    /// Whether the client may send another request on this connection after this one.
    public var keepsConnectionAlive: Bool {
        if headers.listContains("Connection", token: "close") { return false }
        if version == "HTTP/1.0" { return headers.listContains("Connection", token: "keep-alive") }
        return true
    }
}

import HTTP1
import Runtime

extension HTTPService {
    /// The request's body framing (RFC 9112 §6.3 for requests: chunked, Content-Length, or none).
    /// - Throws: for Transfer-Encoding with Content-Length (§6.1: a smuggling attempt), a coding other than a
    ///   lone `chunked`, Transfer-Encoding in an HTTP/1.0 request, or a bad or conflicting Content-Length.
    static func requestFraming(_ request: HTTPRequestHead) throws(HTTPParseError) -> HTTPBodyFraming {
        let codings = request.headers.listValues("Transfer-Encoding").map { $0.lowercased() }
        if !codings.isEmpty || request.headers["Transfer-Encoding"] != nil {
            guard request.headers["Content-Length"] == nil else {
                throw HTTPParseError(offset: 0, reason: "both Transfer-Encoding and Content-Length (RFC 9112 §6.1)")
            }
            guard codings == ["chunked"] else {
                throw HTTPParseError(offset: 0, reason: "Transfer-Encoding \"\(codings.joined(separator: ", ").prefix(64))\" is not chunked")
            }
            guard request.version != "HTTP/1.0" else {
                throw HTTPParseError(offset: 0, reason: "Transfer-Encoding in an HTTP/1.0 request (RFC 9112 §6.1)")
            }
            return .chunked
        }
        return .length(try HTTPBodyFraming.contentLength(request.headers) ?? 0)
    }

    /// Reads and drops a body of at most ``maximumDiscardedBody`` bytes; a longer one is refused with 413 and
    /// the connection closed. - Returns: whether the connection can go on.
    func discardBody(_ framing: HTTPBodyFraming, buffer: inout [UInt8]) async throws -> Bool {
        if case .length(let length) = framing, length > Self.maximumDiscardedBody {
            try await refuse(413, "Content Too Large", "this request's body may have at most \(Self.maximumDiscardedBody) bytes\n")
            return false
        }
        let limit = Self.maximumDiscardedBody
        do {
            _ = try await readBody(framing, buffer: &buffer) { bytes, total in
                if total > limit { throw BodyTooLarge() }
            }
        } catch is BodyTooLarge {
            try await refuse(413, "Content Too Large", "this request's body may have at most \(limit) bytes\n")
            return false
        }
        return true
    }

    /// Reads a request body, passing each piece and the total so far to `sink`; leaves what follows in `buffer`.
    /// Each read must bring bytes within the body timeout.
    func readBody(_ framing: HTTPBodyFraming, buffer: inout [UInt8],
                  sink: (ArraySlice<UInt8>, Int64) throws -> Void) async throws -> Int64 {
        var decoder = HTTPBodyDecoder(framing: framing)
        if decoder.isComplete { return 0 }
        watchdog.arm(.body, timeout: configuration.bodyTimeout, resetsOnProgress: true)
        defer { watchdog.disarm() }
        var total: Int64 = 0
        while true {
            if !buffer.isEmpty {
                let progress = try decoder.decode(buffer[...]) { bytes in
                    total &+= Int64(bytes.count)
                    try sink(bytes, total)
                }
                switch progress {
                case .complete(let consumed):
                    buffer.removeFirst(consumed)
                    return decoder.bodyBytes
                case .needMoreData:
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            guard try await stream.read(into: &buffer, maxBytes: 256 * 1024) > 0 else {
                try decoder.finish()
                return decoder.bodyBytes
            }
            watchdog.progress()
        }
    }
}

/// A discarded body went past its limit.
private struct BodyTooLarge: Error {}

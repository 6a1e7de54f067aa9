import HTTP1
import Testing

/// Decodes `wire` fed in pieces of `step` bytes (0 = random sizes from `seed`); returns the body and
/// the bytes left over after the message.
private func decode(_ wire: [UInt8], framing: HTTPBodyFraming, step: Int, seed: UInt64 = 1) throws -> (body: [UInt8], rest: [UInt8], complete: Bool) {
    var decoder = HTTPBodyDecoder(framing: framing)
    var body: [UInt8] = []
    var state = seed
    var start = 0
    while start < wire.count {
        var size = step
        if step == 0 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            size = Int(state >> 59) + 1
        }
        let end = min(wire.count, start + size)
        switch try decoder.decode(wire[start..<end], into: { body += $0 }) {
        case .needMoreData:
            start = end
        case .complete(let consumed):
            return (body, Array(wire[(start + consumed)...]), true)
        }
    }
    return (body, [], decoder.isComplete)
}

@Suite("HTTP/1.1 bodies", .timeLimit(.minutes(1)))
struct BodyTests {
    /// RFC 9112 §7.1 framing with an extension and a trailer, then the next response's first bytes.
    let chunked = Array("4\r\nWiki\r\n5;name=value\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nExpires: never\r\n\r\nHTTP/1.1".utf8)

    @Test("chunked: all at once, byte by byte and in random pieces, leaving the next message", arguments: [0, 1, 3, 1000])
    func chunkedBody(step: Int) throws {
        for seed in [UInt64(1), 2, 3] {
            let (body, rest, complete) = try decode(chunked, framing: .chunked, step: step, seed: seed)
            #expect(String(decoding: body, as: UTF8.self) == "Wikipedia in\r\n\r\nchunks.")
            #expect(rest == Array("HTTP/1.1".utf8))
            #expect(complete)
        }
    }

    @Test("Content-Length: exactly that many bytes, the rest left over", arguments: [1, 2, 100])
    func lengthBody(step: Int) throws {
        let (body, rest, complete) = try decode(Array("helloNEXT".utf8), framing: .length(5), step: step)
        #expect(body == Array("hello".utf8))
        #expect(rest == Array("NEXT".utf8))
        #expect(complete)
    }

    @Test("a truncated body is an error at EOF; a close-delimited one is not")
    func truncated() throws {
        var decoder = HTTPBodyDecoder(framing: .length(10))
        _ = try decoder.decode(Array("abc".utf8)[...], into: { _ in })
        #expect(throws: HTTPParseError(offset: 3, reason: "connection closed with 7 of the body's bytes missing")) { try decoder.finish() }
        var open = HTTPBodyDecoder(framing: .untilClose)
        _ = try open.decode(Array("abc".utf8)[...], into: { _ in })
        try open.finish()
        #expect(open.bodyBytes == 3)
    }

    @Test("hostile chunked framing fails with the wire offset", arguments: [
        ("zz\r\n", 0, "invalid character in chunk size"),
        ("\r\n", 0, "chunk size missing"),
        ("1000000000000000\r\n", 0, "chunk size too large"),
        ("3\r\nabcX", 6, "chunk data not followed by CRLF"),
        ("3\nabc\r\n", 0, "bare LF in chunked framing"),
        ("-1\r\n", 0, "invalid character in chunk size"),
    ])
    func hostileChunks(wire: String, offset: Int, reason: String) {
        #expect(throws: HTTPParseError(offset: offset, reason: reason)) {
            _ = try decode(Array(wire.utf8), framing: .chunked, step: 1)
        }
    }

    @Test("an endless chunk-size line and endless trailers hit their limits before buffering more")
    func chunkLimits() {
        let longLine = Array("1;" .utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 5000)
        #expect(throws: HTTPParseError.self) { _ = try decode(longLine, framing: .chunked, step: 512) }
        let trailers = Array("0\r\n".utf8) + Array(String(repeating: "X-T: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", count: 1000).utf8)
        #expect(throws: HTTPParseError.self) { _ = try decode(trailers, framing: .chunked, step: 4096) }
    }

    @Test("an oversized chunk-size line or trailer names where its line starts, however the input is split", arguments: [1, 5, 64, 1000])
    func limitOffsetsIgnoreTheSplit(step: Int) {
        // Fuzz/Corpus/HTTPBody/chunk-line-offset-depends-on-split: the offset was where the piece that crossed
        // the limit began (0 fed whole, 63 fed in pieces).
        let longLine = Array("1\r\nA\r\n2;".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 100) + Array("\r\n".utf8)
        let longTrailer = Array("0\r\nA: b\r\nX-T: ".utf8) + [UInt8](repeating: UInt8(ascii: "y"), count: 300) + Array("\r\n\r\n".utf8)
        for (wire, offset, reason) in [(longLine, 6, "chunk-size line exceeds 64 bytes"), (longTrailer, 9, "trailers exceed 256 bytes")] {
            var decoder = HTTPBodyDecoder(framing: .chunked, maximumChunkLineLength: 64, maximumTrailerSize: 256)
            #expect(throws: HTTPParseError(offset: offset, reason: reason), "pieces of \(step)") {
                for start in stride(from: 0, to: wire.count, by: step) {
                    _ = try decoder.decode(wire[start..<min(wire.count, start + step)], into: { _ in })
                }
            }
        }
    }

    @Test("framing from the head: HEAD, 204, 304 and 1xx have no body; chunked beats nothing; bad lengths fail")
    func framing() throws {
        func head(_ status: Int, _ headers: HTTPHeaders) -> HTTPResponseHead { HTTPResponseHead(status: status, reason: "", headers: headers) }
        #expect(try HTTPBodyFraming(response: head(200, ["Content-Length": "5"]), requestMethod: "HEAD") == .empty)
        #expect(try HTTPBodyFraming(response: head(204, [:]), requestMethod: "GET") == .empty)
        #expect(try HTTPBodyFraming(response: head(304, ["Content-Length": "5"]), requestMethod: "GET") == .empty)
        #expect(try HTTPBodyFraming(response: head(100, [:]), requestMethod: "PUT") == .empty)
        #expect(try HTTPBodyFraming(response: head(200, ["Content-Length": "5"]), requestMethod: "GET") == .length(5))
        #expect(try HTTPBodyFraming(response: head(200, ["Content-Length": "5, 5"]), requestMethod: "GET") == .length(5))
        #expect(try HTTPBodyFraming(response: head(200, ["Transfer-Encoding": "Chunked"]), requestMethod: "GET") == .chunked)
        #expect(try HTTPBodyFraming(response: head(200, [:]), requestMethod: "GET") == .untilClose)
        #expect(try HTTPBodyFraming(response: head(200, ["Content-Length": "9223372036854775807"]), requestMethod: "GET")
            == .length(Int64.max))
        for bad: HTTPHeaders in [
            ["Content-Length": "-1"], ["Content-Length": "9223372036854775808"], ["Content-Length": "99999999999999999999"],
            ["Content-Length": "1e3"], ["Content-Length": "5, 6"], ["Content-Length": ""], ["Content-Length": "+5"],
            ["Transfer-Encoding": "gzip, chunked"], ["Transfer-Encoding": "chunked", "Content-Length": "5"],
        ] {
            #expect(throws: HTTPParseError.self, "\(bad)") { try HTTPBodyFraming(response: head(200, bad), requestMethod: "GET") }
        }
    }

    @Test("keep-alive by version and Connection")
    func keepAlive() {
        #expect(HTTPResponseHead(status: 200, reason: "").keepsConnectionAlive)
        #expect(!HTTPResponseHead(status: 200, reason: "", headers: ["Connection": "Close"]).keepsConnectionAlive)
        #expect(!HTTPResponseHead(version: "HTTP/1.0", status: 200, reason: "").keepsConnectionAlive)
        #expect(HTTPResponseHead(version: "HTTP/1.0", status: 200, reason: "", headers: ["Connection": "keep-alive"]).keepsConnectionAlive)
    }

    @Test("chunked encoder output decodes back, byte-exact")
    func encoder() throws {
        let wire = HTTPChunkedEncoder.chunk(Array("Wiki".utf8)[...]) + HTTPChunkedEncoder.chunk(Array(repeating: 65, count: 300)[...])
            + HTTPChunkedEncoder.lastChunk
        #expect(Array(wire.prefix(9)) == Array("4\r\nWiki\r\n".utf8))
        #expect(Array(wire[9..<14]) == Array("12c\r\n".utf8))
        let (body, rest, complete) = try decode(wire, framing: .chunked, step: 7)
        #expect(body.count == 304 && rest.isEmpty && complete)
    }
}

@Suite("HTTP ranges, validators and dates", .timeLimit(.minutes(1)))
struct RangeTests {
    @Test("RFC 9110 §14.1.2 examples resolve against a 10000-byte representation")
    func rangeExamples() {
        let length: Int64 = 10000
        #expect(RangeRequest(headerValue: "bytes=0-499")?.resolved(length: length) == ByteRange(first: 0, last: 499))
        #expect(RangeRequest(headerValue: "bytes=500-999")?.resolved(length: length) == ByteRange(first: 500, last: 999))
        #expect(RangeRequest(headerValue: "bytes=-500")?.resolved(length: length) == ByteRange(first: 9500, last: 9999))
        #expect(RangeRequest(headerValue: "bytes=9500-")?.resolved(length: length) == ByteRange(first: 9500, last: 9999))
        #expect(RangeRequest(headerValue: "bytes=0-99999")?.resolved(length: length) == ByteRange(first: 0, last: 9999))
        #expect(RangeRequest(headerValue: "bytes=10000-")?.resolved(length: length) == nil)
        #expect(RangeRequest(headerValue: "bytes=-0")?.resolved(length: length) == nil)
        #expect(RangeRequest(headerValue: "bytes=0-0,-1") == nil)
        #expect(RangeRequest(headerValue: "bytes=5-4") == nil)
        #expect(RangeRequest(headerValue: "items=0-4") == nil)
        #expect(RangeRequest.closed(first: 0, last: 499).headerValue == "bytes=0-499")
        #expect(RangeRequest.from(7).headerValue == "bytes=7-")
        #expect(RangeRequest.suffix(3).headerValue == "bytes=-3")
    }

    @Test("Content-Range parses strictly")
    func contentRange() {
        #expect(ContentRange(headerValue: "bytes 42-1233/1234") == ContentRange(range: ByteRange(first: 42, last: 1233), completeLength: 1234))
        #expect(ContentRange(headerValue: "bytes 42-1233/*") == ContentRange(range: ByteRange(first: 42, last: 1233), completeLength: nil))
        #expect(ContentRange(headerValue: "bytes */1234") == ContentRange(range: nil, completeLength: 1234))
        #expect(ContentRange(headerValue: "bytes 42-1234/1234") == nil)
        #expect(ContentRange(headerValue: "bytes 50-40/1234") == nil)
        #expect(ContentRange(headerValue: "bytes -1-5/10") == nil)
        #expect(ContentRange(headerValue: "bytes */*") == nil)
        #expect(ContentRange(headerValue: "bytes 0-99999999999999999999/5") == nil)
        #expect(ContentRange(range: ByteRange(first: 0, last: 9), completeLength: 20).description == "bytes 0-9/20")
    }

    @Test("entity tags: strong comparison for If-Range (RFC 9110 §8.8.3.2 table)")
    func entityTags() throws {
        let weak1 = try #require(EntityTag(headerValue: "W/\"1\""))
        let weak2 = try #require(EntityTag(headerValue: "W/\"2\""))
        let strong1 = try #require(EntityTag(headerValue: "\"1\""))
        #expect(!weak1.strongMatches(weak1))
        #expect(!weak1.strongMatches(weak2))
        #expect(!weak1.strongMatches(strong1))
        #expect(strong1.strongMatches(strong1))
        #expect(EntityTag(headerValue: "\"a\"b\"") == nil)
        #expect(EntityTag(headerValue: "unquoted") == nil)
        #expect(strong1.description == "\"1\"")
        #expect(weak1.description == "W/\"1\"")
    }

    @Test("validators: If-Range prefers a strong ETag, falls back to a valid date, never a weak tag")
    func validators() {
        let both = Validators(headers: ["ETag": "\"v1\"", "Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT"])
        #expect(both.ifRangeValue == "\"v1\"")
        #expect(Validators(headers: ["ETag": "W/\"v1\"", "Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT"]).ifRangeValue
            == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(Validators(headers: ["ETag": "W/\"v1\""]).ifRangeValue == nil)
        #expect(both.satisfiesIfRange("\"v1\""))
        #expect(!both.satisfiesIfRange("\"v2\""))
        #expect(!both.satisfiesIfRange("W/\"v1\""))
        #expect(both.satisfiesIfRange("Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(!both.satisfiesIfRange("Sun, 06 Nov 1994 08:49:38 GMT"))
        #expect(both.matches(Validators(headers: ["ETag": "\"v1\""])))
        #expect(!both.matches(Validators(headers: ["ETag": "\"v2\""])))
        #expect(!both.matches(Validators()))
    }

    @Test("IMF-fixdate round trips (RFC 9110 §5.6.7 example)")
    func dates() throws {
        let date = try #require(HTTPDate("Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(date.secondsSince1970 == 784_111_777)
        #expect(date.description == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate(secondsSince1970: 0).description == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate(secondsSince1970: 1_795_910_400).description == "Sun, 29 Nov 2026 00:00:00 GMT")
        #expect(HTTPDate("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        #expect(HTTPDate("Sun, 06 Nov 1994 25:49:37 GMT") == nil)
    }
}

@Suite("HTTP URLs", .timeLimit(.minutes(1)))
struct HTTPURLTests {
    @Test("parses scheme, host, port and target")
    func parse() throws {
        let url = try HTTPURL("https://[::1]:8443/a/b?x=1#frag")
        #expect(url.isSecure && url.host == "::1" && url.port == 8443 && url.target == "/a/b?x=1")
        #expect(url.hostHeader == "[::1]:8443")
        #expect(try HTTPURL("http://example.com").target == "/")
        #expect(try HTTPURL("http://example.com?q").target == "/?q")
        #expect(try HTTPURL("http://h/x/file.bin?v=2").lastPathComponent == "file.bin")
        #expect(throws: HTTPURL.ParseError.self) { try HTTPURL("ftp://h/") }
        #expect(throws: HTTPURL.ParseError.self) { try HTTPURL("http://user@h/") }
        #expect(throws: HTTPURL.ParseError.self) { try HTTPURL("http://h:70000/") }
        #expect(throws: HTTPURL.ParseError.self) { try HTTPURL("http://h/a b") }
    }

    /// RFC 3986 §5.4.1 normal examples that a Location header can carry.
    @Test("resolves redirect references per RFC 3986 §5.4.1", arguments: [
        ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"), ("/g", "http://a/g"),
        ("//g", "http://g/"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"), ("..", "http://a/b/"),
        ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../g", "http://a/g"), ("https://other:8443/x", "https://other:8443/x"),
    ])
    func resolve(reference: String, expected: String) throws {
        let base = try HTTPURL("http://a/b/c/d;p?q")
        #expect(try base.resolving(reference).description == expected)
    }
}

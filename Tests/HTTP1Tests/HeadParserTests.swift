import HTTP1
import Testing

@Suite("HTTP/1.1 head parser", .timeLimit(.minutes(1)))
struct HeadParserTests {
    let response = Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection:  Upgrade \r\nX-Empty:\r\n\r\nFRAMES".utf8)

    @Test("parses a response fed all at once or byte by byte, leaving what follows")
    func response101() throws {
        for step in [response.count, 1, 7] {
            var parser = HTTPHeadParser()
            var buffer: [UInt8] = []
            var result: (head: HTTPResponseHead, length: Int)?
            for start in stride(from: 0, to: response.count, by: step) where result == nil {
                buffer += response[start..<min(response.count, start + step)]
                result = try parser.parseResponse(buffer)
            }
            let parsed = try #require(result)
            #expect(parsed.head.status == 101)
            #expect(parsed.head.reason == "Switching Protocols")
            #expect(parsed.head.headers["connection"] == "Upgrade")
            #expect(parsed.head.headers["X-Empty"] == "")
            #expect(Array(response[parsed.length...]) == Array("FRAMES".utf8))
        }
    }

    @Test("bad heads are rejected with the offending byte offset", arguments: [
        ("HTTP/1.1 1O1 Nope\r\n\r\n", 9, "three digits"),
        ("HTTP/2 101 X\r\n\r\n", 0, "not HTTP/1.x"),
        ("HTTP/1.1 101 X\r\nBad Name: v\r\n\r\n", 16, "invalid header name"),
        ("HTTP/1.1 101 X\r\nNoColon\r\n\r\n", 16, "without a colon"),
        ("HTTP/1.1 101 X\r\nA: b\r\n folded\r\n\r\n", 22, "folding"),
        ("HTTP/1.1 101 X\nA: b\r\n\r\n", 14, "bare LF"),
        ("HTTP/1.1 101 X\r\nA: b\u{1}c\r\n\r\n", 20, "control character"),
    ])
    func badHeads(text: String, offset: Int, reason: String) {
        var parser = HTTPHeadParser()
        let error = #expect(throws: HTTPParseError.self) { _ = try parser.parseResponse(Array(text.utf8)) }
        #expect(error?.offset == offset)
        #expect(error?.reason.contains(reason) == true, "\(error?.reason ?? "")")
    }

    @Test("OWS is trimmed per byte: a space before a combining mark goes, the mark stays (and survives a reparse)")
    func owsBeforeCombiningMark() throws {
        // Fuzz/Corpus/HTTPHead/ows-before-combining-mark: " \u{05AC}" is one Character, so a per-Character trim
        // kept the space, and serialize -> parse changed the value.
        let wire = Array("HTTP/1.1 200 OK\r\nA: \u{05AC}x\t \r\nB:\u{0301}\r\nC:\t \u{0301} \u{0301}\r\n\r\n".utf8)
        var parser = HTTPHeadParser()
        let head = try #require(try parser.parseResponse(wire)).head
        #expect(Array(try #require(head.headers["A"]).utf8) == [0xD6, 0xAC, 0x78])
        #expect(Array(try #require(head.headers["B"]).utf8) == [0xCC, 0x81])
        #expect(Array(try #require(head.headers["C"]).utf8) == [0xCC, 0x81, 0x20, 0xCC, 0x81])
        var again = HTTPHeadParser()
        #expect(try again.parseResponse(head.serialized())?.head == head)
    }

    @Test("limits: head size and header count, enforced before more is buffered")
    func limits() {
        var parser = HTTPHeadParser(maximumHeadSize: 64, maximumHeaderCount: 2)
        let huge = Array(("HTTP/1.1 101 X\r\nA: " + String(repeating: "x", count: 100)).utf8)
        let error = #expect(throws: HTTPParseError.self) { _ = try parser.parseResponse(huge) }
        #expect(error?.reason.contains("exceeds 64 bytes") == true)
        var counting = HTTPHeadParser(maximumHeadSize: 1024, maximumHeaderCount: 2)
        let many = Array("HTTP/1.1 101 X\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n".utf8)
        let countError = #expect(throws: HTTPParseError.self) { _ = try counting.parseResponse(many) }
        #expect(countError?.reason.contains("more than 2") == true)
    }

    @Test("requests: request line and headers; list values")
    func request() throws {
        var parser = HTTPHeadParser()
        let text = Array("GET /chat?x=1 HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Upgrade\r\nConnection: close\r\n\r\n".utf8)
        let parsed = try #require(try parser.parseRequest(text))
        #expect(parsed.head.method == "GET")
        #expect(parsed.head.target == "/chat?x=1")
        #expect(parsed.head.headers.listValues("connection") == ["keep-alive", "Upgrade", "close"])
        #expect(parsed.head.headers.listContains("Connection", token: "upgrade"))
        #expect(parsed.length == text.count)
        var bad = HTTPHeadParser()
        #expect(throws: HTTPParseError.self) { _ = try bad.parseRequest(Array("GET /\r\n\r\n".utf8)) }
    }

    @Test("a request target with a control character (tab, NUL, DEL, CR) is refused at its byte offset", arguments: [
        ("GET /a\tb HTTP/1.1\r\nHost: h\r\n\r\n", 6),
        ("GET /files/a\u{0}b HTTP/1.1\r\nHost: h\r\n\r\n", 12),
        ("GET /\u{7F} HTTP/1.1\r\nHost: h\r\n\r\n", 5),
        ("PUT /up\u{1}load HTTP/1.1\r\nHost: h\r\n\r\n", 7),
    ])
    func requestTargetControlCharacters(text: String, offset: Int) throws {
        var parser = HTTPHeadParser()
        #expect(throws: HTTPParseError(offset: offset, reason: "control character in the request target")) {
            _ = try parser.parseRequest(Array(text.utf8))
        }
        var good = HTTPHeadParser()
        #expect(try good.parseRequest(Array("GET /?=&%zz HTTP/1.1\r\nHost: h\r\n\r\n".utf8))?.head.target == "/?=&%zz")
    }
}

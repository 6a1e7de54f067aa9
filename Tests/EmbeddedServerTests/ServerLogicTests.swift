import Crypto
@testable import EmbeddedServer
import Foundation
import Testing

/// The embedded server's pure pieces, byte-exact: query parsing, the streaming multipart scanner, JSON escaping.
@Suite("Embedded server logic (no sockets)", .timeLimit(.minutes(1)))
struct ServerLogicTests {
    @Test("query shapes parse without a trap; bad chaos values name their parameter", arguments: [
        ("/?=", [String: String]()), ("/?", [:]), ("/?&&", [:]), ("/?=x&a", ["a": ""]), ("/x?a=1&a=2", ["a": "2"]),
        ("/?a=%", ["a": "%"]), ("/?%", ["%": ""]), ("/?a==b", ["a": "=b"]), ("/?&a=1&", ["a": "1"]),
    ])
    func queryShapes(target: String, expected: [String: String]) throws {
        #expect(HTTPQuery(target: target).items == expected)
    }

    @Test("chaos overrides: throttle=0 is no cap; negative, NaN, huge and out-of-range values are refused by name")
    func chaosOverrides() throws {
        #expect(try HTTPQuery(target: "/?throttle=0").chaos(over: HTTPChaosOptions(throttleBytesPerSecond: 5)).throttleBytesPerSecond == nil)
        #expect(try HTTPQuery(target: "/?drop_after=7&fail_rate=0.5").chaos(over: HTTPChaosOptions()).dropAfterBytes == 7)
        for (target, parameter) in [("/?drop_after=-1", "drop_after"), ("/?throttle=99999999999999999999", "throttle"),
                                    ("/?fail_rate=nan", "fail_rate"), ("/?fail_rate=2", "fail_rate"), ("/?throttle=", "throttle")] {
            #expect(throws: QueryError.self, "\(target)") { _ = try HTTPQuery(target: target).chaos(over: HTTPChaosOptions()) }
            do { _ = try HTTPQuery(target: target).chaos(over: HTTPChaosOptions()) } catch { #expect(error.parameter == parameter) }
        }
        #expect(throws: QueryError.self) { _ = try HTTPQuery(target: "/?seed=18446744073709551616").seed() }
        #expect(try HTTPQuery(target: "/?seed=18446744073709551615").seed() == .max)
    }

    @Test("pacing never traps: a rate of 0 waits nothing, a huge count at 1 B/s saturates")
    func pacing() {
        #expect(pacingDelay(bytes: 1000, bytesPerSecond: 0) == .zero)
        #expect(pacingDelay(bytes: 1000, bytesPerSecond: 1000) == .seconds(1))
        #expect(pacingDelay(bytes: .max, bytesPerSecond: 1) == .seconds(365 * 24 * 3600))
    }

    static let body = Array(("preamble\r\n--B0undary\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nfirst\r\n--B0undary\r\n"
        + "Content-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        + "second\r\n--B0undar\r\n--B0undary--\r\nepilogue").utf8)

    @Test("the multipart scanner finds the same parts fed all at once, byte by byte, or in random pieces")
    func multipartFeeds() throws {
        var whole = MultipartScanner(boundary: "B0undary")
        whole.feed(Self.body[...])
        let expected = [
            MultipartScanner.Part(name: "x", fileName: nil, bytes: 5, sha256: Crypto.hex(Crypto.sha256(Array("first".utf8)))),
            MultipartScanner.Part(name: "file", fileName: "a.bin", bytes: 17,
                                  sha256: Crypto.hex(Crypto.sha256(Array("second\r\n--B0undar".utf8)))),
        ]
        #expect(whole.parts == expected)
        var dripped = MultipartScanner(boundary: "B0undary")
        for byte in Self.body { dripped.feed([byte][...]) }
        #expect(dripped.parts == expected)
        var random = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var pieces = MultipartScanner(boundary: "B0undary")
            var index = 0
            while index < Self.body.count {
                let end = min(Self.body.count, index + Int.random(in: 1...40, using: &random))
                pieces.feed(Self.body[index..<end])
                index = end
            }
            #expect(pieces.parts == expected)
        }
    }

    @Test("a part's header block trickled byte by byte is searched once, not again from its start on every byte (was ~32 M compares for 8 KiB)")
    func trickledHeaderBlockLinear() {
        var scanner = MultipartScanner(boundary: "B")
        let header = "--B\r\nContent-Disposition: form-data; name=\"n\"\r\nX-Pad: " + String(repeating: "p", count: 8000) + "\r\n\r\nbody\r\n--B--\r\n"
        for byte in Array(header.utf8) { scanner.feed([byte][...]) }
        #expect(scanner.parts.map(\.name) == ["n"] && scanner.parts.first?.bytes == 4)
        #expect(scanner.headerSearchWork < 4 * header.utf8.count, "\(scanner.headerSearchWork) bytes searched for \(header.utf8.count)")
        // CRLFCRLF split across feeds at every position is still found.
        for split in 1..<6 {
            var pieces = MultipartScanner(boundary: "B")
            let bytes = Array("--B\r\nA: 1\r\n\r\nxy\r\n--B--".utf8)
            let at = bytes.count - 12 + split
            pieces.feed(bytes[..<at])
            pieces.feed(bytes[at...])
            #expect(pieces.parts.first?.bytes == 2, "split at \(at)")
        }
    }

    @Test("boundaries: 1 to 70 bytes (RFC 2046), quoted or not; longer, empty or missing is refused")
    func boundaries() throws {
        #expect(try MultipartScanner.boundary(contentType: "multipart/form-data; boundary=abc") == "abc")
        #expect(try MultipartScanner.boundary(contentType: "multipart/form-data; boundary=\"\(String(repeating: "q", count: 70))\"")?.count == 70)
        #expect(try MultipartScanner.boundary(contentType: "application/json") == nil)
        for bad in ["multipart/form-data; boundary=\(String(repeating: "q", count: 71))", "multipart/form-data; boundary=\"\"",
                    "multipart/form-data"] {
            #expect(throws: MultipartError.self, "\(bad)") { _ = try MultipartScanner.boundary(contentType: bad) }
        }
    }

    @Test("a body of only 'a's with no delimiter keeps at most the delimiter's length buffered (linear, bounded)")
    func multipartBounded() {
        var scanner = MultipartScanner(boundary: String(repeating: "a", count: 70) + "b")
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64 * 1024)
        for _ in 0..<64 { scanner.feed(chunk[...]) }
        #expect(scanner.parts.isEmpty)
        #expect(scanner.pendingCount < 80)
    }

    @Test("names a client chose are JSON-escaped")
    func escaping() throws {
        let name = "a\"b\\c\u{1}\n\u{2028}é"
        let json = "{\"n\":\(jsonString(name))}"
        let decoded = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String]
        #expect(decoded?["n"] == name)
        #expect(jsonString("a\"b") == "\"a\\\"b\"")
    }

    @Test("file names: one plain component only")
    func fileNames() {
        for good in ["a.bin", "x y", "ü"] { #expect(isPlainFileName(good), "\(good)") }
        for bad in ["", ".", "..", ".hidden", "a/b", "a%2fb", "a\u{0}b", "a\tb", "a\\b", String(repeating: "n", count: 256)] {
            #expect(!isPlainFileName(bad), "\(bad.debugDescription)")
        }
    }
}

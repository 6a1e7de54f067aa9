import JSON
import Testing

@Suite("JSON values", .timeLimit(.minutes(1)))
struct JSONTests {
    @Test("parses every kind, keeps key order, and formats back deterministically")
    func roundTrip() throws {
        let text = #"{"b": [1, -2.5, 3e2, true, false, null], "a": {"z": "x\ny\u00e9\ud83d\ude00", "y": {}}, "c": []}"#
        let value = try JSONValue(parsing: text)
        #expect(value.objectValue?.keys == ["b", "a", "c"])
        #expect(value["b"]?.arrayValue == [1, -2.5, 300, true, false, nil])
        #expect(value["a"]?["z"]?.stringValue == "x\nyé😀")
        let compact = value.formatted(pretty: false)
        #expect(compact == #"{"b":[1,-2.5,300,true,false,null],"a":{"z":"x\nyé😀","y":{}},"c":[]}"#)
        #expect(try JSONValue(parsing: value.formatted()) == value)
        #expect(JSONValue.string("\u{01}\"\\").formatted() == #""\u0001\"\\""#)
        // One character to escape, alone in plain text: the writer's no-escape run must not take it.
        for (text, written) in [("a\\b", #""a\\b""#), ("q\"", #""q\"""#), ("\u{7F}", #""\u007f""#), ("tab\t", #""tab\t""#),
                                ("plain é", #""plain é""#)] {
            #expect(JSONValue.string(text).formatted() == written, "\(text)")
        }
    }

    @Test("syntax errors name the line and column", arguments: [
        ("{\"a\": 1,}", 1, 9, "expected a key in quotes, found '}'"),
        ("{\n  \"a\": tru\n}", 2, 8, "expected 'true'"),
        ("{\"a\": 1} x", 1, 10, "unexpected 'x' after the document"),
        ("{\"a\": 1, \"a\": 2}", 1, 10, "the key \"a\" appears twice"),
        ("[01]", 1, 2, "a number cannot have leading zeros"),
        ("\"abc", 1, 1, "unterminated string"),
        ("\"\\ud800\"", 1, 2, "a high surrogate without its low surrogate"),
        ("", 1, 1, "expected a value, found end of input"),
        ("{\"a\":\"\u{01}\"}", 1, 7, "control character 0x1 in a string (escape it)"),
    ])
    func syntaxErrors(text: String, line: Int, column: Int, reason: String) {
        do {
            _ = try JSONValue(parsing: text)
            Issue.record("parsed: \(text)")
        } catch {
            #expect(error.line == line && error.column == column && error.reason == reason, "\(error)")
        }
    }

    @Test("strings: raw UTF-8 is validated run by run around escapes, and invalid bytes name the run's offset",
          arguments: [
              ([0x22, 0x61, 0x62, 0xFF, 0x63, 0x22], 1),  // a stray byte
              ([0x22, 0xF0, 0x9F, 0x98, 0x22], 1),  // a truncated 4-byte sequence (repaired, it is as long)
              ([0x22, 0xC0, 0xAF, 0x22], 1),  // an overlong '/'
              ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),  // an encoded surrogate
              ([0x22, 0x61, 0x5C, 0x6E, 0x62, 0xC3, 0x22], 4),  // after an escape: the run that follows it
              ([0x22, 0x9F, 0x5C, 0x6E, 0x22], 1),  // before an escape: a lone continuation byte
          ] as [([UInt8], Int)])
    func invalidUTF8(bytes: [UInt8], offset: Int) {
        do {
            _ = try JSONValue(parsing: bytes)
            Issue.record("parsed: \(bytes)")
        } catch {
            #expect(error.offset == offset && error.reason == "invalid UTF-8 in a string", "\(error)")
        }
    }

    @Test("strings: raw and escaped text in any order decode to the same scalars")
    func stringRuns() throws {
        let cases: [(String, String)] = [
            (#""""#, ""), (#""plain""#, "plain"), (#""é😀""#, "é😀"), (#""\u00e9""#, "é"),
            (#""é\u00e9😀\n""#, "éé😀\n"), (#""\"quoted\" and \\ back""#, "\"quoted\" and \\ back"),
            (#""a\tb\/c""#, "a\tb/c"), (#""\ud83d\ude00x""#, "😀x"),
        ]
        for (text, expected) in cases {
            #expect(try JSONValue(parsing: text).stringValue == expected, "\(text)")
            #expect(try JSONValue(parsing: Array(text.utf8)).stringValue == expected, "\(text) as bytes")
        }
    }

    @Test("numbers: integers of up to 18 digits read from their digits equal what the text reads as a Double",
          arguments: ["0", "-0", "7", "-7", "123456", "999999999999999", "-999999999999999", "9007199254740993",
                      "123456789012345679", "-999999999999999999", "1234567890123456789", "12345678901234567890",
                      "-1.0", "2.5e3", "1E2", "0.1", "-0.0"])
    func numbers(text: String) throws {
        let value = try JSONValue(parsing: text).numberValue
        #expect(value == Double(text)!, "\(text)")
        #expect(value?.sign == Double(text)!.sign, "\(text): the sign of zero")
    }

    @Test("input that is not contiguous (a lazy or reversed collection) parses as its bytes do")
    func nonContiguousInput() throws {
        let text = #"{"k": [1, "two", {"three": null}]}"#
        let reversed = Array(text.utf8.reversed()).reversed()  // a ReversedCollection: no contiguous storage
        #expect(reversed.withContiguousStorageIfAvailable { _ in true } == nil)
        #expect(try JSONValue(parsing: reversed) == JSONValue(parsing: text))
        #expect(try JSONValue(parsing: text.utf8.lazy.map { $0 }) == JSONValue(parsing: text))
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: "[1,]".utf8.reversed().reversed()) }
    }

    @Test("nesting beyond the limit is refused, not recursed into")
    func depthLimit() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: deep) }
        #expect((try? JSONValue(parsing: String(repeating: "[", count: 10) + String(repeating: "]", count: 10))) != nil)
    }

    @Test("integers are exact, fractions are not integers")
    func integers() throws {
        #expect(try JSONValue(parsing: "9007199254740991").integerValue == 9_007_199_254_740_991)
        #expect(try JSONValue(parsing: "1.5").integerValue == nil)
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: "1e400") }
    }

    @Test("objects small and large (past the index threshold): lookups, replacement, removal and order agree", arguments: [3, 8, 9, 40])
    func objectStorage(size: Int) throws {
        var object = JSONObject()
        for i in 0..<size { object["k\(i)"] = .number(Double(i)) }
        #expect(object.count == size && object.keys == (0..<size).map { "k\($0)" })
        for i in 0..<size { #expect(object["k\(i)"] == .number(Double(i))) }
        #expect(object["missing"] == nil)
        object["k0"] = "replaced"  // in place: the order stays
        #expect(object.keys.first == "k0" && object["k0"] == "replaced" && object.count == size)
        object["k1"] = nil  // removed: the later members move up and are still found
        #expect(object.count == size - 1 && object["k1"] == nil && !object.keys.contains("k1"))
        for i in 2..<size { #expect(object["k\(i)"] == .number(Double(i)), "k\(i) after a removal") }
        object["new"] = true
        #expect(object.keys.last == "new" && object["new"] == true)
        // Equal: the same members in the same order; another order is another object.
        var copy = JSONObject()
        for (key, value) in object.members { copy[key] = value }
        #expect(copy == object)
        var reordered = JSONObject()
        for (key, value) in object.members.reversed() { reordered[key] = value }
        #expect(reordered != object || object.count < 2)
        // A duplicate key is still an error at its offset, however large the object.
        let text = "{" + (0..<size).map { "\"k\($0)\": \($0)" }.joined(separator: ", ") + ", \"k\(size - 1)\": 0}"
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: text) }
    }
}

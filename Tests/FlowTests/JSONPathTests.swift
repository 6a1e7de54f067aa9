import Flow
import JSON
import Testing

@Suite("JSON paths", .timeLimit(.minutes(2)))
struct JSONPathTests {
    let document: JSONValue = [
        "a": ["b": [10, ["c": "deep"]]], "with space": 1, "quo\"te": 2, "x-y_z9": 3, "": 4, "é": 5, "list": [],
    ]

    func evaluate(_ path: String) -> JSONValue? { JSONPath.parse(path).success!.evaluate(document) }

    @Test("names, indexes and quoted keys walk the value")
    func evaluation() {
        #expect(evaluate("$") == document)
        #expect(evaluate("$.a.b[0]") == 10)
        #expect(evaluate("$.a.b[1].c") == "deep")
        #expect(evaluate(#"$["with space"]"#) == 1)
        #expect(evaluate(#"$["quo\"te"]"#) == 2)
        #expect(evaluate("$.x-y_z9") == 3)
        #expect(evaluate(#"$[""]"#) == 4)
        #expect(evaluate(#"$["\u00e9"]"#) == 5)
        #expect(evaluate(#"$["a"]["b"][1]["c"]"#) == "deep")
    }

    @Test("absent keys, out-of-range indexes and kind mismatches give nil")
    func absent() {
        #expect(evaluate("$.missing") == nil)
        #expect(evaluate("$.a.b[2]") == nil)
        #expect(evaluate("$.list[0]") == nil)
        #expect(evaluate("$.a[0]") == nil)
        #expect(evaluate("$.a.b.c") == nil)
        #expect(evaluate("$.a.b[0].c") == nil)
        #expect(evaluate("$[9223372036854775807]") == nil)
    }

    @Test("the parsed components and description", arguments: [
        ("$.a[0][\"k\"]", [JSONPath.Component.key("a"), .index(0), .key("k")]),
        ("$", []), ("$[12]", [.index(12)]), ("$.0", [.key("0")]),
    ])
    func components(text: String, components: [JSONPath.Component]) {
        let path = JSONPath.parse(text).success
        #expect(path?.components == components)
        #expect(path?.description == text)
    }

    @Test("errors carry the byte offset of the problem", arguments: [
        ("", 0), ("a.b", 0), (".a", 0), ("$.", 2), ("$a", 1), ("$..a", 2), ("$.a.*", 4), ("$[", 2), ("$[]", 2),
        ("$[-1]", 2), ("$[1", 3), ("$[1x]", 3), ("$[99999999999999999999]", 2), ("$[\"a\"", 5), ("$[\"a", 2),
        ("$[\"a\\q\"]", 4), ("$[?(@.a)]", 2), ("$.a b", 3), ("$['a']", 2), ("$.é", 2), ("$.a[0].", 7),
    ])
    func errors(text: String, offset: Int) {
        let error = JSONPath.parse(text).failure
        #expect(error?.offset == offset, "\(text): \(String(describing: error))")
    }

    @Test("deep paths evaluate without recursion, and the component cap is an error")
    func depth() {
        var value: JSONValue = "bottom"
        for _ in 0..<200 { value = ["n": [value]] }
        let text = "$" + String(repeating: ".n[0]", count: 100)
        #expect(JSONPath.parse(text).success?.evaluate(value) != nil)
        let tooLong = "$" + String(repeating: "[0]", count: JSONPath.maximumComponents + 1)
        #expect(JSONPath.parse(tooLong).failure?.message.contains("at most") == true)
        #expect(JSONPath.parse("$" + String(repeating: "[0]", count: JSONPath.maximumComponents)).success != nil)
    }
}

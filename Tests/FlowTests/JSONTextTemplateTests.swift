import Flow
import JSON
import Testing

/// A `send.json` compiled to text must write exactly the bytes of expanding the value and formatting it compactly.
@Suite("JSON text templates", .timeLimit(.minutes(2)))
struct JSONTextTemplateTests {
    private func bothWays(_ document: String, _ scope: TestScope) throws -> (compiled: String?, reference: String?) {
        let template = JSONTemplate.parse(try JSONValue(parsing: document)).success!
        var first = scope
        var second = scope
        let compiled = JSONTextTemplate(template).expand(&first)
        let reference = template.expand(&second).map { $0.formatted(pretty: false) }
        #expect(compiled.failure?.name == reference.failure?.name)
        return (compiled.success, reference.success)
    }

    @Test("the same bytes as expanding the value and formatting it",
          arguments: [
              #"{"type": "say", "room": "${room}", "text": "hello ${iteration} from ${vu}", "n": "${seq}"}"#,
              #"{"nested": {"a": ["${vu}", 1.5, null, true, "x${obj}y"], "b key \"q\"": "${obj}"}, "k": {}}"#,
              #"["${vu}", {"e": []}, "tab\t${text}\u0001 é", "$$${seq}"]"#,
              #"{"only": "${uuid}", "r": "${random.int(1,9)}", "s": "${random.string(5)}", "t": "${now_ms}"}"#,
              #""${text} and ${vu}""#,
              #"{"missing": "${nothing}"}"#,
              // Typed holes: integers saturated at 2^53-1, a captured string that needs escapes, an object.
              #"{"wide": "${random.int(-9223372036854775808,9223372036854775807)}", "q": "${text}", "o": "${obj}"}"#,
              #"["${random.int(9007199254740000,9223372036854775807)}", "${room}", "${nothing2}"]"#,
          ])
    func sameBytes(document: String) throws {
        var scope = TestScope()
        scope.variables = ["room": "r1", "obj": ["a": [1, "two"], "q\"": .null], "text": "line\nbreak \"quoted\" \\"]
        let (compiled, reference) = try bothWays(document, scope)
        #expect(compiled == reference)
        if !document.contains("nothing") { #expect(compiled != nil) }
    }

    @Test("typed integer holes saturate at ±(2^53−1), as every integer written to JSON does")
    func saturatedIntegers() throws {
        var scope = TestScope()
        scope.sequence = .max
        scope.nowMilliseconds = .min
        let template = JSONTemplate.parse(try JSONValue(parsing: #"["${seq}", "${now_ms}", "${vu}"]"#)).success!
        #expect(JSONTextTemplate(template).expand(&scope).success == "[9007199254740991,-9007199254740991,7]")
    }
}

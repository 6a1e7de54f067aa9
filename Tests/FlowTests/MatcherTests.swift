import Flow
import JSON
import Testing

@Suite("Message matchers", .timeLimit(.minutes(2)))
struct MatcherTests {
    func path(_ text: String) -> JSONPath { JSONPath.parse(text).success! }
    func regex(_ text: String) -> FlowRegex { FlowRegex.compile(text).success! }
    func condition(_ text: String, _ test: JSONCondition.Test) -> JSONCondition { JSONCondition(path: path(text), test: test) }
    func equals(_ value: JSONValue) -> JSONCondition.Test { .equals(JSONTemplate.parse(value).success!) }

    func holds(_ conditions: [JSONCondition], on value: JSONValue) -> Bool {
        var scope = TestScope()
        return conditions.allHold(on: value, scope: &scope)
    }

    func match(_ matcher: MessageMatcher, _ message: FlowMessage, captures: [Capture] = []) -> MatchOutcome {
        var parsed = ParsedMessage(message)
        var scope = TestScope()
        return matcher.match(&parsed, captures: captures, scope: &scope)
    }

    @Test("equals: numbers by value, strings exactly, objects regardless of key order, arrays in order")
    func equality() {
        let value: JSONValue = ["n": 1, "f": 1.5, "s": "é", "o": ["a": 1, "b": [true, nil]], "l": [1, 2]]
        #expect(holds([condition("$.n", equals(1.0))], on: value))
        #expect(holds([condition("$.n", equals(1))], on: value))
        #expect(!holds([condition("$.n", equals("1"))], on: value))
        #expect(!holds([condition("$.n", equals(2))], on: value))
        #expect(holds([condition("$.f", equals(1.5))], on: value))
        #expect(holds([condition("$.s", equals("é"))], on: value))
        #expect(!holds([condition("$.s", equals("e\u{301}"))], on: value))
        #expect(holds([condition("$.o", equals(["b": [true, nil], "a": 1]))], on: value))
        #expect(!holds([condition("$.o", equals(["b": [nil, true], "a": 1]))], on: value))
        #expect(!holds([condition("$.o", equals(["a": 1]))], on: value))
        #expect(!holds([condition("$.o", equals(["a": 1, "b": [true, nil], "c": 0]))], on: value))
        #expect(holds([condition("$.l", equals([1.0, 2]))], on: value))
        #expect(!holds([condition("$.l", equals([2, 1]))], on: value))
        #expect(!holds([condition("$.missing", equals(nil))], on: value))
        #expect(holds([condition("$.o.b[1]", equals(nil))], on: value))
    }

    @Test("equals and oneOf expand their templates from the scope; an undefined one is false")
    func templatedValues() {
        var scope = TestScope()
        scope.variables["room"] = "r7"
        let conditions = [condition("$.room", equals("${room}")), condition("$.vu", equals("${vu}"))]
        #expect(conditions.allHold(on: ["room": "r7", "vu": 7], scope: &scope))
        #expect(!conditions.allHold(on: ["room": "r7", "vu": "7"], scope: &scope))
        let undefined = [condition("$.x", equals("${nope}"))]
        #expect(!undefined.allHold(on: ["x": "anything"], scope: &scope))
        let oneOf = [condition("$.t", .oneOf([JSONTemplate.parse("a").success!, JSONTemplate.parse("${room}").success!]))]
        #expect(oneOf.allHold(on: ["t": "r7"], scope: &scope))
        #expect(oneOf.allHold(on: ["t": "a"], scope: &scope))
        #expect(!oneOf.allHold(on: ["t": "b"], scope: &scope))
        #expect(!oneOf.allHold(on: [:], scope: &scope))
    }

    @Test("exists, regex on strings only, comparisons on numbers only")
    func tests() {
        let value: JSONValue = ["n": 5, "s": "abc123", "z": nil, "t": "5"]
        #expect(holds([condition("$.z", .exists(true)), condition("$.q", .exists(false))], on: value))
        #expect(!holds([condition("$.q", .exists(true))], on: value))
        #expect(!holds([condition("$.z", .exists(false))], on: value))
        #expect(holds([condition("$.s", .regex(regex("[0-9]+$")))], on: value))
        #expect(!holds([condition("$.n", .regex(regex("5")))], on: value))
        #expect(!holds([condition("$.q", .regex(regex("")))], on: value))
        for (comparison, limit, expected) in [(JSONCondition.NumericComparison.less, 5.0, false), (.less, 6, true),
                                              (.lessOrEqual, 5, true), (.greater, 5, false), (.greater, 4.5, true),
                                              (.greaterOrEqual, 5, true), (.greaterOrEqual, 5.5, false)] {
            #expect(holds([condition("$.n", .compare(comparison, limit))], on: value) == expected, "\(comparison) \(limit)")
            #expect(!holds([condition("$.t", .compare(comparison, limit))], on: value))
        }
        #expect(holds([], on: value))
        #expect(!holds([condition("$.n", .exists(true)), condition("$.n", .compare(.less, 0))], on: value))
    }

    @Test("a JSON matcher takes only text holding a JSON document")
    func jsonMatcher() {
        let joined = MessageMatcher.json([condition("$.type", equals("joined"))])
        let captures = [Capture(variable: "room", source: .path(path("$.room")))]
        #expect(match(joined, .text(#"{"type":"joined","room":"r1"}"#), captures: captures) == .matched([("room", "r1")]))
        #expect(match(joined, .text(#"{"type":"left"}"#), captures: captures) == .noMatch)
        #expect(match(joined, .text("joined"), captures: captures) == .noMatch)
        #expect(match(joined, .binary(Array(#"{"type":"joined"}"#.utf8))) == .noMatch)
        #expect(match(joined, .text(#"{"type":"joined"}"#), captures: captures) == .captureMissing("room"))
        #expect(match(.json([]), .text("[1]")) == .matched([]))
        #expect(match(.json([]), .text(String(repeating: "[", count: 100) + String(repeating: "]", count: 100))) == .noMatch)
    }

    @Test("a text matcher captures its groups; a group that took no part is captureMissing")
    func textMatcher() {
        let hello = MessageMatcher.text(regex("^hello ([0-9]+)( (x))?"))
        let captures = [Capture(variable: "n", source: .group(1)), Capture(variable: "all", source: .group(0))]
        #expect(match(hello, .text("hello 42 there"), captures: captures) == .matched([("n", "42"), ("all", "hello 42")]))
        #expect(match(hello, .text("bye"), captures: captures) == .noMatch)
        #expect(match(hello, .binary(Array("hello 42".utf8)), captures: captures) == .noMatch)
        #expect(match(hello, .text("hello 1"), captures: [Capture(variable: "x", source: .group(3))]) == .captureMissing("x"))
        #expect(match(hello, .text("hello 1"), captures: [Capture(variable: "y", source: .group(9))]) == .captureMissing("y"))
        let jsonText = MessageMatcher.text(regex("^\\{"))
        #expect(match(jsonText, .text(#"{"a":[5]}"#), captures: [Capture(variable: "a", source: .path(path("$.a[0]")))])
            == .matched([("a", 5)]))
    }

    @Test("a binary matcher checks length and prefix")
    func binaryMatcher() {
        let matcher = MessageMatcher.binary(length: 3...4, prefix: [0xCA, 0xFE])
        #expect(match(matcher, .binary([0xCA, 0xFE, 0])) == .matched([]))
        #expect(match(matcher, .binary([0xCA, 0xFE, 0, 1])) == .matched([]))
        #expect(match(matcher, .binary([0xCA, 0xFE])) == .noMatch)
        #expect(match(matcher, .binary([0xCA, 0xFE, 0, 1, 2])) == .noMatch)
        #expect(match(matcher, .binary([0xCA, 0xFF, 0])) == .noMatch)
        #expect(match(matcher, .text("\u{CA}\u{FE}x")) == .noMatch)
        #expect(match(.binary(length: nil, prefix: []), .binary([])) == .matched([]))
        #expect(match(matcher, .binary([0xCA, 0xFE, 0]), captures: [Capture(variable: "v", source: .path(path("$")))])
            == .captureMissing("v"))
    }

    @Test("any matches every message; its path captures read the JSON if there is some")
    func anyMatcher() {
        #expect(match(.any, .binary([1])) == .matched([]))
        #expect(match(.any, .text("x")) == .matched([]))
        #expect(match(.any, .text(#"{"id":3}"#), captures: [Capture(variable: "id", source: .path(path("$.id")))])
            == .matched([("id", 3)]))
        #expect(match(.any, .text("x"), captures: [Capture(variable: "id", source: .path(path("$.id")))]) == .captureMissing("id"))
    }

    @Test("a message's JSON is parsed at most once however many matchers look")
    func parsedOnce() {
        var parsed = ParsedMessage(.text(#"{"type":"said","n":1}"#))
        var scope = TestScope()
        let matchers: [MessageMatcher] = [
            .json([condition("$.type", equals("joined"))]), .json([condition("$.type", equals("said"))]), .any,
        ]
        for matcher in matchers {
            _ = matcher.match(&parsed, captures: [Capture(variable: "n", source: .path(path("$.n")))], scope: &scope)
        }
        #expect(parsed.parseCount == 1)
        var notJSON = ParsedMessage(.text("nope"))
        #expect(notJSON.json() == nil && notJSON.json() == nil)
        #expect(notJSON.parseCount == 1)
        var text = ParsedMessage(.text("hello"))
        _ = MessageMatcher.text(regex("h")).match(&text, captures: [], scope: &scope)
        #expect(text.parseCount == 0)
    }

    @Test("captures from a preset payload: paths only")
    func payloadCaptures() {
        let payload: JSONValue = [["from": "abc", "text": "hi"]]
        #expect(capture([Capture(variable: "t", source: .path(path("$[0].text")))], from: payload) == .matched([("t", "hi")]))
        #expect(capture([Capture(variable: "t", source: .path(path("$[1]")))], from: payload) == .captureMissing("t"))
        #expect(capture([Capture(variable: "g", source: .group(0))], from: payload) == .captureMissing("g"))
        #expect(capture([], from: payload) == .matched([]))
        #expect(MatchOutcome.matched([("a", 1)]) != .matched([("b", 1)]))
        #expect(MatchOutcome.matched([("a", 1)]) != .matched([("a", 2)]))
    }
}

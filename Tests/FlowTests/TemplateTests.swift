import Flow
import JSON
import Testing

@Suite("Templates", .timeLimit(.minutes(2)))
struct TemplateTests {
    func expand(_ text: String, _ scope: TestScope = TestScope()) -> Result<String, TemplateFailure> {
        var scope = scope
        return Template.parse(text).success!.expand(&scope)
    }

    @Test("built-ins expand from the scope")
    func builtIns() {
        #expect(expand("hello ${seq} from ${vu} #${iteration} at ${now_ms}") == .success("hello 11 from 7 #3 at 1700000000123"))
        #expect(expand("plain") == .success("plain"))
        #expect(expand("$$ and $${vu} and $5 and $") == .success("$ and ${vu} and $5 and $"))
    }

    @Test("a missing variable or feeder column fails, naming it")
    func missing() {
        #expect(expand("r${room}") == .failure(TemplateFailure(name: "room")))
        #expect(expand("${users.token}") == .failure(TemplateFailure(name: "users.token")))
        var scope = TestScope()
        scope.variables["room"] = "r1"
        scope.feeders["users"] = ["token": "t0k"]
        #expect(expand("${room}/${users.token}", scope) == .success("r1/t0k"))
    }

    @Test("syntax errors name the byte offset")
    func syntaxErrors() {
        #expect(Template.parse("ab${vu").failure?.offset == 2)
        #expect(Template.parse("ab${}").failure?.message == "empty ${}")
        #expect(Template.parse("x${1a}").failure?.offset == 3)
        #expect(Template.parse("${random.int(5,1)}").failure != nil)
        #expect(Template.parse("${random.int(1,99999999999999999999)}").failure != nil)
        #expect(Template.parse("${random.string(0)}").failure != nil)
        #expect(Template.parse("${random.string(65537)}").failure != nil)
        #expect(Template.parse("${random.string(65536)}").success != nil)
    }

    @Test("a JSON string that is one placeholder keeps the value's type")
    func typedPlaceholder() {
        var scope = TestScope()
        scope.variables["obj"] = ["a": 1]
        let template = JSONTemplate.parse(["vu": "${vu}", "o": "${obj}", "s": "v${vu}", "c": "$$x"]).success!
        #expect(template.expand(&scope) == .success(["vu": 7, "o": ["a": 1], "s": "v7", "c": "$x"]))
    }
}

@Suite("Template built-ins and escaping", .timeLimit(.minutes(2)))
struct TemplateValueTests {
    @Test("uuid is a lowercase version-4 UUID drawn from the scope's generator")
    func uuid() {
        var scope = TestScope()
        scope.randomDraws = [.max, .max]
        let text = Template.parse("${uuid}").success!.expand(&scope).success!
        #expect(text == "ffffffff-ffff-4fff-bfff-ffffffffffff")
        #expect(scope.drawCount == 2)
        scope.randomDraws = [0, 0]
        #expect(Template.parse("${uuid}").success!.expand(&scope).success! == "00000000-0000-4000-8000-000000000000")
        var fresh = TestScope()
        let uuidTemplate = Template.parse("${uuid}").success!
        for _ in 0..<200 {
            let bytes = Array(uuidTemplate.expand(&fresh).success!.utf8)
            #expect(bytes.count == 36)
            #expect(bytes[14] == UInt8(ascii: "4"))
            #expect("89ab".utf8.contains(bytes[19]))
            #expect([8, 13, 18, 23].allSatisfy { bytes[$0] == UInt8(ascii: "-") })
            #expect(bytes.enumerated().allSatisfy { [8, 13, 18, 23].contains($0) || "0123456789abcdef".utf8.contains($1) })
        }
    }

    @Test("random.int stays in its bounds, including the extremes and the whole 64-bit range")
    func randomInteger() {
        var scope = TestScope()
        for (low, high) in [(Int64(1), Int64(6)), (-3, -3), (Int64.min, Int64.max), (Int64.max - 1, Int64.max), (-10, 10)] {
            let template = Template.parse("${random.int(\(low),\(high))}").success!
            for _ in 0..<500 {
                let value = Int64(template.expand(&scope).success!)!
                #expect(value >= low && value <= high)
            }
        }
        scope.randomDraws = [.max]
        #expect(Template.parse("${random.int(1,6)}").success!.expand(&scope) == .success("6"))
        scope.randomDraws = [0]
        #expect(Template.parse("${random.int( -5 , 6 )}").success!.expand(&scope) == .success("-5"))
        var seen = Set<String>()
        var counting = TestScope()
        let die = Template.parse("${random.int(1,6)}").success!
        for _ in 0..<600 { seen.insert(die.expand(&counting).success!) }
        #expect(seen == ["1", "2", "3", "4", "5", "6"])
    }

    @Test("random.string has n characters from [A-Za-z0-9]")
    func randomString() {
        var scope = TestScope()
        for length in [1, 2, 17, 65_536] {
            let text = Template.parse("${random.string(\(length))}").success!.expand(&scope).success!
            #expect(text.utf8.count == length)
            #expect(text.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            })
        }
    }

    @Test("syntax errors: offsets and messages", arguments: [
        ("${", 0), ("ab${vu", 2), ("${}", 2), ("x${1a}", 3), ("${a.b.c}", 5), ("${a..b}", 4), ("${a b}", 2),
        ("${random.int(5,1)}", 12), ("${random.int(1,2,3)}", 12), ("${random.int(1)}", 12), ("${random.int(a,2)}", 13),
        ("${random.int(1,99999999999999999999)}", 15), ("${random.int(+1,2)}", 13), ("${random.int(1,2}", 12),
        ("${random.string(0)}", 16), ("${random.string(65537)}", 16), ("${random.string(-1)}", 16),
        ("${random.token}", 2), ("${random.float(1,2)}", 2), ("é${}", 4), ("${vu}${", 5),
    ])
    func syntaxError(text: String, offset: Int) {
        let error = Template.parse(text).failure
        #expect(error?.offset == offset, "\(text): \(String(describing: error))")
    }

    @Test("names: variables, feeder columns, and built-ins")
    func names() {
        let template = Template.parse("${a}${_b9}${users.token}${vu}${iteration}${seq}${uuid}${now_ms}").success!
        #expect(template.references == [.variable("a"), .variable("_b9"), .feeder(source: "users", column: "token"),
                                        .vu, .iteration, .sequence, .uuid, .nowMilliseconds])
        #expect(!template.isConstant)
        #expect(Template.parse("no $$ placeholders").success!.isConstant)
        #expect(Template.parse("${random.int(-1,1)}${random.string(3)}").success!.references
            == [.randomInteger(-1...1), .randomString(3)])
    }

    @Test("values that are not strings are written as compact JSON in text")
    func nonStringValues() {
        var scope = TestScope()
        scope.variables = ["n": 42, "f": 1.5, "b": true, "z": nil, "o": ["a": [1, "x"]]]
        let text = Template.parse("${n} ${f} ${b} ${z} ${o}").success!.expand(&scope)
        #expect(text == .success(#"42 1.5 true null {"a":[1,"x"]}"#))
    }

    @Test("expanded strings are escaped by the JSON writer, never spliced into JSON text")
    func escaping() throws {
        let nasty = "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} del \u{7F} é 😀 \"},{\"x\":\""
        var scope = TestScope()
        scope.variables["v"] = .string(nasty)
        let template = JSONTemplate.parse(["text": "say: ${v}!", "whole": "${v}", "list": ["${v}"]]).success!
        let value = template.expand(&scope).success!
        let written = value.formatted(pretty: false)
        #expect(written.contains(#"\"},{\"x\":\""#))
        #expect(written.contains(#"\u0000"#) && written.contains(#"\u0007"#) && written.contains(#"\n"#))
        let reread = try JSONValue(parsing: written)
        #expect(reread == ["text": .string("say: " + nasty + "!"), "whole": .string(nasty), "list": [.string(nasty)]])
        #expect(reread.objectValue?.count == 3)
    }

    @Test("a single placeholder keeps its type: numbers, strings, feeder values, captured objects")
    func typed() {
        var scope = TestScope()
        scope.feeders["users"] = ["age": 30, "name": "ann"]
        scope.variables["list"] = [1, 2]
        let template = JSONTemplate.parse([
            "vu": "${vu}", "seq": "${seq}", "it": "${iteration}", "now": "${now_ms}", "age": "${users.age}",
            "name": "${users.name}", "list": "${list}", "n": "${random.int(4,4)}", "s": "${random.string(2)}",
            "mixed": "${vu}${vu}", "padded": " ${vu}", "constant": ["a", 1, nil, ["k": "$$"]],
        ]).success!
        let value = template.expand(&scope).success!
        #expect(value["vu"] == 7 && value["seq"] == 11 && value["it"] == 3 && value["now"] == 1_700_000_000_123)
        #expect(value["age"] == 30 && value["name"] == "ann" && value["list"] == [1, 2] && value["n"] == 4)
        #expect(value["s"]?.stringValue?.count == 2)
        #expect(value["mixed"] == "77" && value["padded"] == " 7")
        #expect(value["constant"] == ["a", 1, nil, ["k": "$"]])
        #expect(template.references.count == 12)
    }

    @Test("a failing placeholder deep inside a JSON template names the variable")
    func jsonFailure() {
        var scope = TestScope()
        let template = JSONTemplate.parse(["a": [1, ["b": "x${missing}"]]]).success!
        #expect(template.expand(&scope) == .failure(TemplateFailure(name: "missing")))
    }

    @Test("JSON template syntax errors carry the path of their string")
    func jsonSyntaxErrors() {
        let errors = JSONTemplate.parse(["a": [1, "${"], "b c": "${}", "ok": "${vu}", "d": ["e": "${1}"]]).failure
        #expect(errors?.map(\.path) == [".a[1]", #"["b c"]"#, ".d.e"])
        #expect(errors?.map(\.error.offset) == [0, 2, 2])
        #expect(JSONTemplate.parse("${").failure?.map(\.path) == [""])
    }

    @Test("a constant JSON value parses to one constant")
    func constantFolding() {
        #expect(JSONTemplate.parse(["a": [1, "x"], "b": nil]).success == .constant(["a": [1, "x"], "b": nil]))
        #expect(JSONTemplate.parse("a$$b").success == .constant("a$b"))
    }
}

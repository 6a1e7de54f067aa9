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

import Flow
import JSON
import Testing

/// Random and truncated inputs for every parser: none may trap (a trap kills the test process and fails the run).
/// Seeded, so a failure repeats; bounded in count.
@Suite("Flow parsers under random input", .timeLimit(.minutes(5)))
struct FlowFuzzTests {
    static let rounds = 20_000

    /// SplitMix64: a small seeded generator for the inputs.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Bytes mostly from the syntax's own characters, sometimes anything (invalid UTF-8 included).
    static func input(_ generator: inout Generator, alphabet: [UInt8], maximumLength: Int = 40) -> [UInt8] {
        let length = Int.random(in: 0...maximumLength, using: &generator)
        return (0..<length).map { _ in
            Int.random(in: 0..<8, using: &generator) == 0 ? UInt8.random(in: 0...255, using: &generator)
                : alphabet.randomElement(using: &generator)!
        }
    }

    static let templateAlphabet = Array("${}$().,-+0123456789 abvuseqidrnom_tx.random.int(random.string(é".utf8)
    static let pathAlphabet = Array("$.[]\"\\0123456789abc_-u é".utf8)
    static let csvAlphabet = Array("ab,\"\"\r\n\n1 é".utf8)
    static let jsonAlphabet = Array("{}[]\":,0123456789.eE-+ truefalsenull\\u\n\r é".utf8)

    @Test("templates: parse and, when they parse, expand as text and as JSON")
    func templates() {
        var generator = Generator(state: 1)
        var scope = TestScope()
        scope.variables = ["a": "x", "b": 1]
        let seeds = ["hello ${seq} from ${vu}", "${random.int(-5,5)}${random.string(3)}", "$${users.token}${a}"]
        for round in 0..<Self.rounds {
            let bytes = round < 3000
                ? Array(Array(seeds[round % seeds.count].utf8).prefix(round / seeds.count % 40))
                : Self.input(&generator, alphabet: Self.templateAlphabet)
            let text = String(decoding: bytes, as: UTF8.self)
            switch Template.parse(text) {
            case .failure(let error): #expect(error.offset >= 0 && error.offset <= text.utf8.count)
            case .success(let template):
                _ = template.expand(&scope)
                _ = JSONTemplate.parse([.string(text)]).success?.expand(&scope)
            }
        }
    }

    @Test("JSON paths: parse and evaluate")
    func paths() {
        var generator = Generator(state: 2)
        let document: JSONValue = ["a": [1, ["b": "c"]], "0": [[[]]]]
        for round in 0..<Self.rounds {
            let bytes = round < 2000
                ? Array(Array(#"$.a[1]["b"]["\u00e9\""][0]"#.utf8).prefix(round % 30))
                : Self.input(&generator, alphabet: Self.pathAlphabet)
            let text = String(decoding: bytes, as: UTF8.self)
            switch JSONPath.parse(text) {
            case .failure(let error): #expect(error.offset >= 0 && error.offset <= text.utf8.count)
            case .success(let path): _ = path.evaluate(document)
            }
        }
    }

    @Test("CSV and JSON lines tables: parse, and read every cell of what parses")
    func feeders() {
        var generator = Generator(state: 3)
        let csvSeed = Array("name,token\r\n\"Doe, Ann\",\"a\"\"b\"\r\nbob,\"two\nlines\"\n".utf8)
        let jsonSeed = Array("{\"a\":1,\"b\":[true]}\n\n{\"c\":\"\\u00e9\"}\r\n".utf8)
        for round in 0..<Self.rounds {
            let csv = round < 2000 ? Array(csvSeed.prefix(round % (csvSeed.count + 1)))
                : Self.input(&generator, alphabet: Self.csvAlphabet, maximumLength: 60)
            let jsonLines = round < 2000 ? Array(jsonSeed.prefix(round % (jsonSeed.count + 1)))
                : Self.input(&generator, alphabet: Self.jsonAlphabet, maximumLength: 60)
            for result in [FeederTable.parse(csv: csv, file: "f.csv"), FeederTable.parse(jsonLines: jsonLines, file: "f.jsonl")] {
                switch result {
                case .failure(let error): #expect(error.line >= 0)
                case .success(let table):
                    for row in 0...table.rowCount {
                        for column in table.columns { _ = table.value(row: row, column: column) }
                    }
                }
            }
        }
    }

    @Test("regex matching on random text, and message matching on random frames")
    func matching() {
        var generator = Generator(state: 4)
        let regexes = ["^(.)(.*)$", "(é)+|([0-9]+)", "a*b?c{0,2}", "^$"].map { FlowRegex.compile($0).success! }
        let path = JSONPath.parse("$.a[0]").success!
        let matchers: [MessageMatcher] = [
            .json([JSONCondition(path: path, test: .exists(true))]), .text(regexes[1]), .binary(length: 0...3, prefix: [0x7B]),
        ]
        var scope = TestScope()
        for _ in 0..<Self.rounds {
            let bytes = Self.input(&generator, alphabet: Self.jsonAlphabet, maximumLength: 30)
            let text = String(decoding: bytes, as: UTF8.self)
            for regex in regexes {
                if let groups = regex.firstMatch(in: text) { #expect(groups.count == regex.groupCount + 1) }
            }
            for message in [FlowMessage.text(text), .binary(bytes)] {
                var parsed = ParsedMessage(message)
                for matcher in matchers {
                    _ = matcher.match(&parsed, captures: [Capture(variable: "v", source: .path(path)),
                                                          Capture(variable: "g", source: .group(2))], scope: &scope)
                }
                #expect(parsed.parseCount <= 1)
            }
        }
    }
}

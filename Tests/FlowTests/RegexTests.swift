import Flow
import Testing

@Suite("Flow regular expressions", .timeLimit(.minutes(2)))
struct RegexTests {
    func regex(_ pattern: String) -> FlowRegex { FlowRegex.compile(pattern).success! }

    @Test("POSIX ERE matches anywhere unless anchored, with groups")
    func groups() {
        let hello = regex("^hello ([0-9]+)( from (v[0-9]+))?")
        #expect(hello.groupCount == 3)
        let match = hello.firstMatch(in: "hello 42 from v7!")
        #expect(match == ["hello 42 from v7", "42", " from v7", "v7"])
        #expect(hello.firstMatch(in: "hello 42") == ["hello 42", "42", nil, nil])
        #expect(hello.firstMatch(in: "say hello 42") == nil)
        #expect(regex("b+").firstMatch(in: "aabbbc") == ["bbb"])
        #expect(regex("x|y{2,3}").firstMatch(in: "ayyyy") == ["yyy"])
        #expect(regex("").firstMatch(in: "") == [""])
    }

    @Test("a bad pattern fails with regerror's text at offset 0")
    func compileErrors() {
        for pattern in ["(", "a{2,1}", "[z-a]", "*a(", "\\"] {
            let error = FlowRegex.compile(pattern).failure
            #expect(error?.offset == 0, "\(pattern)")
            #expect(error?.message.isEmpty == false, "\(pattern)")
        }
        #expect(FlowRegex.compile("(").failure?.message.lowercased().contains("unmatched") == true)
        #expect(FlowRegex.compile("a\u{0}b").failure?.offset == 1)
        #expect(FlowRegex.compile(String(repeating: "a", count: FlowRegex.maximumPatternLength + 1)).failure != nil)
    }

    @Test("text with NUL bytes is searched whole")
    func nulBytes() {
        #expect(regex("b$").firstMatch(in: "a\u{0}b") == ["b"])
        #expect(regex("^(a)").firstMatch(in: "a\u{0}b") == ["a", "a"])
        #expect(regex("(b)$").firstMatch(in: "a\u{0}\u{0}b")?[1]?.utf8.count == 1)
        #expect(regex("c").firstMatch(in: "ab\u{0}") == nil)
    }

    @Test("input over 1 MiB does not match; exactly 1 MiB does")
    func inputCap() {
        let limit = FlowRegex.maximumInputLength
        #expect(regex("x$").firstMatch(in: String(repeating: "a", count: limit - 1) + "x") == ["x"])
        #expect(regex("x$").firstMatch(in: String(repeating: "a", count: limit) + "x") == nil)
    }

    @Test("a group boundary inside a UTF-8 sequence gives nil for that group, never a split scalar")
    func scalarBoundaries() {
        // In the C locale `.` is one byte, so `(.)` takes half of é (2 bytes).
        let match = regex("^(.)(.*)$").firstMatch(in: "é!")
        #expect(match?.count == 3)
        #expect(match?[0] == "é!")
        #expect(match?[1] == nil)
        #expect(match?[2] == nil)
        // Patterns are byte-wise too: `é+` repeats é's last byte; `(é)+` repeats the character.
        #expect(regex("é+").firstMatch(in: "aééb") == ["é"])
        #expect(regex("((é)+)").firstMatch(in: "aééb") == ["éé", "éé", "é"])
        #expect(regex("😀").firstMatch(in: "a😀b") == ["😀"])
    }

    @Test("equal patterns compare equal; a regex is usable from many tasks at once")
    func sharing() async {
        #expect(regex("a+") == regex("a+"))
        #expect(regex("a+") != regex("b+"))
        let shared = regex("^id=([0-9]+)$")
        await withTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    (0..<500).allSatisfy { shared.firstMatch(in: "id=\(task * 1000 + $0)")?[1] == "\(task * 1000 + $0)"[...] }
                }
            }
            for await ok in group { #expect(ok) }
        }
    }
}

import Flow
import Foundation
import JSON

/// What a flow step costs per message outside the network: building the JSON send from its template, parsing
/// the reply and judging it (`$.type equals hello`), and the text flow's regex, each on one thread.
struct FlowBenchmark {
    var rounds: Int

    /// A scope with fixed values (the connection's number, its counters, no captures or feeders).
    struct Scope: TemplateScope {
        var vu = 7
        var iteration = 1
        var sequence: UInt64 = 123_456
        var nowMilliseconds: Int64 = 1_700_000_000_000
        var random: UInt64 = 1
        mutating func nextRandom() -> UInt64 { random &+= 0x9E37_79B9_7F4A_7C15; return random }
        func feederValue(source: String, column: String) -> JSONValue? { nil }
        func variable(_ name: String) -> JSONValue? { nil }
    }

    func run() throws {
        var scope = Scope()
        let reply = #"{"type":"hello","n":123456,"from":7,"pad":"padding-padding"}"#  // what the send expands to
        let jsonTemplate = try JSONTemplate.parse(
            try JSONValue(parsing: #"{"type":"hello","n":"${seq}","from":"${vu}","pad":"padding-padding"}"#)).get()
        let compiled = JSONTextTemplate(jsonTemplate)
        let textTemplate = try Template.parse("hello ${seq} from ${vu} padding-padding-padding-padding").get()
        let path = try JSONPath.parse("$.type").get()
        let matcher = MessageMatcher.json([JSONCondition(path: path, test: .equals(.constant(.string("hello"))))])
        let regex = try FlowRegex.compile("^hello ([0-9]+)").get()
        var sink = 0

        measure("flow json send (template expand)") {
            if case .success(let text) = compiled.expand(&scope) { sink &+= text.utf8.count }
        }
        measure("flow text send (template expand)") {
            if case .success(let text) = textTemplate.expand(&scope) { sink &+= text.utf8.count }
        }
        measure("flow json reply parse") {
            if let value = try? JSONValue(parsing: reply, maximumDepth: ParsedMessage.maximumDepth) {
                if case .object = value { sink &+= 1 }
            }
        }
        measure("flow json reply judged ($.type equals)") {
            var message = ParsedMessage(.text(reply))
            if case .matched = matcher.match(&message, captures: [], scope: &scope) { sink &+= 1 }
        }
        let text = "hello 123456 from 7 padding-padding-padding-padding"
        measure("flow text reply judged (regex)") {
            if regex.matches(text) { sink &+= 1 }
        }
        if sink == 42 { print("") }  // keeps the work from being optimized away
    }

    private func measure(_ name: String, _ body: () -> Void) {
        for _ in 0..<min(rounds, 10_000) { body() }  // warm up
        let started = ContinuousClock.now
        for _ in 0..<rounds { body() }
        let nanoseconds = (ContinuousClock.now - started).figureNanoseconds
        print("\(name): \(String(format: "%.0f", nanoseconds / Double(rounds))) ns per message (\(rounds) rounds)")
    }
}

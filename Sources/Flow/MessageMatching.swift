import JSON

/// What a successful match gives: the captures made, in order.
package enum MatchOutcome: Sendable, Equatable {
    case noMatch
    /// The message matched; the captures it made, in the order they were listed.
    case matched([(variable: String, value: JSONValue)])
    /// It matched, but capture `variable` found nothing.
    case captureMissing(String)

    package static func == (lhs: MatchOutcome, rhs: MatchOutcome) -> Bool {
        switch (lhs, rhs) {
        case (.noMatch, .noMatch): true
        case (.matched(let a), .matched(let b)): a.map(\.variable) == b.map(\.variable) && a.map(\.value) == b.map(\.value)
        case (.captureMissing(let a), .captureMissing(let b)): a == b
        default: false
        }
    }
}

/// A message with its JSON parsed lazily, at most once however many matchers look (text frames only; a nil JSON
/// means the text is not a JSON document, or is nested deeper than ``maximumDepth``).
package struct ParsedMessage {
    /// The nesting a message's JSON may have; deeper documents are treated as not JSON.
    package static let maximumDepth = 64

    private enum State {
        case unparsed
        case parsed(JSONValue)
        case notJSON
    }

    package var message: FlowMessage
    private var state = State.unparsed
    /// How many times the JSON parser ran on this message (0 or 1): tests hold the "at most once" to it.
    package private(set) var parseCount = 0

    package init(_ message: FlowMessage) { self.message = message }

    /// The message's JSON document, parsed on first use.
    package mutating func json() -> JSONValue? {
        switch state {
        case .parsed(let value): return value
        case .notJSON: return nil
        case .unparsed:
            parseCount += 1
            // Not JSON is an answer, not an error: such a message simply does not match a JSON matcher.
            guard case .text(let text) = message,
                  let value = try? JSONValue(parsing: text, maximumDepth: Self.maximumDepth)
            else {
                state = .notJSON
                return nil
            }
            state = .parsed(value)
            return value
        }
    }
}

extension MessageMatcher {
    /// Whether `message` matches, and if so the captures (path captures read the message's JSON, group captures
    /// the text regex's groups). A JSON matcher on a binary message or on text that is not JSON does not match.
    package func match(_ message: inout ParsedMessage, captures: [Capture], scope: inout some TemplateScope)
        -> MatchOutcome
    {
        var groups: [Substring?] = []
        switch self {
        case .any: break
        case .json(let conditions):
            guard let value = message.json(), conditions.allHold(on: value, scope: &scope) else { return .noMatch }
        case .text(let regex):
            guard case .text(let text) = message.message else { return .noMatch }
            if captures.contains(where: \.isGroup) {
                guard let match = regex.firstMatch(in: text) else { return .noMatch }
                groups = match
            } else if !regex.matches(text) {
                return .noMatch  // no group is captured: the match alone, without building the groups
            }
        case .binary(let length, let prefix):
            guard case .binary(let bytes) = message.message,
                  length.map({ $0.contains(bytes.count) }) ?? true,
                  bytes.starts(with: prefix)
            else { return .noMatch }
        }
        guard !captures.isEmpty else { return .matched([]) }
        var made: [(variable: String, value: JSONValue)] = []
        made.reserveCapacity(captures.count)
        for capture in captures {
            switch capture.source {
            case .group(let group):
                guard group >= 0, group < groups.count, let text = groups[group] else {
                    return .captureMissing(capture.variable)
                }
                made.append((capture.variable, .string(String(text))))
            case .path(let path):
                guard let value = message.json(), let captured = path.evaluate(value) else {
                    return .captureMissing(capture.variable)
                }
                made.append((capture.variable, captured))
            }
        }
        return .matched(made)
    }
}

extension Capture {
    /// A regex group capture (it needs the text regex's groups).
    fileprivate var isGroup: Bool {
        if case .group = source { true } else { false }
    }
}

/// Captures from a JSON value (a preset's payload: Socket.IO arguments, a GraphQL result): path captures only;
/// a group capture finds nothing.
package func capture(_ captures: [Capture], from value: JSONValue) -> MatchOutcome {
    var made: [(variable: String, value: JSONValue)] = []
    made.reserveCapacity(captures.count)
    for capture in captures {
        guard case .path(let path) = capture.source, let captured = path.evaluate(value) else {
            return .captureMissing(capture.variable)
        }
        made.append((capture.variable, captured))
    }
    return .matched(made)
}

extension Array where Element == JSONCondition {
    /// All conditions hold on `value` (a message's JSON, or a preset's payload: socketio args array, graphql
    /// payload). A template in an `equals`/`oneOf` value that cannot be expanded makes its condition false.
    package func allHold(on value: JSONValue, scope: inout some TemplateScope) -> Bool {
        allSatisfy { $0.holds(on: value, scope: &scope) }
    }
}

extension JSONCondition {
    /// Whether this condition holds on `root`: the value at `path` passes `test`.
    package func holds(on root: JSONValue, scope: inout some TemplateScope) -> Bool {
        let found = path.evaluate(root)
        switch test {
        case .exists(let expected): return (found != nil) == expected
        case .equals(let template):
            guard let found, case .success(let expected) = template.expand(&scope) else { return false }
            return found.isEqual(to: expected)
        case .oneOf(let templates):
            guard let found else { return false }
            return templates.contains { template in
                guard case .success(let expected) = template.expand(&scope) else { return false }
                return found.isEqual(to: expected)
            }
        case .regex(let regex):
            guard case .string(let text)? = found else { return false }
            return regex.matches(text)
        case .compare(let comparison, let limit):
            guard case .number(let number)? = found else { return false }
            switch comparison {
            case .less: return number < limit
            case .lessOrEqual: return number <= limit
            case .greater: return number > limit
            case .greaterOrEqual: return number >= limit
            }
        }
    }
}

extension JSONValue {
    /// Equality for matching: numbers by value (`1` equals `1.0`), strings byte for byte (no Unicode folding), arrays in order, objects
    /// regardless of key order.
    package func isEqual(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isEqual(to: $1) }
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            return a.keys.allSatisfy { key in
                guard let left = a[key], let right = b[key] else { return false }
                return left.isEqual(to: right)
            }
        default: return false
        }
    }
}

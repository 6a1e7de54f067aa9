import Flow
import JSON

// STOPGAP until the Flow library's API lands (r-core, "Flow API:"): the contract's signatures, implemented just
// enough for the interpreter to be built and tested (no regex matching). Deleted when r-core is merged.

/// Stands in for Flow's TemplateFailure (its initializer is the library's own).
struct StopgapFailure: Error, Equatable {
    var name: String
}

extension Template {
    var references: [TemplateValue] {
        parts.compactMap { if case .value(let value) = $0 { value } else { nil } }
    }

    func expand(_ scope: inout some TemplateScope) -> Result<String, StopgapFailure> {
        var text = ""
        for part in parts {
            switch part {
            case .literal(let literal): text += literal
            case .value(let value):
                switch stopgapValue(value, &scope) {
                case .success(let json):
                    if case .string(let string) = json { text += string } else { text += json.formatted(pretty: false) }
                case .failure(let failure): return .failure(failure)
                }
            }
        }
        return .success(text)
    }
}

extension JSONTemplate {
    var references: [TemplateValue] {
        switch self {
        case .constant: []
        case .string(let template): template.references
        case .array(let items): items.flatMap(\.references)
        case .object(let members): members.flatMap(\.value.references)
        }
    }

    func expand(_ scope: inout some TemplateScope) -> Result<JSONValue, StopgapFailure> {
        switch self {
        case .constant(let value): return .success(value)
        case .string(let template):
            if template.parts.count == 1, case .value(let value) = template.parts[0] { return stopgapValue(value, &scope) }
            return template.expand(&scope).map { .string($0) }
        case .array(let items):
            var values: [JSONValue] = []
            for item in items {
                switch item.expand(&scope) {
                case .success(let value): values.append(value)
                case .failure(let failure): return .failure(failure)
                }
            }
            return .success(.array(values))
        case .object(let members):
            var object = JSONObject()
            for member in members {
                switch member.value.expand(&scope) {
                case .success(let value): object[member.key] = value
                case .failure(let failure): return .failure(failure)
                }
            }
            return .success(.object(object))
        }
    }
}

private func stopgapValue(_ value: TemplateValue, _ scope: inout some TemplateScope) -> Result<JSONValue, StopgapFailure> {
    switch value {
    case .vu: return .success(.number(Double(scope.vu)))
    case .iteration: return .success(.number(Double(scope.iteration)))
    case .sequence: return .success(.number(Double(scope.sequence)))
    case .uuid: return .success(.string(String(scope.nextRandom(), radix: 16)))
    case .nowMilliseconds: return .success(.number(Double(scope.nowMilliseconds)))
    case .randomInteger(let range):
        let span = UInt64(bitPattern: range.upperBound &- range.lowerBound) &+ 1
        let draw = span == 0 ? scope.nextRandom() : scope.nextRandom() % span
        return .success(.number(Double(range.lowerBound &+ Int64(bitPattern: draw))))
    case .randomString(let count): return .success(.string(String(repeating: "a", count: count)))
    case .feeder(let source, let column):
        guard let found = scope.feederValue(source: source, column: column) else {
            return .failure(StopgapFailure(name: source + "." + column))
        }
        return .success(found)
    case .variable(let name):
        guard let found = scope.variable(name) else { return .failure(StopgapFailure(name: name)) }
        return .success(found)
    }
}

extension JSONPath {
    func evaluate(_ value: JSONValue) -> JSONValue? {
        var current = value
        for component in components {
            switch component {
            case .key(let key):
                guard let next = current[key] else { return nil }
                current = next
            case .index(let index):
                guard let array = current.arrayValue, index < array.count else { return nil }
                current = array[index]
            }
        }
        return current
    }
}

/// A message with its JSON parsed lazily, once.
struct ParsedMessage {
    var message: FlowMessage
    private var parsed: JSONValue??

    init(_ message: FlowMessage) { self.message = message }

    mutating func json() -> JSONValue? {
        if let parsed { return parsed }
        guard case .text(let text) = message else {
            parsed = .some(nil)
            return nil
        }
        let value = try? JSONValue(parsing: text)  // not JSON: the json matchers do not match it
        parsed = .some(value)
        return value
    }
}

/// What a match gives.
enum MatchOutcome: Equatable {
    case noMatch
    case matched([Capture2])
    case captureMissing(String)
}

struct Capture2: Equatable {
    var variable: String
    var value: JSONValue
}

extension MessageMatcher {
    func match(_ message: inout ParsedMessage, captures: [Capture], scope: inout some TemplateScope) -> MatchOutcome {
        switch self {
        case .any: break
        case .json(let conditions):
            guard let json = message.json(), conditions.allHold(on: json, scope: &scope) else { return .noMatch }
        case .text: return .noMatch
        case .binary(let length, let prefix):
            guard case .binary(let bytes) = message.message, length?.contains(bytes.count) ?? true,
                bytes.starts(with: prefix) else { return .noMatch }
        }
        guard !captures.isEmpty else { return .matched([]) }
        guard let json = message.json() else { return .captureMissing(captures[0].variable) }
        return capture(captures, from: json)
    }
}

extension Array where Element == JSONCondition {
    func allHold(on value: JSONValue, scope: inout some TemplateScope) -> Bool {
        for condition in self {
            let found = condition.path.evaluate(value)
            switch condition.test {
            case .exists(let wanted): if (found != nil) != wanted { return false }
            case .equals(let template):
                guard let found, case .success(let expected) = template.expand(&scope), found == expected else { return false }
            case .oneOf(let templates):
                guard let found, templates.contains(where: { (try? $0.expand(&scope).get()) == found }) else { return false }
            case .regex: return false
            case .compare(let comparison, let limit):
                guard let number = found?.numberValue else { return false }
                switch comparison {
                case .less: if !(number < limit) { return false }
                case .lessOrEqual: if !(number <= limit) { return false }
                case .greater: if !(number > limit) { return false }
                case .greaterOrEqual: if !(number >= limit) { return false }
                }
            }
        }
        return true
    }
}

func capture(_ captures: [Capture], from value: JSONValue) -> MatchOutcome {
    var made: [Capture2] = []
    for capture in captures {
        guard case .path(let path) = capture.source, let found = path.evaluate(value) else {
            return .captureMissing(capture.variable)
        }
        made.append(Capture2(variable: capture.variable, value: found))
    }
    return .matched(made)
}

extension FeederTable {
    func value(row: Int, column: String) -> JSONValue? {
        guard let index = columns.firstIndex(of: column), row >= 0, row < rowCount else { return nil }
        return values[row * columns.count + index]
    }
}

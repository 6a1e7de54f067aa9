import JSON

/// Expanding parsed templates against a connection's scope: no parsing, no regex, one pass over the parts.
extension Template {
    /// The template's text with every placeholder replaced. A feeder value or captured variable that is not a
    /// string is written as compact JSON (`42`, `true`, `{"a":1}`); a missing one fails, naming it.
    package func expand(_ scope: inout some TemplateScope) -> Result<String, TemplateFailure> {
        if parts.count == 1, case .literal(let literal) = parts[0] { return .success(literal) }
        var text = ""
        var literalBytes = 0
        for part in parts { if case .literal(let literal) = part { literalBytes &+= literal.utf8.count } }
        text.reserveCapacity(literalBytes &+ 24)  // the literals and a few short values: one allocation
        for part in parts {
            switch part {
            case .literal(let literal): text += literal
            case .value(let value):
                switch value.resolve(&scope) {
                case .failure(let failure): return .failure(failure)
                case .success(let resolved): resolved.appendText(to: &text)
                }
            }
        }
        return .success(text)
    }
}

extension JSONTemplate {
    /// Parses the templates in every string of `value` (keys are never templates). Errors are listed with the
    /// path of the string relative to `value` (`""` for `value` itself, `[2].name`, `["a key"]`).
    /// (`Result` needs an `Error`, so the list is wrapped in ``JSONTemplateSyntaxErrors``, a collection of the
    /// same `(path, error)` pairs.)
    package static func parse(_ value: JSONValue) -> Result<JSONTemplate, JSONTemplateSyntaxErrors> {
        var errors: [(path: String, error: TemplateSyntaxError)] = []
        let template = parse(value, path: "", errors: &errors)
        return errors.isEmpty ? .success(template) : .failure(JSONTemplateSyntaxErrors(errors: errors))
    }

    private static func parse(
        _ value: JSONValue,
        path: String,
        errors: inout [(path: String, error: TemplateSyntaxError)]
    ) -> JSONTemplate {
        switch value {
        case .null, .bool, .number: return .constant(value)
        case .string(let text):
            switch Template.parse(text) {
            case .failure(let error):
                errors.append((path, error))
                return .constant(value)
            case .success(let template):
                if let constant = template.constantText { return .constant(.string(constant)) }
                return .string(template)
            }
        case .array(let elements):
            let templates = elements.enumerated().map { index, element in
                parse(element, path: path + "[\(index)]", errors: &errors)
            }
            if let constants = constants(templates) { return .constant(.array(constants)) }
            return .array(templates)
        case .object(let object):
            let members = object.members.map { member in
                (key: member.key, value: parse(member.value, path: path + pathSuffix(key: member.key), errors: &errors))
            }
            if let constants = constants(members.map(\.value)) {
                var constant = JSONObject()
                for (member, value) in zip(members, constants) { constant[member.key] = value }
                return .constant(.object(constant))
            }
            return .object(members)
        }
    }

    private static func constants(_ templates: [JSONTemplate]) -> [JSONValue]? {
        var values: [JSONValue] = []
        values.reserveCapacity(templates.count)
        for template in templates {
            guard case .constant(let value) = template else { return nil }
            values.append(value)
        }
        return values
    }

    /// `.name` when the key is a plain name, else `["key"]` with the key written as a JSON string.
    private static func pathSuffix(key: String) -> String {
        let plain = !key.isEmpty && key.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"): true
            default: false
            }
        }
        return plain ? "." + key : "[" + JSONValue.string(key).formatted(pretty: false) + "]"
    }

    /// Every value the templates inside read, in document order.
    package var references: [TemplateValue] {
        switch self {
        case .constant: []
        case .string(let template): template.references
        case .array(let elements): elements.flatMap(\.references)
        case .object(let members): members.flatMap(\.value.references)
        }
    }

    /// The JSON value with every template expanded. A string that is exactly one placeholder takes the value's
    /// JSON type (`"${vu}"` is a number, a captured object stays an object); other strings get the text, which
    /// the JSON writer escapes when the value is sent. A typed integer beyond ±(2^53−1) (a wide `random.int`, a huge
    /// `now_ms`) saturates there, as every integer written to JSON does.
    package func expand(_ scope: inout some TemplateScope) -> Result<JSONValue, TemplateFailure> {
        switch self {
        case .constant(let value): return .success(value)
        case .string(let template):
            if template.parts.count == 1, case .value(let value) = template.parts[0] {
                return value.resolve(&scope).map(\.jsonValue)
            }
            return template.expand(&scope).map(JSONValue.string)
        case .array(let elements):
            var values: [JSONValue] = []
            values.reserveCapacity(elements.count)
            for element in elements {
                switch element.expand(&scope) {
                case .failure(let failure): return .failure(failure)
                case .success(let value): values.append(value)
                }
            }
            return .success(.array(values))
        case .object(let members):
            var object = JSONObject()
            for member in members {
                switch member.value.expand(&scope) {
                case .failure(let failure): return .failure(failure)
                case .success(let value): object[member.key] = value
                }
            }
            return .success(.object(object))
        }
    }
}

/// The template syntax errors in a JSON value, each with the path of its string relative to the value.
package struct JSONTemplateSyntaxErrors: Error, Sendable, RandomAccessCollection {
    package var errors: [(path: String, error: TemplateSyntaxError)]

    package init(errors: [(path: String, error: TemplateSyntaxError)]) { self.errors = errors }

    package var startIndex: Int { errors.startIndex }
    package var endIndex: Int { errors.endIndex }
    package subscript(position: Int) -> (path: String, error: TemplateSyntaxError) { errors[position] }
}

/// A placeholder's value before it is written into text or JSON.
private enum ResolvedValue {
    case integer(Int64)
    case unsigned(UInt64)
    case string(String)
    case json(JSONValue)

    var jsonValue: JSONValue {
        switch self {
        case .integer(let value): JSONValue(value)
        case .unsigned(let value): JSONValue(value)
        case .string(let value): .string(value)
        case .json(let value): value
        }
    }

    /// The value as JSON text, as `jsonValue.formatted(pretty: false)` writes it (integers saturated at
    /// ±(2^53−1)), without building the value.
    func appendJSON(to text: inout String) {
        switch self {
        case .integer(let value): text += String(JSONValue.saturated(value))
        case .unsigned(let value): text += String(JSONValue.saturated(value))
        case .string(let value): JSONValue.appendQuoted(value, to: &text)
        case .json(let value): text += value.formatted(pretty: false)
        }
    }

    func appendText(to text: inout String) {
        switch self {
        case .integer(let value): text += String(value)
        case .unsigned(let value): text += String(value)
        case .string(let value): text += value
        case .json(.string(let value)): text += value
        case .json(let value): text += value.formatted(pretty: false)
        }
    }
}

extension TemplateValue {
    /// The name as a template spells it, for a ``TemplateFailure``.
    package var spelling: String {
        switch self {
        case .vu: "vu"
        case .iteration: "iteration"
        case .sequence: "seq"
        case .uuid: "uuid"
        case .nowMilliseconds: "now_ms"
        case .randomInteger(let range): "random.int(\(range.lowerBound),\(range.upperBound))"
        case .randomString(let length): "random.string(\(length))"
        case .feeder(let source, let column): "\(source).\(column)"
        case .variable(let name): name
        }
    }

    fileprivate func resolve(_ scope: inout some TemplateScope) -> Result<ResolvedValue, TemplateFailure> {
        switch self {
        case .vu: .success(.integer(Int64(scope.vu)))
        case .iteration: .success(.integer(Int64(scope.iteration)))
        case .sequence: .success(.unsigned(scope.sequence))
        case .nowMilliseconds: .success(.integer(scope.nowMilliseconds))
        case .uuid: .success(.string(RandomText.uuid(&scope)))
        case .randomInteger(let range): .success(.integer(RandomText.integer(in: range, &scope)))
        case .randomString(let length): .success(.string(RandomText.string(length: length, &scope)))
        case .feeder(let source, let column):
            scope.feederValue(source: source, column: column).map { .success(.json($0)) }
                ?? .failure(TemplateFailure(name: spelling))
        case .variable(let name):
            scope.variable(name).map { .success(.json($0)) } ?? .failure(TemplateFailure(name: name))
        }
    }
}

/// Random values drawn from the scope's seeded generator (so a run with a seed repeats exactly).
package enum RandomText {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A version-4 UUID (RFC 9562 §5.4), lowercase: 122 random bits, version nibble 4, variant bits 10.
    package static func uuid(_ scope: inout some TemplateScope) -> String {
        let high = scope.nextRandom()
        let low = scope.nextRandom()
        var bytes = (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// A uniform integer in `range` from one draw (multiply-high; the bias is below 2^-64 per value).
    package static func integer(in range: ClosedRange<Int64>, _ scope: inout some TemplateScope) -> Int64 {
        let draw = scope.nextRandom()
        let span = UInt64(bitPattern: range.upperBound &- range.lowerBound)
        guard span != .max else { return Int64(bitPattern: draw) }
        let offset = (span + 1).multipliedFullWidth(by: draw).high
        return range.lowerBound &+ Int64(bitPattern: offset)
    }

    /// `length` characters from [A-Za-z0-9], one draw each.
    package static func string(length: Int, _ scope: inout some TemplateScope) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(length)
        for _ in 0..<length {
            let index = UInt64(alphabet.count).multipliedFullWidth(by: scope.nextRandom()).high
            text.append(alphabet[Int(index)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// A JSON template compiled to the compact text it expands to (a `send.json` payload): the constant runs (keys,
/// punctuation, constant values) written once, the templated strings expanded per message straight into the text.
/// `expand` gives the same bytes as `JSONTemplate.expand` then `formatted(pretty: false)`, without building the
/// value (no object storage, no member list per message).
package struct JSONTextTemplate: Sendable {
    /// A run of constant text, or a templated string: exactly one placeholder keeps the value's JSON type.
    private enum Segment: Sendable {
        case text(String)
        case typed(TemplateValue)
        case string(Template)
    }

    private var segments: [Segment] = []
    /// The constant text's length, reserved up front.
    private var constantBytes = 0

    package init(_ template: JSONTemplate) {
        var pending = ""
        compile(template, pending: &pending)
        flush(&pending)
    }

    private mutating func flush(_ pending: inout String) {
        guard !pending.isEmpty else { return }
        constantBytes &+= pending.utf8.count
        segments.append(.text(pending))
        pending = ""
    }

    private mutating func compile(_ template: JSONTemplate, pending: inout String) {
        switch template {
        case .constant(let value):
            pending += value.formatted(pretty: false)
        case .string(let text):
            flush(&pending)
            if text.parts.count == 1, case .value(let value) = text.parts[0] {
                segments.append(.typed(value))
            } else {
                segments.append(.string(text))
            }
        case .array(let elements):
            pending += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { pending += "," }
                compile(element, pending: &pending)
            }
            pending += "]"
        case .object(let members):
            // A member list from a parsed object has unique keys, so the order is the object's.
            pending += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { pending += "," }
                pending += JSONValue.string(member.key).formatted(pretty: false)
                pending += ":"
                compile(member.value, pending: &pending)
            }
            pending += "}"
        }
    }

    /// The compact JSON text with every template expanded; a missing value fails, naming it.
    package func expand(_ scope: inout some TemplateScope) -> Result<String, TemplateFailure> {
        var output = ""
        output.reserveCapacity(constantBytes &+ 16 &* segments.count)
        for segment in segments {
            switch segment {
            case .text(let text):
                output += text
            case .typed(let value):
                switch value.resolve(&scope) {
                case .failure(let failure): return .failure(failure)
                case .success(let resolved): resolved.appendJSON(to: &output)
                }
            case .string(let template):
                switch template.expand(&scope) {
                case .failure(let failure): return .failure(failure)
                case .success(let text): JSONValue.appendQuoted(text, to: &output)
                }
            }
        }
        return .success(output)
    }
}

import Crypto
import Flow
import HTTP1
import JSON

/// What a flow's steps have defined so far, in document order: the static checks (a variable used before any step
/// captures it, `from` naming a later mark, a feeder not in `data`, duplicate names) read and extend it.
struct FlowDeclarations {
    var preset: FlowScenario.Preset
    /// The keys of the profile's `data`.
    var feederNames: Set<String>
    /// Variables some earlier step captures (socketio: `sid` from the start).
    var variables: Set<String>
    var marks: Set<String> = []
    var stepNames: [String] = []
    var subscribeNames: Set<String> = []
    /// Feeders the templates read, in first-use order.
    var feeders: [String] = []
    var feederColumns: [FeederColumnUse] = []

    init(preset: FlowScenario.Preset, feederNames: Set<String>) {
        self.preset = preset
        self.feederNames = feederNames
        variables = preset == .socketio ? ["sid"] : []
    }
}

/// Names a template may not capture into: the built-in values.
private let builtinNames: Set<String> = ["vu", "iteration", "seq", "uuid", "now_ms", "random"]

/// Templates, JSON paths, regexes, conditions, matchers and captures of flow scenarios.
extension ProfileReader {
    /// A step, mark, classify type or variable name: `[A-Za-z0-9_-]{1,64}`.
    static func isFlowName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    mutating func flowName(_ value: JSONValue?, _ path: String) -> String? {
        guard let text = string(value, path) else { return nil }
        guard Self.isFlowName(text) else {
            problem(path, "\"\(TerminalText.printable(text, limit: 80))\" is not a valid name",
                    hint: "1 to 64 letters, digits, '_' or '-'")
            return nil
        }
        return text
    }

    /// Checks what a template reads against what is defined at this point of the flow.
    mutating func checkReferences(_ references: [TemplateValue], _ path: String, _ declarations: inout FlowDeclarations) {
        for reference in references {
            switch reference {
            case .feeder(let source, let column):
                guard declarations.feederNames.contains(source) else {
                    problem(path, "\"\(source)\" in ${\(source).\(column)} is not a feeder",
                            hint: declarations.feederNames.isEmpty ? "declare it under data"
                                : suggestion(for: source, among: declarations.feederNames.sorted())
                                    ?? "feeders: " + declarations.feederNames.sorted().joined(separator: ", "))
                    continue
                }
                if !declarations.feeders.contains(source) { declarations.feeders.append(source) }
                declarations.feederColumns.append(FeederColumnUse(feeder: source, column: column, path: path))
            case .variable(let name):
                if !declarations.variables.contains(name) {
                    problem(path, "captured variable \(name) is used before it is defined",
                            hint: "capture it in an earlier step")
                }
            default: break
            }
        }
    }

    mutating func template(_ value: JSONValue?, _ path: String, _ declarations: inout FlowDeclarations) -> Template? {
        guard let text = string(value, path, nonEmpty: false) else { return nil }
        switch Template.parse(text) {
        case .failure(let error):
            problem(path, "bad template \(error)")
            return nil
        case .success(let template):
            checkReferences(template.references, path, &declarations)
            return template
        }
    }

    mutating func jsonTemplate(_ value: JSONValue?, _ path: String, _ declarations: inout FlowDeclarations) -> JSONTemplate? {
        guard let value else { return nil }
        switch JSONTemplate.parse(value) {
        case .failure(let errors):
            for error in errors.errors { problem(path + error.path, "bad template \(error.error)") }
            return nil
        case .success(let template):
            checkReferences(template.references, path, &declarations)
            return template
        }
    }

    mutating func jsonPath(_ value: JSONValue?, _ path: String) -> JSONPath? {
        guard let text = string(value, path) else { return nil }
        switch JSONPath.parse(text) {
        case .failure(let error):
            problem(path, "bad JSON path \(error)", hint: "$, .name, [\"key\"] and [N] only")
            return nil
        case .success(let parsed): return parsed
        }
    }

    mutating func regex(_ value: JSONValue?, _ path: String) -> FlowRegex? {
        guard let text = string(value, path) else { return nil }
        switch FlowRegex.compile(text) {
        case .failure(let error):
            problem(path, "bad regular expression: \(error.message)", hint: "POSIX extended syntax, as grep -E")
            return nil
        case .success(let regex): return regex
        }
    }

    /// `[{"path", <one test>}]`: the conditions of a JSON matcher, an `on`, an ack or a graphql result.
    mutating func conditions(_ value: JSONValue?, _ path: String, _ declarations: inout FlowDeclarations) -> [JSONCondition]? {
        guard let list = array(value, path) else { return nil }
        var conditions: [JSONCondition] = []
        let before = problems.count
        for (index, element) in list.enumerated() {
            let conditionPath = path + "[\(index)]"
            guard let object = object(element, conditionPath, kind: "condition") else { continue }
            let jsonPath = required(object, "path", conditionPath).flatMap { self.jsonPath($0, Self.join(conditionPath, "path")) }
            guard let key = exactlyOneKey(of: ["equals", "exists", "oneOf", "regex", "lt", "le", "gt", "ge"], in: object,
                                          conditionPath, missing: "needs a test", plural: "tests") else { continue }
            let testPath = Self.join(conditionPath, key)
            let test: JSONCondition.Test?
            switch key {
            case "equals": test = jsonTemplate(object[key], testPath, &declarations).map { .equals($0) }
            case "exists": test = bool(object[key], testPath).map { .exists($0) }
            case "oneOf":
                if let values = array(object[key], testPath) {
                    if values.isEmpty { problem(testPath, "must hold at least one value") }
                    let templates = values.enumerated().compactMap { jsonTemplate($1, testPath + "[\($0)]", &declarations) }
                    test = templates.count == values.count && !values.isEmpty ? .oneOf(templates) : nil
                } else {
                    test = nil
                }
            case "regex": test = regex(object[key], testPath).map { .regex($0) }
            default:
                let comparison = JSONCondition.NumericComparison(rawValue: key)!
                test = number(object[key], testPath, minimum: -Double.greatestFiniteMagnitude,
                              maximum: Double.greatestFiniteMagnitude).map { .compare(comparison, $0) }
            }
            if let jsonPath, let test { conditions.append(JSONCondition(path: jsonPath, test: test)) }
        }
        return problems.count == before ? conditions : nil
    }

    /// `{"hex": ".."}` or `{"base64": ".."}`.
    mutating func binaryBytes(_ value: JSONValue?, _ path: String) -> [UInt8]? {
        guard let object = object(value, path, kind: "bytes") else { return nil }
        switch (object["hex"], object["base64"]) {
        case (let hex?, nil):
            guard let text = string(hex, Self.join(path, "hex"), nonEmpty: false) else { return nil }
            guard let bytes = hexBytes(text) else {
                problem(Self.join(path, "hex"), "is not hex", hint: "an even number of 0-9, a-f")
                return nil
            }
            return bytes
        case (nil, let base64?):
            guard let text = string(base64, Self.join(path, "base64"), nonEmpty: false) else { return nil }
            guard let bytes = Crypto.base64Decoded(text) else {
                problem(Self.join(path, "base64"), "is not base64", hint: "standard alphabet, padded")
                return nil
            }
            return bytes
        default:
            problem(path, "needs exactly one of hex, base64")
            return nil
        }
    }

    /// The matcher of an `expect` or a `classify` entry: exactly one of `json`, `text`, `binary`, `any`.
    mutating func messageMatcher(_ object: JSONObject, _ path: String, _ declarations: inout FlowDeclarations) -> MessageMatcher? {
        guard let kind = exactlyOneKey(of: ["json", "text", "binary", "any"], in: object, path, missing: "needs a matcher",
                                       plural: "matchers") else { return nil }
        let matcherPath = Self.join(path, kind)
        switch kind {
        case "json": return conditions(object[kind], matcherPath, &declarations).map { .json($0) }
        case "text":
            guard let text = self.object(object[kind], matcherPath, kind: "textMatcher") else { return nil }
            return required(text, "regex", matcherPath).flatMap { regex($0, Self.join(matcherPath, "regex")) }.map { .text($0) }
        case "binary":
            guard let binary = self.object(object[kind], matcherPath, kind: "binaryMatcher") else { return nil }
            var length: ClosedRange<Int>?
            let lengthPath = Self.join(matcherPath, "length")
            switch binary["length"] {
            case nil: break
            case .object?:
                guard let range = self.object(binary["length"], lengthPath, kind: "sizeRange") else { return nil }
                let limit = 0...ProfileDecoder.maximumMessageSize
                let minimum = required(range, "min", lengthPath).flatMap { integer($0, Self.join(lengthPath, "min"), in: limit) }
                let maximum = required(range, "max", lengthPath).flatMap { integer($0, Self.join(lengthPath, "max"), in: limit) }
                guard let minimum, let maximum else { return nil }
                guard minimum <= maximum else {
                    problem(Self.join(lengthPath, "min"), "\(minimum) is above max \(maximum)")
                    return nil
                }
                length = minimum...maximum
            case let value?:
                guard let fixed = integer(value, lengthPath, in: 0...ProfileDecoder.maximumMessageSize) else { return nil }
                length = fixed...fixed
            }
            let prefix = binary["prefix"] == nil ? [] : binaryBytes(binary["prefix"], Self.join(matcherPath, "prefix"))
            guard let prefix else { return nil }
            if let length, prefix.count > length.upperBound {
                problem(Self.join(matcherPath, "prefix"), "is \(prefix.count) bytes, longer than the longest length \(length.upperBound)",
                        hint: "it cannot match")
                return nil
            }
            return .binary(length: length, prefix: prefix)
        default:
            guard object[kind] == .bool(true) else {
                problem(matcherPath, "must be true", hint: "leave it out to match with json, text or binary")
                return nil
            }
            return .any
        }
    }

    /// `{"variable": "$.path" | {"group": N}}`; group captures need a text matcher (`groups`: its group count),
    /// path captures need JSON (`allowsPaths`). Captured variables are defined for the steps after.
    mutating func captures(_ value: JSONValue?, _ path: String, groups: Int?, allowsPaths: Bool,
                           _ declarations: inout FlowDeclarations) -> [Capture]? {
        guard let value else { return [] }
        guard let object = value.objectValue else {
            problem(path, "expected an object of variables to JSON paths, found \(value.kindName)")
            return nil
        }
        var captures: [Capture] = []
        let before = problems.count
        for (variable, source) in object.members {
            let capturePath = path + "." + TerminalText.printable(variable, limit: 80)
            let isIdentifier = variable.utf8.first.map { !($0 >= 0x30 && $0 <= 0x39) } == true
                && variable.utf8.allSatisfy { $0 == UInt8(ascii: "_") || ($0 < 0x80 && Character(Unicode.Scalar($0)).isLetter)
                    || ($0 >= 0x30 && $0 <= 0x39) } && variable.utf8.count <= 64
            guard isIdentifier else {
                problem(capturePath, "is not a variable name", hint: "[A-Za-z_][A-Za-z0-9_]*, at most 64 bytes")
                continue
            }
            guard !builtinNames.contains(variable), !declarations.feederNames.contains(variable) else {
                problem(capturePath, "\(variable) names a built-in value or a feeder", hint: "choose another name")
                continue
            }
            if case .object(let group)? = Optional(source) {
                guard let groupObject = self.object(.object(group), capturePath, kind: "captureGroup"),
                      let index = required(groupObject, "group", capturePath).flatMap({ integer($0, Self.join(capturePath, "group"), in: 0...1000) })
                else { continue }
                guard let groups else {
                    problem(capturePath, "a group capture needs a text regex matcher", hint: "capture a JSON path instead")
                    continue
                }
                guard index <= groups else {
                    problem(Self.join(capturePath, "group"), "the regex has \(groups) group\(groups == 1 ? "" : "s")")
                    continue
                }
                captures.append(Capture(variable: variable, source: .group(index)))
            } else {
                guard let jsonPath = jsonPath(source, capturePath) else { continue }
                guard allowsPaths else {
                    problem(capturePath, "a path capture needs JSON messages", hint: "use {\"group\": N} with a text regex")
                    continue
                }
                captures.append(Capture(variable: variable, source: .path(jsonPath)))
            }
        }
        guard problems.count == before else { return nil }
        declarations.variables.formUnion(captures.map(\.variable))
        return captures
    }
}

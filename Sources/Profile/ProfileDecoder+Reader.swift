import HTTP1
import JSON

/// Walks a profile document, collecting problems instead of stopping at the first. The readers of each part
/// of the profile are extensions in the ProfileDecoder+*.swift files; this one holds the typed primitives they share.
struct ProfileReader {
    var problems: [ProfileProblem] = []
    /// What the command line wrote into the document: a problem with one of those values names its option.
    var overrides = ProfileOverrides()

    /// Records a problem at `path`; `option` names the command-line option that gave the value (by default, the one
    /// that wrote `path` into the document).
    mutating func problem(_ path: String, _ message: String, hint: String? = nil, setBy option: String? = nil) {
        let message = (option ?? overrides.option(for: path)).map { message + ", set by " + $0 } ?? message
        problems.append(ProfileProblem(path: path, message: message, hint: hint))
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : path + "." + key }

    /// The object at `path`, with unknown keys reported (and a spelling suggestion when one is close).
    mutating func object(_ value: JSONValue?, _ path: String, kind: String) -> JSONObject? {
        guard let value else { return nil }
        guard let object = value.objectValue else {
            problem(path, "expected an object, found \(value.kindName)")
            return nil
        }
        let known = ProfileDecoder.keys[kind]!
        for key in object.keys where !known.contains(key) {
            problem(Self.join(path, key), "unknown key", hint: suggestion(for: key, among: known)
                ?? "expected one of: " + known.filter { $0 != "$schema" }.joined(separator: ", "))
        }
        return object
    }

    /// The one key of `choices` that `object` has (a step's action, a payload's kind, a matcher, a condition's test);
    /// none or several is a problem at `path`: `missing` (e.g. "needs a payload"), or "has 2 payloads: text, json".
    mutating func exactlyOneKey(
        of choices: [String], in object: JSONObject, _ path: String, missing: String, plural: String
    ) -> String? {
        let present = choices.filter { object[$0] != nil }
        guard present.count == 1, let key = present.first else {
            problem(path, present.isEmpty ? missing : "has \(present.count) \(plural): " + present.joined(separator: ", "),
                    hint: "exactly one of " + choices.joined(separator: ", "))
            return nil
        }
        return key
    }

    mutating func required(_ object: JSONObject, _ key: String, _ path: String, hint: String? = nil) -> JSONValue? {
        if let value = object[key] { return value }
        problem(Self.join(path, key), "is required", hint: hint)
        return nil
    }

    mutating func string(_ value: JSONValue?, _ path: String, nonEmpty: Bool = true) -> String? {
        guard let value else { return nil }
        guard let text = value.stringValue else {
            problem(path, "expected a string, found \(value.kindName)")
            return nil
        }
        if nonEmpty && text.isEmpty {
            problem(path, "must not be empty")
            return nil
        }
        return text
    }

    /// A request path (a scenario's or a transfer's `path`): starts with `/`, checked and percent-encoded as a URL's
    /// path and query are (``URLSyntax``), so what runs is what a URL would have sent.
    mutating func requestPath(_ value: JSONValue?, _ path: String) -> String? {
        guard let text = string(value, path) else { return nil }
        guard text.hasPrefix("/") else {
            problem(path, "\(URLSyntax.quoted(text)) is not a request path", hint: "it starts with /")
            return nil
        }
        do {
            return try URLSyntax.requestTarget(text)
        } catch {
            problem(path, error.description)
            return nil
        }
    }

    /// A scenario's name, which names files (transfer directories, reports' rows): no `/` or `\\`, no `..`, no
    /// control characters, at most 200 bytes.
    mutating func scenarioName(_ value: JSONValue?, _ path: String) -> String? {
        guard let name = string(value, path) else { return nil }
        let isUnsafe = name.utf8.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") }
            || name.contains("..") || !TerminalText.isPrintable(name) || name.utf8.count > 200
        guard !isUnsafe else {
            problem(path, "\"\(TerminalText.printable(name, limit: 80))\" cannot name files",
                    hint: "no '/', '\\', '..' or control characters, at most 200 bytes")
            return nil
        }
        return name
    }

    mutating func bool(_ value: JSONValue?, _ path: String) -> Bool? {
        guard let value else { return nil }
        guard let flag = value.boolValue else {
            problem(path, "expected true or false, found \(value.kindName)")
            return nil
        }
        return flag
    }

    mutating func integer(_ value: JSONValue?, _ path: String, in range: ClosedRange<Int>) -> Int? {
        guard let value else { return nil }
        guard let number = value.integerValue else {
            problem(path, value.numberValue != nil ? "expected a whole number, found \(formatNumber(value.numberValue!))"
                : "expected a whole number, found \(value.kindName)")
            return nil
        }
        guard range.contains(number) else {
            problem(path, "\(number) is out of range", hint: "use \(range.lowerBound)...\(range.upperBound)")
            return nil
        }
        return number
    }

    mutating func number(_ value: JSONValue?, _ path: String, minimum: Double, maximum: Double) -> Double? {
        guard let value else { return nil }
        guard let number = value.numberValue else {
            problem(path, "expected a number, found \(value.kindName)")
            return nil
        }
        guard number >= minimum, number <= maximum else {
            problem(path, "\(formatNumber(number)) is out of range", hint: "use \(formatNumber(minimum))...\(formatNumber(maximum))")
            return nil
        }
        return number
    }

    mutating func duration(_ value: JSONValue?, _ path: String, minimum: Duration = .zero) -> Duration? {
        guard let value else { return nil }
        guard let text = value.stringValue else {
            problem(path, "expected a duration string, found \(value.kindName)", hint: "use 500ms, 10s, 5m, 2h")
            return nil
        }
        guard let duration = parseDuration(text) else {
            problem(path, "\"\(text)\" is not a duration", hint: "use 500ms, 10s, 5m, 2h")
            return nil
        }
        guard duration >= minimum else {
            problem(path, "\"\(text)\" is too short", hint: "at least \(formatDuration(minimum))")
            return nil
        }
        return duration
    }

    mutating func choice<T: RawRepresentable & CaseIterable>(_ value: JSONValue?, _ path: String, as type: T.Type) -> T?
    where T.RawValue == String {
        guard let text = string(value, path) else { return nil }
        if let choice = T(rawValue: text) { return choice }
        let names = T.allCases.map(\.rawValue)
        problem(path, "\"\(text)\" is not one of " + names.map { "\"\($0)\"" }.joined(separator: ", "),
            hint: suggestion(for: text, among: names))
        return nil
    }

    mutating func array(_ value: JSONValue?, _ path: String) -> [JSONValue]? {
        guard let value else { return nil }
        guard let elements = value.arrayValue else {
            problem(path, "expected an array, found \(value.kindName)")
            return nil
        }
        return elements
    }

    mutating func byteSize(_ value: JSONValue?, _ path: String) -> Int64? {
        guard let value else { return nil }
        if let number = value.numberValue, number >= 0, number.rounded() == number, number < 9e15 { return Int64(number) }
        guard let text = value.stringValue, let size = parseByteSize(text) else {
            problem(path, "\(value.stringValue.map { "\"\($0)\"" } ?? value.kindName) is not a size", hint: "use 65536, 512KiB, 256MiB, 1GiB")
            return nil
        }
        return size
    }

}

/// RFC 9110 token characters (header names, subprotocols).
func isTokenByte(_ byte: UInt8) -> Bool { HTTPHeaders.isTokenByte(byte) }

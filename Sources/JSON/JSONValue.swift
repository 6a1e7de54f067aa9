/// A JSON document as a value: objects keep their keys in source order (reports and profiles read in the
/// order they were written), numbers are Doubles (integers are exact up to 2^53).
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The kind of value, as error messages name it.
    package var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    package var stringValue: String? { if case .string(let value) = self { value } else { nil } }
    package var numberValue: Double? { if case .number(let value) = self { value } else { nil } }
    package var boolValue: Bool? { if case .bool(let value) = self { value } else { nil } }
    package var arrayValue: [JSONValue]? { if case .array(let value) = self { value } else { nil } }
    package var objectValue: JSONObject? { if case .object(let value) = self { value } else { nil } }

    /// The number as an integer, if it is one exactly.
    package var integerValue: Int? {
        guard case .number(let value) = self, value.rounded() == value, abs(value) < 9.007_199_254_740_992e15
        else { return nil }
        return Int(value)
    }

    /// The member `key` of an object (nil for other kinds or a missing key).
    package subscript(key: String) -> JSONValue? { objectValue?[key] }
}

/// A JSON object with its keys in insertion order.
package struct JSONObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    package private(set) var keys: [String] = []
    private var values: [String: JSONValue] = [:]

    package init() {}

    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        for (key, value) in elements { self[key] = value }
    }

    package subscript(key: String) -> JSONValue? {
        get { values[key] }
        set {
            if let newValue {
                if values.updateValue(newValue, forKey: key) == nil { keys.append(key) }
            } else if values.removeValue(forKey: key) != nil {
                keys.removeAll { $0 == key }
            }
        }
    }

    package var count: Int { keys.count }
    package var isEmpty: Bool { keys.isEmpty }

    /// The members in order.
    package var members: [(key: String, value: JSONValue)] { keys.map { ($0, values[$0]!) } }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int) { self = .number(Double(value)) }
    package init(floatLiteral value: Double) { self = .number(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object = JSONObject()
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
    package init(nilLiteral: ()) { self = .null }
}

extension JSONValue {
    /// The largest magnitude a JSON number (a `Double` here) holds exactly: 2^53−1, what ``integerValue`` reads.
    package static let maximumExactInteger: Int64 = (1 << 53) - 1

    /// An integer count as a JSON number, saturated at ±(2^53−1): beyond it the number would be written inexactly
    /// and every reader here (``integerValue``) would refuse it, so a report, merged report or run journal holding a
    /// huge counter could not be read back. The one place every integer written to JSON passes.
    package init(_ value: some BinaryInteger) {
        if value > Self.maximumExactInteger {
            self = .number(Double(Self.maximumExactInteger))
        } else if value < -Self.maximumExactInteger {
            self = .number(Double(-Self.maximumExactInteger))
        } else {
            self = .number(Double(value))
        }
    }
    /// A string, or null when absent.
    package init(_ value: String?) { self = value.map { .string($0) } ?? .null }
}

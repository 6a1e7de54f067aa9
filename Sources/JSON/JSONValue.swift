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

/// A JSON object with its keys in insertion order. Small objects (most messages a flow matches) are a plain array
/// of members searched in order; past ``indexThreshold`` members a dictionary from key to position is built too, so
/// large objects (reports) keep constant-time lookups.
package struct JSONObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    private var storage: [(key: String, value: JSONValue)] = []
    /// Key → position in `storage`, once the object has more than `indexThreshold` members.
    private var index: [String: Int]?
    /// The member count up to which a linear search is cheaper than hashing every key.
    static let indexThreshold = 8

    package init() {}

    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        for (key, value) in elements { self[key] = value }
    }

    private static func index(of storage: [(key: String, value: JSONValue)]) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: storage.enumerated().map { ($0.element.key, $0.offset) })
    }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return storage.firstIndex { $0.key == key }
    }

    package subscript(key: String) -> JSONValue? {
        get { position(of: key).map { storage[$0].value } }
        set {
            if let newValue {
                if let existing = position(of: key) {
                    storage[existing].value = newValue
                } else {
                    append(key, newValue)
                }
            } else if let existing = position(of: key) {
                storage.remove(at: existing)
                index = storage.count > Self.indexThreshold ? Self.index(of: storage) : nil
            }
        }
    }

    /// Appends a member unless `key` is there already (then nothing changes): false for a duplicate.
    package mutating func appendIfAbsent(_ key: String, _ value: JSONValue) -> Bool {
        guard position(of: key) == nil else { return false }
        append(key, value)
        return true
    }

    /// Appends a member whose key is not there yet.
    private mutating func append(_ key: String, _ value: JSONValue) {
        storage.append((key, value))
        if index != nil {
            index![key] = storage.count - 1
        } else if storage.count > Self.indexThreshold {
            index = Self.index(of: storage)
        }
    }

    /// Room for `count` members without reallocating.
    package mutating func reserveCapacity(_ count: Int) { storage.reserveCapacity(count) }

    /// The keys in order.
    package var keys: [String] { storage.map(\.key) }
    package var count: Int { storage.count }
    package var isEmpty: Bool { storage.isEmpty }

    /// The members in order.
    package var members: [(key: String, value: JSONValue)] { storage }

    /// Equal when the same keys come in the same order with equal values.
    package static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.storage.count == rhs.storage.count
            && zip(lhs.storage, rhs.storage).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
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
    package init(_ value: some BinaryInteger) { self = .number(Double(Self.saturated(value))) }

    /// `value` clamped to ±(2^53−1), as every integer written to JSON is (``init(_:)``, the compact text of a
    /// `send.json` typed hole).
    package static func saturated(_ value: some BinaryInteger) -> Int64 {
        if value > maximumExactInteger { return maximumExactInteger }
        if value < -maximumExactInteger { return -maximumExactInteger }
        return Int64(value)
    }
    /// A string, or null when absent.
    package init(_ value: String?) { self = value.map { .string($0) } ?? .null }
}

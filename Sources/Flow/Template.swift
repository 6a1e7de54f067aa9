import JSON

/// A value a template can name inside `${...}`.
package enum TemplateValue: Sendable, Hashable {
    /// `${vu}`: the connection's number in the run (shard-aware, stable across reconnects).
    case vu
    /// `${iteration}`: the innermost enclosing loop's iteration, from 0 (0 outside loops).
    case iteration
    /// `${seq}`: the sequence number of the message being built: one per send, from 0 when the steps start on a new
    /// connection (a `reconnect` step keeps counting).
    case sequence
    /// `${uuid}`: a random version-4 UUID, lowercase.
    case uuid
    /// `${now_ms}`: the wall clock in milliseconds since 1970.
    case nowMilliseconds
    /// `${random.int(a,b)}`: a uniform integer in a...b.
    case randomInteger(ClosedRange<Int64>)
    /// `${random.string(n)}`: n random characters from [A-Za-z0-9].
    case randomString(Int)
    /// `${users.token}`: a column of the row the connection bound from feeder `source` (a key of the profile's
    /// `data`).
    case feeder(source: String, column: String)
    /// `${room}`: a variable captured by an earlier step.
    case variable(String)
}

/// What a template reads when it is expanded: the interpreter's per-connection state.
package protocol TemplateScope {
    var vu: Int { get }
    var iteration: Int { get }
    var sequence: UInt64 { get }
    var nowMilliseconds: Int64 { get }
    /// The next draw of the connection's seeded generator (uuid, random.int, random.string).
    mutating func nextRandom() -> UInt64
    /// The bound row's value of `column` in feeder `source`; nil if the connection bound none.
    func feederValue(source: String, column: String) -> JSONValue?
    /// A captured variable; nil while undefined.
    func variable(_ name: String) -> JSONValue?
}

/// A template variable that had no value when the template was expanded.
package struct TemplateFailure: Error, Sendable, Equatable {
    /// The value as the template spells it, e.g. `room` or `users.token`.
    package var name: String

    package init(name: String) { self.name = name }
}

/// A template syntax error at a byte offset of the template text.
package struct TemplateSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    package var offset: Int
    package var message: String
    package var description: String { "at byte \(offset): \(message)" }

    package init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }
}

/// A string with `${...}` placeholders, parsed once when the profile is validated (never per message).
/// `$$` is a literal `$`.
package struct Template: Sendable, Equatable {
    /// A run of literal text (`$$` already unescaped to `$`) or one placeholder.
    package enum Part: Sendable, Equatable {
        case literal(String)
        case value(TemplateValue)
    }

    package var parts: [Part]

    package init(parts: [Part]) { self.parts = parts }
}

/// A JSON value whose strings may hold templates. Expanding builds a ``JSONValue`` (a template inside a string
/// becomes part of that string, escaped when written), never JSON text by concatenation. A string that is
/// exactly one placeholder takes the value's own JSON type (a captured number stays a number; `${vu}` is a number).
package indirect enum JSONTemplate: Sendable, Equatable {
    /// A value with no template anywhere inside.
    case constant(JSONValue)
    case string(Template)
    case array([JSONTemplate])
    case object([(key: String, value: JSONTemplate)])

    package static func == (lhs: JSONTemplate, rhs: JSONTemplate) -> Bool {
        switch (lhs, rhs) {
        case (.constant(let a), .constant(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.map(\.key) == b.map(\.key) && a.map(\.value) == b.map(\.value)
        default: false
        }
    }
}

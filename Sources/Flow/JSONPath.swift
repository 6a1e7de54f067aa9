import JSON

/// A path into a JSON value: `$`, `$.a.b[0]`, `$["key with spaces"]`, `$[2].name`. Parsed once at validation.
package struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    /// One step of a path: an object member by key, or an array element by 0-based index.
    package enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    package var components: [Component]
    /// The path as written in the profile.
    package var description: String

    package init(components: [Component], description: String) {
        self.components = components
        self.description = description
    }
}

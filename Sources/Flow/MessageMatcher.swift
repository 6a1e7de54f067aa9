import JSON

/// One test on the value at a JSON path; all of a matcher's conditions must hold.
package struct JSONCondition: Sendable, Equatable {
    package enum Test: Sendable, Equatable {
        /// Equal as JSON values (numbers by value, objects regardless of key order); the value may hold templates.
        case equals(JSONTemplate)
        /// The path resolves (true) or does not (false).
        case exists(Bool)
        /// Equal to one of the values.
        case oneOf([JSONTemplate])
        /// A string that the regular expression matches (anywhere, unless anchored).
        case regex(FlowRegex)
        /// A number that compares so with the limit.
        case compare(NumericComparison, Double)
    }

    package enum NumericComparison: String, Sendable, CaseIterable {
        case less = "lt", lessOrEqual = "le", greater = "gt", greaterOrEqual = "ge"
    }

    package var path: JSONPath
    package var test: Test

    package init(path: JSONPath, test: Test) {
        self.path = path
        self.test = test
    }
}

/// What a message must be for an `expect` (or a `classify` entry) to take it.
package enum MessageMatcher: Sendable, Equatable {
    /// Any message.
    case any
    /// A text message holding a JSON document for which every condition holds.
    case json([JSONCondition])
    /// A text message the regular expression matches.
    case text(FlowRegex)
    /// A binary message of a length in `length` (nil: any) starting with `prefix`.
    case binary(length: ClosedRange<Int>?, prefix: [UInt8])
}

/// Where a captured variable's value comes from in the matched message.
package enum CaptureSource: Sendable, Equatable {
    /// The value at a path of the JSON message (or of a preset's payload).
    case path(JSONPath)
    /// A text matcher's capture group (0: the whole match), as a string.
    case group(Int)
}

package struct Capture: Sendable, Equatable {
    package var variable: String
    package var source: CaptureSource

    package init(variable: String, source: CaptureSource) {
        self.variable = variable
        self.source = source
    }
}

/// A message as the matchers see it: the text, and its JSON parsed at most once however many matchers look.
package enum FlowMessage: Sendable {
    case text(String)
    case binary([UInt8])
}

import JSON

/// The correctness oracle's findings: per invariant, how many observations were checked and how many
/// broke it, with a few examples (the actor and its recent history). Adds exactly, like `MetricSet`.
package struct InvariantReport: Sendable, Equatable {
    /// One violation: the actor, its scenario, what was wrong, and its recent history.
    package struct Example: Sendable, Equatable {
        package var actor: Int
        package var scenario: String
        package var detail: String
        /// The actor's recent events, oldest first.
        package var history: [String]

        package init(actor: Int, scenario: String, detail: String, history: [String]) {
            self.actor = actor
            self.scenario = scenario
            self.detail = detail
            self.history = history
        }
    }

    /// Examples kept per invariant.
    package static let maximumExamples = 5

    package var checked: [String: UInt64] = [:]
    package var violations: [String: UInt64] = [:]
    package var examples: [String: [Example]] = [:]

    package init() {}

    package var violationCount: UInt64 { violations.values.reduce(0, saturatingSum) }
    package var isHeld: Bool { violationCount == 0 }

    package mutating func add(_ other: InvariantReport) {
        // Counts read from reports (up to 2^53 each) saturate rather than trap when merged.
        for (name, count) in other.checked { checked[name] = saturatingSum(checked[name] ?? 0, count) }
        for (name, count) in other.violations { violations[name] = saturatingSum(violations[name] ?? 0, count) }
        for (name, list) in other.examples {
            let room = Self.maximumExamples - (examples[name]?.count ?? 0)
            if room > 0 { examples[name, default: []] += list.prefix(room) }
        }
    }

    package func json() -> JSONValue {
        var object = JSONObject()
        for name in Set(checked.keys).union(violations.keys).sorted() {
            object[name] = [
                "checked": JSONValue(checked[name] ?? 0), "violations": JSONValue(violations[name] ?? 0),
                "examples": .array((examples[name] ?? []).map { example in
                    [
                        "actor": JSONValue(example.actor), "scenario": .string(example.scenario),
                        "detail": .string(example.detail), "history": .array(example.history.map { .string($0) }),
                    ]
                }),
            ]
        }
        return .object(object)
    }

    package init(json value: JSONValue, path: String) throws(ReportFormatError) {
        guard let object = value.objectValue else { throw ReportFormatError(path: path, reason: "expected an object") }
        for (name, entry) in object.members {
            guard let checkedCount = entry["checked"]?.integerValue, let violationCount = entry["violations"]?.integerValue,
                checkedCount >= 0, violationCount >= 0
            else { throw ReportFormatError(path: "\(path).\(name)", reason: "expected checked and violations counts") }
            checked[name] = UInt64(checkedCount)
            violations[name] = UInt64(violationCount)
            examples[name] = (entry["examples"]?.arrayValue ?? []).prefix(Self.maximumExamples).map { example in
                Example(
                    actor: example["actor"]?.integerValue ?? 0, scenario: example["scenario"]?.stringValue ?? "",
                    detail: example["detail"]?.stringValue ?? "",
                    history: example["history"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            }
        }
    }
}

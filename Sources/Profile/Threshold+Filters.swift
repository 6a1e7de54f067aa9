/// A threshold's metric filter, `{scenario=NAME}` and a family's tag (`{step=NAME}`, `{type=NAME}`), and what it
/// resolves to: a catalogue metric or a family member.
extension Threshold {
    /// The metric part of a threshold's first word, split into its name and filters.
    struct Filter {
        var name: String
        var scenario: String?
        /// A family tag filter: its key (`step`, `type`) and value.
        var tag: (key: String, value: String)?

        /// Parses `NAME`, `NAME{k=v}` or `NAME{k=v,k=v}`.
        static func parse(_ word: String) -> Result<Filter, ThresholdSyntaxError> {
            guard let brace = word.firstIndex(of: "{") else { return .success(Filter(name: word)) }
            var filter = Filter(name: String(word[..<brace]))
            let braces = word[brace...]
            let hint = "write {scenario=NAME}, {step=NAME} (flow.step, flow.first_result, errors) or "
                + "{type=NAME} (flow.pushed), comma-separated, e.g. {scenario=chat,step=join}"
            guard braces.hasSuffix("}"), braces.count > 2 else {
                return .failure(ThresholdSyntaxError(message: "\"\(braces)\" is not a metric filter", hint: hint))
            }
            for pair in braces.dropFirst().dropLast().split(separator: ",", omittingEmptySubsequences: false) {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                    return .failure(ThresholdSyntaxError(message: "\"\(pair)\" in \"\(braces)\" is not KEY=VALUE", hint: hint))
                }
                let key = String(parts[0]), value = String(parts[1])
                if key == "scenario" {
                    guard filter.scenario == nil else {
                        return .failure(ThresholdSyntaxError(message: "\"\(braces)\" names scenario twice", hint: hint))
                    }
                    filter.scenario = value
                } else {
                    guard filter.tag == nil else {
                        return .failure(ThresholdSyntaxError(message: "\"\(braces)\" has two tag filters", hint: hint))
                    }
                    filter.tag = (key, value)
                }
            }
            return .success(filter)
        }
    }

    /// The families a threshold's tag filter may name, by the stem it is written with (`flow.step`); `errors`
    /// takes a step filter too (the step's failures).
    static let taggedFamilies: [MetricFamily] = MetricCatalog.families.filter { $0.notThresholdable == nil }

    /// The metric (and family) a name and tag filter denote, or why they denote none.
    static func resolve(_ name: String, tag: (key: String, value: String)?) -> Result<(Metric, MetricFamily?), ThresholdSyntaxError> {
        let names = MetricCatalog.thresholdable.map(\.name) + taggedFamilies.map { "\($0.stem){\($0.tag)=NAME}" }
        if let family = MetricCatalog.families.first(where: { $0.stem == name }) {
            if let reason = family.notThresholdable {
                return .failure(ThresholdSyntaxError(
                    message: "\(name) cannot be a threshold: \(reason)", hint: "metrics: " + names.joined(separator: ", ")))
            }
            guard let tag else {
                return .failure(ThresholdSyntaxError(
                    message: "\(name) needs a \(family.tag) filter", hint: "write \(name){\(family.tag)=NAME}"))
            }
            guard tag.key == family.tag else {
                return .failure(ThresholdSyntaxError(
                    message: "\(name) is tagged by \(family.tag), not \(tag.key)", hint: "write \(name){\(family.tag)=NAME}"))
            }
            if let problem = checkTagValue(tag.value, of: family) { return .failure(problem) }
            let member = Metric(
                family.name(tag.value), family.kind, family.kind == .latency ? .microseconds : .count, family.area,
                family.summary, when: family.condition)
            return .success((member, family))
        }
        guard let metric = MetricCatalog.metric(named: name), metric.isThresholdable else {
            if let reason = MetricCatalog.metric(named: name)?.notThresholdable {
                return .failure(ThresholdSyntaxError(
                    message: "\(name) cannot be a threshold: \(reason)", hint: "metrics: " + names.joined(separator: ", ")))
            }
            if let family = MetricCatalog.family(of: name) {
                let member = family.tag(of: name) ?? ""
                let written = family.notThresholdable == nil ? "\(family.stem){\(family.tag)=\(member)}"
                    : family == .flowStepErrors ? "\(Metric.errors.name){step=\(member)}" : nil
                guard let written else {
                    return .failure(ThresholdSyntaxError(
                        message: "\(name) cannot be a threshold: \(family.notThresholdable ?? "")",
                        hint: "metrics: " + names.joined(separator: ", ")))
                }
                return .failure(ThresholdSyntaxError(
                    message: "\(name) is a member of \(family.documentedName)", hint: "write \(written)"))
            }
            return .failure(ThresholdSyntaxError(
                message: "unknown metric \"\(name)\"",
                hint: suggestion(for: name, among: names) ?? "metrics: " + names.joined(separator: ", ")))
        }
        guard let tag else { return .success((metric, nil)) }
        guard metric == .errors, tag.key == MetricFamily.flowStepErrors.tag else {
            let tagged = taggedFamilies.map { "\($0.stem){\($0.tag)=NAME}" } + ["\(Metric.errors.name){step=NAME}"]
            return .failure(ThresholdSyntaxError(
                message: "\(name) has no \(tag.key) tag", hint: "tag filters apply to " + tagged.joined(separator: ", ")))
        }
        if let problem = checkTagValue(tag.value, of: .flowStepErrors) { return .failure(problem) }
        return .success((metric, .flowStepErrors))
    }

    /// A step name must be one a profile can declare (`[A-Za-z0-9_-]{1,64}`); a type is classify's or a server's.
    private static func checkTagValue(_ value: String, of family: MetricFamily) -> ThresholdSyntaxError? {
        guard family.tag == "step" else { return nil }
        let isName = value.utf8.count <= 64 && value.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x5F || byte == 0x2D
        }
        return isName ? nil : ThresholdSyntaxError(
            message: "\"\(value)\" is not a step name", hint: "step names are 1 to 64 of A-Z a-z 0-9 _ -")
    }

    /// The step a threshold names (`flow.step{step=X}`, `flow.first_result{step=X}`, `errors{step=X}`), if any.
    package var step: String? { family?.tag == "step" ? tag : nil }

    /// Why the threshold's step filter names no step of `scenarios` (nil: it names one, or has none): the step must
    /// be a named step of a flow scenario — of its `{scenario=}` one when it has that filter. For the decoder's
    /// problem list, at the threshold's path.
    package func unknownStep(in scenarios: [Scenario]) -> ThresholdSyntaxError? {
        guard let step else { return nil }
        let candidates = scenarios.filter { scenario == nil || $0.name == scenario }
        let names = candidates.flatMap { $0.websocket.flow?.stepNames ?? [] }
        if names.contains(step) { return nil }
        let place = scenario.map { "scenario \"\($0)\"" } ?? "any flow scenario"
        return ThresholdSyntaxError(
            message: "no step of \(place) is named \"\(step)\"",
            hint: suggestion(for: step, among: names) ?? (names.isEmpty ? "only flow scenarios have steps"
                : "steps: " + names.joined(separator: ", ")))
    }
}

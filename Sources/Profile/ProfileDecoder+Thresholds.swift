import JSON

/// The thresholds and their references to scenarios.
extension ProfileReader {
    mutating func thresholds(_ value: JSONValue?, scenarios: [Scenario]) -> [Threshold] {
        let scenarioNames = Set(scenarios.map(\.name))
        guard let list = array(value, "thresholds") else { return [] }
        var thresholds: [Threshold] = []
        for (index, element) in list.enumerated() {
            let path = "thresholds[\(index)]"
            var expression: String?
            var abortOnFail = false
            var abortDelay: Duration = .zero
            if case .object = element {
                guard let object = object(element, path, kind: "threshold") else { continue }
                expression = required(object, "expression", path).flatMap { string($0, Self.join(path, "expression")) }
                abortOnFail = bool(object["abortOnFail"], Self.join(path, "abortOnFail")) ?? false
                abortDelay = duration(object["abortDelay"], Self.join(path, "abortDelay")) ?? .zero
            } else if case .string(let text) = element {
                expression = text
            } else {
                problem(path, "expected a threshold string or object, found \(element.kindName)",
                        hint: "e.g. \"\(Threshold.example)\"")
            }
            guard let expression else { continue }
            switch Threshold.parse(expression) {
            case .failure(let error):
                problem(path, error.message, hint: error.hint)
            case .success(var threshold):
                if let scenario = threshold.scenario, !scenarioNames.contains(scenario) {
                    problem(path, "no scenario is named \"\(scenario)\"",
                            hint: suggestion(for: scenario, among: scenarioNames.sorted()))
                    continue
                }
                if let error = threshold.unknownStep(in: scenarios) {
                    problem(path, error.message, hint: error.hint)
                    continue
                }
                threshold.abortOnFail = abortOnFail
                threshold.abortDelay = abortDelay
                thresholds.append(threshold)
            }
        }
        return thresholds
    }
}

import Flow
import JSON
import LoadEngine
import Profile
import Reporting

/// Flow scenarios built in code (against the embedded server's echo at `/`), for the interpreter's tests.
enum FlowBuild {
    static func literal(_ text: String) -> Template { Template(parts: [.literal(text)]) }

    static func path(_ keys: String...) -> JSONPath {
        JSONPath(components: keys.map { .key($0) }, description: "$." + keys.joined(separator: "."))
    }

    static func send(_ value: JSONValue) -> FlowStep { FlowStep(action: .send(.json(.constant(value))), path: "s") }

    static func send(_ template: JSONTemplate) -> FlowStep { FlowStep(action: .send(.json(template)), path: "s") }

    static func sendText(_ template: Template) -> FlowStep { FlowStep(action: .send(.text(template)), path: "s") }

    /// An expect on `$.<key> == value`.
    static func expectation(_ key: String, equals value: JSONValue, within: Duration = .seconds(10)) -> FlowExpectation {
        FlowExpectation(matcher: .json([JSONCondition(path: path(key), test: .equals(.constant(value)))]), within: within)
    }

    static func step(_ action: FlowStep.Action, name: String? = nil) -> FlowStep {
        FlowStep(action: action, name: name, path: "scenarios[0].steps")
    }

    /// Numbers the names of the steps (document order) into `nameIndex` and `stepNames`.
    static func scenario(_ steps: [FlowStep], classify: [(type: String, matcher: MessageMatcher)] = []) -> FlowScenario {
        var names: [String] = []
        func number(_ steps: [FlowStep]) -> [FlowStep] {
            steps.map { step in
                var step = step
                if let name = step.name {
                    step.nameIndex = names.firstIndex(of: name) ?? names.count
                    if !names.contains(name) { names.append(name) }
                }
                switch step.action {
                case .loop(var loop):
                    loop.steps = number(loop.steps)
                    step.action = .loop(loop)
                case .group(let inner): step.action = .group(number(inner))
                case .ifThen(let condition, let then, let otherwise):
                    step.action = .ifThen(condition, then: number(then), otherwise: number(otherwise))
                default: break
                }
                return step
            }
        }
        var flow = FlowScenario()
        flow.steps = number(steps)
        flow.stepNames = names
        flow.classify = classify
        return flow
    }

    /// A profile with one flow scenario against the embedded server.
    static func profile(_ flow: FlowScenario, connections: Int = 1, duration: String = "30s",
                        reconnect: String = "") throws -> Profile {
        var profile = try LoadEngineTests.profile("""
            {"version": 1, "name": "flow", "target": "embedded", "duration": "\(duration)", "gracefulStop": "5s",
             "seed": 7, "scenarios": [{"name": "f", "pattern": "echo", "connections": \(connections)\(reconnect)}]}
            """)
        profile.scenarios[0].websocket.pattern = .flow
        profile.scenarios[0].websocket.flow = flow
        return profile
    }
}

extension MetricSet {
    func step(_ name: String) -> UInt64 { histograms[MetricFamily.flowStep.name(name)]?.totalCount ?? 0 }
    func stepErrors(_ name: String) -> UInt64 { counter(MetricFamily.flowStepErrors.name(name)) }
    func pushed(_ type: String) -> UInt64 { counter(MetricFamily.flowPushed.name(type)) }
}

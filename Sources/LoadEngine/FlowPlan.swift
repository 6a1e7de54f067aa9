import Flow
import JSON
import Profile
import WebSocket

/// A flow scenario made ready to run, once per run: the steps as a tree of ``FlowNode``s with constant payloads
/// encoded up front, the classifiers' metric slots, and the feeders the connections bind rows of. Shared by every
/// connection of the scenario (immutable).
final class FlowPlan: Sendable {
    let scenario: FlowScenario
    let nodes: [FlowNode]
    /// The distinct `classify` types, then `other`: the recorder's `flow.pushed` slots.
    let pushedTypes: [String]
    /// For each `classify` entry, its slot in ``pushedTypes``.
    let classifySlots: [Int]
    /// socketio events no `on` takes (no `classify` there): the names counted by name, bounded per run.
    let pushedEvents: PushedEventNames
    let feeders: FeederTables
    /// Which row of each feeder a connection binds.
    let binding: FeederBinding
    let scenarioIndex: Int
    /// The first connection number of this process's slice (a shard runs connections `vuOffset...`).
    let vuOffset: Int

    init(_ scenario: FlowScenario, profile: Profile, scenarioIndex: Int, vuOffset: Int) {
        self.scenario = scenario
        nodes = scenario.steps.map(FlowNode.init)
        var types: [String] = []
        var slots: [Int] = []
        for entry in scenario.classify {
            if let slot = types.firstIndex(of: entry.type) {
                slots.append(slot)
            } else {
                slots.append(types.count)
                types.append(entry.type)
            }
        }
        types.append(MetricFamily.flowPushedOther)
        pushedTypes = types
        classifySlots = slots
        pushedEvents = PushedEventNames(scenario)
        feeders = profile.feederTables
        binding = FeederBinding(profile: profile)
        self.scenarioIndex = scenarioIndex
        self.vuOffset = vuOffset
    }

    /// The `flow.pushed` slot of a message no expect took: the first classifier that matches, else `other`.
    func pushedSlot(_ message: inout ParsedMessage, scope: inout FlowState) -> Int {
        for (index, entry) in scenario.classify.enumerated() {
            if case .matched = entry.matcher.match(&message, captures: [], scope: &scope) { return classifySlots[index] }
        }
        return pushedTypes.count - 1
    }
}

/// One step ready to run: the profile's step, its children (loop, group, `if`), and a constant payload already
/// encoded as the message it sends.
final class FlowNode: Sendable {
    let step: FlowStep
    let children: [FlowNode]
    let otherwise: [FlowNode]
    /// A `send` whose payload has no template, encoded once.
    let constant: WebSocketConnection.Message?
    /// A templated `send`'s references to captured variables and feeder columns (the oracle's definedness check),
    /// listed once here rather than per message.
    let capturedReferences: [TemplateValue]
    /// A templated `send.json`, compiled to its text with holes (no JSON value built per message).
    let jsonText: JSONTextTemplate?

    init(_ step: FlowStep) {
        self.step = step
        switch step.action {
        case .loop(let loop):
            children = loop.steps.map(FlowNode.init)
            otherwise = []
        case .group(let steps):
            children = steps.map(FlowNode.init)
            otherwise = []
        case .ifThen(_, let then, let otherwise):
            children = then.map(FlowNode.init)
            self.otherwise = otherwise.map(FlowNode.init)
        default:
            children = []
            otherwise = []
        }
        constant = switch step.action {
        case .send(.text(let template)) where template.parts.allSatisfy({ if case .literal = $0 { true } else { false } }):
            .text(template.parts.reduce(into: "") { text, part in if case .literal(let literal) = part { text += literal } })
        case .send(.binary(let bytes)): .binary(bytes)
        case .send(.json(.constant(let value))): .text(value.formatted(pretty: false))
        default: nil
        }
        jsonText = switch step.action {
        case .send(.json(let template)) where constant == nil: JSONTextTemplate(template)
        default: nil
        }
        let references: [TemplateValue] = switch step.action {
        case .send(.text(let template)): template.references
        case .send(.json(let template)): template.references
        default: []
        }
        capturedReferences = references.filter { reference in
            switch reference {
            case .variable, .feeder: true
            default: false
            }
        }
    }
}

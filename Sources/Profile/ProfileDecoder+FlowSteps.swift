import Flow
import JSON

/// The steps of a flow scenario: one action key per step (plus an optional `name`), checked in document order so a
/// variable, a mark or a subscription is known only after the step that makes it.
extension ProfileReader {
    /// The action keys a step may have, one of them.
    static let flowActions = [
        "send", "expect", "think", "loop", "group", "ping", "close", "reconnect", "mark", "if", "emit", "on", "query",
        "subscribe", "unsubscribe",
    ]

    mutating func steps(_ value: JSONValue?, _ path: String, _ declarations: inout FlowDeclarations,
                        connections: Int) -> [FlowStep]? {
        guard let list = array(value, path) else { return nil }
        if list.isEmpty { problem(path, "must hold at least one step") }
        let before = problems.count
        var steps: [FlowStep] = []
        for (index, element) in list.enumerated() {
            if let step = step(element, path + "[\(index)]", &declarations, connections: connections) { steps.append(step) }
        }
        return problems.count == before && !list.isEmpty ? steps : nil
    }

    /// Steps that must be present and non-empty (`loop`, `group`, `then`).
    mutating func body(_ object: JSONObject, _ key: String, _ path: String, _ declarations: inout FlowDeclarations,
                       connections: Int) -> [FlowStep]? {
        guard let value = required(object, key, path) else { return nil }
        return steps(value, Self.join(path, key), &declarations, connections: connections)
    }

    mutating func step(_ value: JSONValue, _ path: String, _ declarations: inout FlowDeclarations, connections: Int) -> FlowStep? {
        guard let object = object(value, path, kind: "flowStep") else { return nil }
        guard let action = exactlyOneKey(of: Self.flowActions, in: object, path, missing: "has no action", plural: "actions")
        else { return nil }
        let before = problems.count
        // The name is declared before the step's body, so a group's name comes before the names inside it.
        var name: String?
        var nameIndex: Int?
        if object["name"] != nil, let text = flowName(object["name"], Self.join(path, "name")) {
            if declarations.stepNames.contains(text) {
                problem(Self.join(path, "name"), "\"\(text)\" names two steps", hint: "step names are unique in a scenario")
            } else {
                nameIndex = declarations.stepNames.count
                declarations.stepNames.append(text)
                name = text
            }
        }
        let isTimed = ["expect", "group", "ping", "on", "query", "subscribe"].contains(action)
            || (action == "emit" && object["emit"]?["ack"] == .bool(true))
        if isTimed && object["name"] == nil {
            problem(Self.join(path, "name"), "is required for a timed step (\(action))", hint: "it tags flow.step{step=NAME}")
        }
        let presetOf: [String: FlowScenario.Preset] = [
            "emit": .socketio, "on": .socketio, "query": .graphqlWS, "subscribe": .graphqlWS, "unsubscribe": .graphqlWS,
        ]
        if let needed = presetOf[action], needed != declarations.preset {
            problem(Self.join(path, action), "\(action) needs \"protocol\": \"\(needed.rawValue)\"",
                    hint: "this scenario's protocol is \(declarations.preset.rawValue)")
            return nil
        }
        if action == "expect", declarations.preset != .raw {
            // A preset's runtime takes every message itself (Engine.IO / Socket.IO, graphql-transport-ws framing):
            // none would ever reach an expect, so it could only time out.
            problem(Self.join(path, action), "expect needs \"protocol\": \"raw\"", hint: declarations.preset == .socketio
                ? "a socketio flow waits for an event with on (or an emit's ack)"
                : "a graphql-ws flow waits for results with query or subscribe")
            return nil
        }
        let actionPath = Self.join(path, action)
        let actionValue = object[action]!
        let decoded: FlowStep.Action?
        switch action {
        case "send": decoded = send(actionValue, actionPath, &declarations).map { .send($0) }
        case "expect": decoded = expectation(actionValue, actionPath, &declarations).map { .expect($0) }
        case "think": decoded = think(actionValue, actionPath).map { .think($0) }
        case "loop": decoded = loop(actionValue, actionPath, &declarations, connections: connections).map { .loop($0) }
        case "group":
            guard let group = self.object(actionValue, actionPath, kind: "group") else { return nil }
            decoded = body(group, "steps", actionPath, &declarations, connections: connections).map { .group($0) }
        case "ping":
            guard let ping = self.object(actionValue, actionPath, kind: "ping") else { return nil }
            let within = requiredWithin(ping, actionPath)
            let policy = choice(ping["onTimeout"], Self.join(actionPath, "onTimeout"), as: FlowFailurePolicy.self) ?? .continue
            decoded = within.map { .ping(within: $0, onTimeout: policy) }
        case "close": decoded = closeStep(actionValue, actionPath)
        case "reconnect": decoded = self.object(actionValue, actionPath, kind: "reconnectStep").map { _ in .reconnect }
        case "mark":
            decoded = flowName(actionValue, actionPath).map { mark in
                declarations.marks.insert(mark)
                return .mark(mark)
            }
        case "if": decoded = ifStep(actionValue, actionPath, &declarations, connections: connections)
        case "emit": decoded = emit(actionValue, actionPath, &declarations).map { .emit($0) }
        case "on": decoded = on(actionValue, actionPath, &declarations).map { .on($0) }
        case "query": decoded = graphQLQuery(actionValue, actionPath, &declarations).map { .query($0) }
        case "subscribe":
            decoded = graphQLSubscription(actionValue, actionPath, &declarations).map { .subscribe($0) }
            if let name { declarations.subscribeNames.insert(name) }
        default:
            guard let target = flowName(actionValue, actionPath) else { return nil }
            guard declarations.subscribeNames.contains(target) else {
                problem(actionPath, "\"\(target)\" names no earlier subscribe step",
                        hint: declarations.subscribeNames.isEmpty ? "name the subscribe step it ends"
                            : suggestion(for: target, among: declarations.subscribeNames.sorted()))
                return nil
            }
            decoded = .unsubscribe(target)
        }
        guard problems.count == before, let decoded else { return nil }
        return FlowStep(action: decoded, name: name, nameIndex: nameIndex, path: path)
    }

    mutating func send(_ value: JSONValue, _ path: String, _ declarations: inout FlowDeclarations) -> FlowPayload? {
        guard let object = object(value, path, kind: "send") else { return nil }
        guard let kind = exactlyOneKey(of: ["text", "binary", "json"], in: object, path, missing: "needs a payload",
                                       plural: "payloads") else { return nil }
        let payloadPath = Self.join(path, kind)
        switch kind {
        case "text": return template(object[kind], payloadPath, &declarations).map { .text($0) }
        case "binary":
            guard let bytes = binaryBytes(object[kind], payloadPath) else { return nil }
            if bytes.count > ProfileDecoder.maximumMessageSize { problem(payloadPath, "is larger than 64 MiB") }
            return .binary(bytes)
        default: return jsonTemplate(object[kind], payloadPath, &declarations).map { .json($0) }
        }
    }

    /// `from`: a mark an earlier step set.
    mutating func mark(from value: JSONValue?, _ path: String, _ declarations: FlowDeclarations) -> String? {
        guard let mark = flowName(value, path) else { return nil }
        guard declarations.marks.contains(mark) else {
            problem(path, "\"\(mark)\" is no earlier mark", hint: declarations.marks.isEmpty ? "set it with a mark step before"
                : suggestion(for: mark, among: declarations.marks.sorted()))
            return nil
        }
        return mark
    }

    /// A timed step's required `within`: how long it waits, at least 1 ms.
    mutating func requiredWithin(_ object: JSONObject, _ path: String, hint: String? = nil) -> Duration? {
        required(object, "within", path, hint: hint).flatMap { duration($0, Self.join(path, "within"), minimum: .milliseconds(1)) }
    }

    mutating func expectation(_ value: JSONValue, _ path: String, _ declarations: inout FlowDeclarations) -> FlowExpectation? {
        guard let object = object(value, path, kind: "expect") else { return nil }
        let before = problems.count
        let matcher = messageMatcher(object, path, &declarations)
        let within = requiredWithin(object, path, hint: "how long to wait, e.g. \"2s\"")
        let from = object["from"] == nil ? nil : mark(from: object["from"], Self.join(path, "from"), declarations)
        let skip = integer(object["skip"], Self.join(path, "skip"), in: 0...1_000_000)
        let policy = choice(object["onTimeout"], Self.join(path, "onTimeout"), as: FlowFailurePolicy.self)
        var groups: Int?
        var allowsPaths = true
        switch matcher {
        case .text(let regex)?:
            groups = regex.groupCount
            allowsPaths = false
        case .binary?: allowsPaths = false
        default: break
        }
        let captures = matcher == nil ? nil
            : self.captures(object["capture"], Self.join(path, "capture"), groups: groups, allowsPaths: allowsPaths, &declarations)
        guard problems.count == before, let matcher, let within, let captures else { return nil }
        var expectation = FlowExpectation(matcher: matcher, within: within)
        expectation.captures = captures
        expectation.from = from
        if let skip { expectation.skipLimit = skip }
        if let policy { expectation.onTimeout = policy }
        return expectation
    }

    mutating func think(_ value: JSONValue, _ path: String) -> ThinkTime? {
        if value.stringValue != nil { return duration(value, path).map { .fixed($0) } }
        guard let object = object(value, path, kind: "thinkRange") else { return nil }
        let minimum = required(object, "min", path).flatMap { duration($0, Self.join(path, "min")) }
        let maximum = required(object, "max", path).flatMap { duration($0, Self.join(path, "max")) }
        guard let minimum, let maximum else { return nil }
        guard minimum <= maximum else {
            problem(Self.join(path, "min"), "\(formatDuration(minimum)) is above max \(formatDuration(maximum))")
            return nil
        }
        return .uniform(minimum...maximum)
    }

    mutating func loop(_ value: JSONValue, _ path: String, _ declarations: inout FlowDeclarations, connections: Int) -> FlowLoop? {
        guard let object = object(value, path, kind: "loop") else { return nil }
        enum Per: String, CaseIterable { case connection, total }
        let before = problems.count
        let count = integer(object["count"], Self.join(path, "count"), in: 1...Int.max)
        let duration = self.duration(object["for"], Self.join(path, "for"), minimum: .milliseconds(1))
        let rate = number(object["rate"], Self.join(path, "rate"), minimum: 0.001, maximum: 10_000_000)
        let per = choice(object["per"], Self.join(path, "per"), as: Per.self) ?? .connection
        if object["per"] != nil && object["rate"] == nil {
            problem(Self.join(path, "per"), "applies to a rate", hint: "give rate, iterations per second")
        }
        var perConnection = rate
        if let rate, per == .total { perConnection = rate / Double(max(connections, 1)) }
        if let perConnection, perConnection > 100_000 {
            problem(Self.join(path, "rate"), "\(formatNumber(perConnection)) iterations/s on one connection is beyond what one connection can carry",
                    hint: "spread the rate over more connections")
        }
        let steps = body(object, "steps", path, &declarations, connections: connections)
        guard problems.count == before, let steps else { return nil }
        var loop = FlowLoop(steps: steps)
        loop.count = count
        loop.duration = duration
        loop.ratePerConnection = perConnection
        return loop
    }

    mutating func closeStep(_ value: JSONValue, _ path: String) -> FlowStep.Action? {
        guard let object = object(value, path, kind: "close") else { return nil }
        var code: UInt16 = 1000
        if let number = integer(object["code"], Self.join(path, "code"), in: 1000...4999) {
            if number == 1000 || (3000...4999).contains(number) {
                code = UInt16(number)
            } else {
                problem(Self.join(path, "code"), "\(number) is not a code a client may send", hint: "1000, or 3000...4999")
                return nil
            }
        } else if object["code"] != nil {
            return nil
        }
        let reason = string(object["reason"], Self.join(path, "reason"), nonEmpty: false) ?? ""
        guard reason.utf8.count <= 123 else {
            problem(Self.join(path, "reason"), "is \(reason.utf8.count) bytes", hint: "a close reason is at most 123 bytes of UTF-8 (RFC 6455 §5.5)")
            return nil
        }
        return .close(code: code, reason: reason)
    }

    mutating func ifStep(_ value: JSONValue, _ path: String, _ declarations: inout FlowDeclarations, connections: Int) -> FlowStep.Action? {
        guard let object = object(value, path, kind: "if") else { return nil }
        let before = problems.count
        let variable = required(object, "var", path).flatMap { flowName($0, Self.join(path, "var")) }
        if let variable, !declarations.variables.contains(variable) {
            problem(Self.join(path, "var"), "captured variable \(variable) is used before it is defined", hint: "capture it in an earlier step")
        }
        var condition: FlowCondition?
        var isNegated = false
        switch (object["equals"], object["exists"]) {
        case (let equals?, nil):
            if let variable, let template = jsonTemplate(equals, Self.join(path, "equals"), &declarations) {
                condition = .equals(variable, template)
            }
        case (nil, let exists?):
            if let variable, let flag = bool(exists, Self.join(path, "exists")) {
                condition = .exists(variable)
                isNegated = !flag
            }
        default: problem(path, "needs exactly one of equals, exists")
        }
        let then = body(object, "then", path, &declarations, connections: connections)
        let otherwise = object["else"] == nil ? [] : steps(object["else"], Self.join(path, "else"), &declarations, connections: connections)
        guard problems.count == before, let condition, let then, let otherwise else { return nil }
        // `exists: false` is `exists` with the branches swapped.
        return isNegated ? .ifThen(condition, then: otherwise, otherwise: then) : .ifThen(condition, then: then, otherwise: otherwise)
    }
}

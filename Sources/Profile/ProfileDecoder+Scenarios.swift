import JSON
import Lifecycle

/// Scenarios: the websocket scenario and what it shares with transfers (concurrency, reconnect), messages, schedules.
extension ProfileReader {
    mutating func scenario(_ value: JSONValue, _ path: String, feederNames: Set<String> = []) -> Scenario? {
        guard let object = object(value, path, kind: "scenario") else { return nil }
        let problemsBefore = problems.count
        let name = required(object, "name", path).flatMap { scenarioName($0, Self.join(path, "name")) }
        let kind = choice(object["kind"], Self.join(path, "kind"), as: Scenario.Kind.self) ?? .websocket
        let startAfter = duration(object["startAfter"], Self.join(path, "startAfter")) ?? .zero
        if kind != .websocket {
            return transferScenario(object, path, name: name, kind: kind, startAfter: startAfter, problemsBefore: problemsBefore)
        }
        if object["transfer"] != nil {
            problem(Self.join(path, "transfer"), "only download and upload scenarios transfer", hint: "set \"kind\"")
        }
        let pattern = required(object, "pattern", path, hint: "echo, idle, receive, typed or flow").flatMap {
            choice($0, Self.join(path, "pattern"), as: WebSocketScenario.Pattern.self)
        }
        if pattern != .flow { refuseFlowKeys(object, path) }
        var websocket = WebSocketScenario(pattern: pattern ?? .echo, connections: 0)
        if let requestPath = requestPath(object["path"], Self.join(path, "path")) { websocket.path = requestPath }
        concurrency(object, path, into: &websocket)
        websocket.pingInterval = duration(object["pingInterval"], Self.join(path, "pingInterval"), minimum: .milliseconds(10))
        if let timeout = duration(object["pingTimeout"], Self.join(path, "pingTimeout"), minimum: .milliseconds(10)) {
            websocket.pingTimeout = timeout
        }
        if pattern == .idle && websocket.pingInterval == nil && object["pingInterval"] == nil {
            problem(Self.join(path, "pingInterval"), "is required for the idle pattern", hint: "e.g. \"30s\"")
        }
        websocket.reconnect = reconnect(object["reconnect"], Self.join(path, "reconnect"))
        if let list = array(object["subprotocols"], Self.join(path, "subprotocols")) {
            for (index, element) in list.enumerated() {
                let elementPath = Self.join(path, "subprotocols") + "[\(index)]"
                guard let text = string(element, elementPath) else { continue }
                if text.utf8.allSatisfy(isTokenByte) { websocket.subprotocols.append(text) } else {
                    problem(elementPath, "\"\(text)\" is not a valid subprotocol token", hint: "RFC 6455 §4.1: an HTTP token")
                }
            }
        }
        websocket.compression = bool(object["compression"], Self.join(path, "compression")) ?? false
        if pattern == .flow {
            flowScenario(object, path, feederNames: feederNames, into: &websocket)
            guard problems.count == problemsBefore, let name else { return nil }
            return Scenario(name: name, kind: kind, startAfter: startAfter, websocket: websocket)
        }
        message(object["message"], Self.join(path, "message"), into: &websocket)
        let connectionCount = websocket.connections
        if let schedule = self.schedule(object["schedule"], Self.join(path, "schedule"), connections: connectionCount) {
            websocket.schedule = schedule
            if case .open = schedule, pattern == .idle || pattern == .receive {
                problem(Self.join(path, "schedule"), "the \(pattern!.rawValue) pattern sends no requests",
                        hint: "schedule applies to echo and typed")
            }
        }
        websocket.messagesPerConnection = integer(object["messagesPerConnection"], Self.join(path, "messagesPerConnection"), in: 1...Int.max)
        websocket.subscribe = string(object["subscribe"], Self.join(path, "subscribe"), nonEmpty: false)
        if websocket.subscribe != nil && pattern != .receive {
            problem(Self.join(path, "subscribe"), "only the receive pattern subscribes")
        }
        if let typeName = string(object["typeName"], Self.join(path, "typeName")) {
            websocket.typeName = typeName
            if pattern != .typed { problem(Self.join(path, "typeName"), "only the typed pattern sends envelopes") }
        }
        let headerSize = EchoPayload.headerSize * (websocket.messageFormat == .text ? 2 : 1)
        if pattern == .echo, websocket.messageSize.minimum < headerSize {
            problem(Self.join(path, "message.size"),
                    "echo \(websocket.messageFormat.rawValue) messages carry a \(headerSize)-byte sequence header",
                    hint: "use sizes of at least \(headerSize)")
        }
        guard problems.count == problemsBefore, let name, pattern != nil else { return nil }
        return Scenario(name: name, kind: kind, startAfter: startAfter, websocket: websocket)
    }

    /// `connections` and `stages`: how many connections (or transfers at once) and how they ramp.
    mutating func concurrency(_ object: JSONObject, _ path: String, into websocket: inout WebSocketScenario) {
        let connections = integer(object["connections"], Self.join(path, "connections"), in: 1...ProfileDecoder.maximumConnections)
        var stages: [WebSocketScenario.Stage] = []
        if let list = array(object["stages"], Self.join(path, "stages")) {
            if list.isEmpty { problem(Self.join(path, "stages"), "must hold at least one stage, or be left out") }
            for (index, element) in list.enumerated() {
                let stagePath = Self.join(path, "stages") + "[\(index)]"
                guard let stage = self.object(element, stagePath, kind: "stage") else { continue }
                let target = required(stage, "target", stagePath).flatMap {
                    integer($0, Self.join(stagePath, "target"), in: 0...ProfileDecoder.maximumConnections)
                }
                let duration = required(stage, "duration", stagePath).flatMap { self.duration($0, Self.join(stagePath, "duration")) }
                if let target, let duration { stages.append(.init(target: target, duration: duration)) }
            }
        }
        if connections == nil && object["connections"] == nil && object["stages"] == nil {
            problem(Self.join(path, "connections"), "is required", hint: "or give stages")
        }
        if let connections, !stages.isEmpty, connections != stages.map(\.target).max() {
            problem(Self.join(path, "connections"), "\(connections) disagrees with the stages' peak \(stages.map(\.target).max()!)",
                    hint: "leave connections out when giving stages")
        }
        websocket.connections = connections ?? stages.map(\.target).max() ?? 0
        if !stages.isEmpty && websocket.connections == 0 {
            problem(Self.join(path, "stages"), "no stage has a target above 0")
        }
        websocket.stages = stages
    }


    mutating func reconnect(_ value: JSONValue?, _ path: String, kind: String = "reconnect") -> ReconnectPolicy? {
        guard let object = object(value, path, kind: kind) else { return nil }
        var policy = ReconnectPolicy()
        if let initial = duration(object["initial"], Self.join(path, "initial"), minimum: .milliseconds(1)) {
            policy.initialDelay = initial
        }
        if let maximum = duration(object["max"], Self.join(path, "max"), minimum: .milliseconds(1)) {
            policy.maximumDelay = maximum
        }
        if let multiplier = number(object["multiplier"], Self.join(path, "multiplier"), minimum: 1, maximum: 100) {
            policy.multiplier = multiplier
        }
        if let jitter = choice(object["jitter"], Self.join(path, "jitter"), as: ReconnectPolicy.Jitter.self) {
            policy.jitter = jitter
        }
        if let attempts = integer(object["maxAttempts"], Self.join(path, "maxAttempts"), in: 1...Int.max) {
            policy.maximumAttempts = attempts
        }
        if policy.maximumDelay < policy.initialDelay {
            problem(Self.join(path, "max"), "is below initial (\(formatDuration(policy.initialDelay)))")
        }
        return policy
    }

    mutating func message(_ value: JSONValue?, _ path: String, into websocket: inout WebSocketScenario) {
        guard let object = object(value, path, kind: "message") else { return }
        if let format = choice(object["format"], Self.join(path, "format"), as: WebSocketScenario.MessageFormat.self) {
            websocket.messageFormat = format
        }
        guard let size = object["size"] else { return }
        let sizePath = Self.join(path, "size")
        let limit = 0...ProfileDecoder.maximumMessageSize
        switch size {
        case .number:
            if let fixed = integer(size, sizePath, in: limit) { websocket.messageSize = .fixed(fixed) }
        case .object:
            guard let range = self.object(size, sizePath, kind: "sizeRange") else { return }
            let minimum = required(range, "min", sizePath).flatMap { integer($0, Self.join(sizePath, "min"), in: limit) }
            let maximum = required(range, "max", sizePath).flatMap { integer($0, Self.join(sizePath, "max"), in: limit) }
            guard let minimum, let maximum else { return }
            if minimum > maximum {
                problem(Self.join(sizePath, "min"), "\(minimum) is above max \(maximum)")
            } else {
                websocket.messageSize = .uniform(minimum...maximum)
            }
        case .array(let elements):
            var choices: [(size: Int, weight: Double)] = []
            if elements.isEmpty { problem(sizePath, "must hold at least one choice") }
            for (index, element) in elements.enumerated() {
                let choicePath = sizePath + "[\(index)]"
                guard let choice = self.object(element, choicePath, kind: "sizeChoice") else { continue }
                let size = required(choice, "size", choicePath).flatMap { integer($0, Self.join(choicePath, "size"), in: limit) }
                let weight = number(choice["weight"], Self.join(choicePath, "weight"), minimum: 0, maximum: 1e9) ?? 1
                if let size { choices.append((size, weight)) }
            }
            if !choices.isEmpty && choices.allSatisfy({ $0.weight == 0 }) {
                problem(sizePath, "every weight is 0")
            } else if choices.count == elements.count && !elements.isEmpty {
                websocket.messageSize = .weighted(choices)
            }
        default:
            problem(sizePath, "expected a size in bytes, {\"min\", \"max\"} or [{\"size\", \"weight\"}], found \(size.kindName)")
        }
    }

    mutating func schedule(_ value: JSONValue?, _ path: String, connections: Int) -> WebSocketScenario.Schedule? {
        guard let object = object(value, path, kind: "schedule") else { return nil }
        enum Model: String, CaseIterable { case closed, open }
        enum Per: String, CaseIterable { case connection, total }
        guard let model = required(object, "model", path, hint: "closed or open").flatMap({
            choice($0, Self.join(path, "model"), as: Model.self)
        }) else { return nil }
        switch model {
        case .closed:
            for key in ["rate", "per"] where object[key] != nil {
                problem(Self.join(path, key), "applies to the open model only")
            }
            return .closed(thinkTime: duration(object["thinkTime"], Self.join(path, "thinkTime")) ?? .zero)
        case .open:
            if object["thinkTime"] != nil {
                problem(Self.join(path, "thinkTime"), "applies to the closed model only", hint: "the open model sends at rate")
            }
            let rate = required(object, "rate", path, hint: "messages per second").flatMap {
                number($0, Self.join(path, "rate"), minimum: 0.001, maximum: 10_000_000)
            }
            let per = choice(object["per"], Self.join(path, "per"), as: Per.self) ?? .connection
            guard let rate else { return nil }
            let perConnection = per == .connection ? rate : rate / Double(max(connections, 1))
            if perConnection > 100_000 {
                problem(Self.join(path, "rate"), "\(formatNumber(perConnection)) messages/s on one connection is beyond what one connection can carry",
                        hint: "spread the rate over more connections")
                return nil
            }
            return .open(perConnection: perConnection)
        }
    }
}

import Flow
import HTTP1
import JSON

/// A flow scenario as a whole (its protocol preset, templated handshake, classifiers, steps) and the preset steps:
/// socketio `emit` / `on`, graphql-ws `query` / `subscribe`.
extension ProfileReader {
    /// The scenario keys only a flow reads, and the ones a flow refuses (its steps say what it sends).
    static let flowOnlyKeys = ["steps", "protocol", "classify", "headers", "query", "socketio", "graphql"]
    static let keysFlowRefuses = ["message", "schedule", "messagesPerConnection", "subscribe", "typeName"]
    /// The query the socketio preset adds to the request target.
    static let socketIOQuery = "EIO=4&transport=websocket"

    /// Decodes the flow half of a `flow` scenario into `websocket.flow`, adjusting its path and subprotocols for
    /// the preset.
    mutating func flowScenario(_ object: JSONObject, _ path: String, feederNames: Set<String>,
                               into websocket: inout WebSocketScenario) {
        for key in Self.keysFlowRefuses where object[key] != nil {
            problem(Self.join(path, key), "a flow scenario does not read \(key)", hint: "its steps say what it sends and when")
        }
        let preset = choice(object["protocol"], Self.join(path, "protocol"), as: FlowScenario.Preset.self) ?? .raw
        var declarations = FlowDeclarations(preset: preset, feederNames: feederNames)
        var flow = FlowScenario()
        flow.preset = preset
        let before = problems.count
        flow.headers = flowHeaders(object["headers"], Self.join(path, "headers"), &declarations)
        flow.query = flowQuery(object["query"], Self.join(path, "query"), &declarations)
        if preset == .socketio, object["classify"] != nil {
            // socketio's runtime counts the events no `on` takes by their name; its frames never reach the
            // classifiers. (graphql-ws classifies the results no step takes: whole messages, `$.id`, `$.type`.)
            problem(Self.join(path, "classify"), "a socketio flow does not classify messages",
                    hint: "socketio events outside an on are counted by event name (flow.pushed.EVENT)")
        } else {
            flow.classify = classifiers(object["classify"], Self.join(path, "classify"), &declarations)
        }
        presetOptions(object, path, into: &flow, &declarations)
        switch preset {
        case .raw: break
        case .socketio:
            let base = websocket.path ?? "/socket.io/"
            websocket.path = base + (base.contains("?") ? "&" : "?") + Self.socketIOQuery
        case .graphqlWS:
            let other = websocket.subprotocols.filter { $0 != GraphQLWSProtocol.subprotocol }
            if !other.isEmpty {
                problem(Self.join(path, "subprotocols"), "graphql-ws speaks \(GraphQLWSProtocol.subprotocol) only",
                        hint: "remove " + other.joined(separator: ", "))
            }
            websocket.subprotocols = [GraphQLWSProtocol.subprotocol]
        }
        let steps = required(object, "steps", path, hint: "a flow scenario runs its steps").flatMap {
            self.steps($0, Self.join(path, "steps"), &declarations, connections: max(websocket.connections, 1))
        }
        guard problems.count == before, let steps else { return }
        flow.steps = steps
        flow.stepNames = declarations.stepNames
        flow.feeders = declarations.feeders
        flow.feederColumns = declarations.feederColumns
        websocket.flow = flow
    }

    /// Keys a scenario other than a flow must not have.
    mutating func refuseFlowKeys(_ object: JSONObject, _ path: String) {
        for key in Self.flowOnlyKeys where object[key] != nil {
            problem(Self.join(path, key), "only the flow pattern reads \(key)", hint: "set \"pattern\": \"flow\"")
        }
    }

    mutating func flowHeaders(_ value: JSONValue?, _ path: String, _ declarations: inout FlowDeclarations) -> [(name: String, value: Template)] {
        guard let value else { return [] }
        guard let object = value.objectValue else {
            problem(path, "expected an object of header names to templates, found \(value.kindName)")
            return []
        }
        let reserved = ["host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
                        "sec-websocket-extensions", "sec-websocket-protocol", "content-length", "transfer-encoding"]
        var headers: [(name: String, value: Template)] = []
        for (name, element) in object.members {
            let headerPath = path + "." + TerminalText.printable(name, limit: 80)
            do {
                try HTTPHeaders.validate(name: name)
            } catch {
                problem(headerPath, error.description)
                continue
            }
            if reserved.contains(name.lowercased()) {
                problem(headerPath, "\(name) is set by the handshake itself")
                continue
            }
            guard let template = template(element, headerPath, &declarations) else { continue }
            if template.isConstant {
                let text = template.parts.map { if case .literal(let text) = $0 { text } else { "" } }.joined()
                if name.lowercased() == "authorization" {
                    problem(headerPath, "a credential in the profile would be copied wherever the profile goes",
                            hint: "take it from a feeder (${users.token}), or use auth with tokenEnv or tokenFile")
                    continue
                }
                do {
                    try HTTPHeaders.validate(name: name, value: text)
                } catch {
                    problem(headerPath, error.description)
                    continue
                }
            }
            headers.append((name, template))
        }
        return headers
    }

    /// A flow's templated `headers` / `query` and the profile's `auth` must not both set one header or query
    /// parameter: the handshake would send only one of them (auth's replaces the flow's), silently.
    mutating func refuseAuthenticationConflicts(_ scenario: Scenario, _ path: String, _ authentication: Profile.Authentication?) {
        guard let flow = scenario.websocket.flow, let authentication else { return }
        let (names, key, kind, type, target): ([String], String, String, String, String) = switch authentication.placement {
        case .bearer: (flow.headers.map(\.name), "headers", "header", "bearer", "Authorization")
        case .header(let name): (flow.headers.map(\.name), "headers", "header", "header", name)
        case .query(let name): (flow.query.map(\.name), "query", "query parameter", "query", name)
        }
        // Header names are case-insensitive; query parameter names are not.
        for name in names where key == "headers" ? name.lowercased() == target.lowercased() : name == target {
            problem(Self.join(Self.join(path, key), TerminalText.printable(name, limit: 80)),
                    "this \(kind) and auth (type \(type)) both set the \(TerminalText.printable(target, limit: 80)) \(kind)",
                    hint: "keep one: auth sends the run's token to every connection, the flow's template a value per connection")
        }
    }

    mutating func flowQuery(_ value: JSONValue?, _ path: String, _ declarations: inout FlowDeclarations) -> [(name: String, value: Template)] {
        guard let value else { return [] }
        guard let object = value.objectValue else {
            problem(path, "expected an object of parameter names to templates, found \(value.kindName)")
            return []
        }
        var query: [(name: String, value: Template)] = []
        for (name, element) in object.members {
            let parameterPath = path + "." + TerminalText.printable(name, limit: 80)
            guard !name.isEmpty, name.utf8.allSatisfy(URLSyntax.isQueryNameByte) else {
                problem(parameterPath, "\"\(TerminalText.printable(name, limit: 80))\" is not a plain query parameter name",
                        hint: "letters, digits, '-', '.', '_' and '~'")
                continue
            }
            if let template = template(element, parameterPath, &declarations) { query.append((name, template)) }
        }
        return query
    }

    mutating func classifiers(_ value: JSONValue?, _ path: String, _ declarations: inout FlowDeclarations) -> [(type: String, matcher: MessageMatcher)] {
        guard let list = array(value, path) else { return [] }
        var classifiers: [(type: String, matcher: MessageMatcher)] = []
        for (index, element) in list.enumerated() {
            let entryPath = path + "[\(index)]"
            guard let object = object(element, entryPath, kind: "classifier") else { continue }
            let type = required(object, "type", entryPath).flatMap { flowName($0, Self.join(entryPath, "type")) }
            if let type, classifiers.contains(where: { $0.type == type }) {
                problem(Self.join(entryPath, "type"), "\"\(type)\" is classified twice", hint: "the first match wins; merge them")
                continue
            }
            if let matcher = messageMatcher(object, entryPath, &declarations), let type { classifiers.append((type, matcher)) }
        }
        return classifiers
    }

    /// `socketio` (`namespace`, `auth`, `timeout`) and `graphql` (`payload`, `timeout`), each for its preset only.
    mutating func presetOptions(_ object: JSONObject, _ path: String, into flow: inout FlowScenario,
                                _ declarations: inout FlowDeclarations) {
        if let socketIO = self.object(object["socketio"], Self.join(path, "socketio"), kind: "socketio") {
            let optionsPath = Self.join(path, "socketio")
            if flow.preset != .socketio { problem(optionsPath, "needs \"protocol\": \"socketio\"") }
            if let namespace = string(socketIO["namespace"], Self.join(optionsPath, "namespace")) {
                let isValid = namespace.hasPrefix("/") && namespace.utf8.count <= 256
                    && namespace.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") }
                if isValid { flow.namespace = namespace } else {
                    problem(Self.join(optionsPath, "namespace"), "\"\(TerminalText.printable(namespace, limit: 80))\" is not a namespace",
                            hint: "it starts with / and holds no spaces, commas or control characters")
                }
            }
            flow.connectPayload = jsonTemplate(socketIO["auth"], Self.join(optionsPath, "auth"), &declarations)
            if let timeout = duration(socketIO["timeout"], Self.join(optionsPath, "timeout"), minimum: .milliseconds(1)) {
                flow.handshakeTimeout = timeout
            }
        }
        if let graphQL = self.object(object["graphql"], Self.join(path, "graphql"), kind: "graphql") {
            let optionsPath = Self.join(path, "graphql")
            if flow.preset != .graphqlWS { problem(optionsPath, "needs \"protocol\": \"graphql-ws\"") }
            flow.initPayload = jsonTemplate(graphQL["payload"], Self.join(optionsPath, "payload"), &declarations)
            if let timeout = duration(graphQL["timeout"], Self.join(optionsPath, "timeout"), minimum: .milliseconds(1)) {
                flow.handshakeTimeout = timeout
            }
        }
    }

    mutating func emit(_ value: JSONValue, _ path: String, _ declarations: inout FlowDeclarations) -> SocketIOEmit? {
        guard let object = object(value, path, kind: "emit") else { return nil }
        let before = problems.count
        let event = required(object, "event", path).flatMap { string($0, Self.join(path, "event")) }
        var arguments: [JSONTemplate] = []
        if let list = array(object["args"], Self.join(path, "args")) {
            for (index, element) in list.enumerated() {
                if let argument = jsonTemplate(element, Self.join(path, "args") + "[\(index)]", &declarations) { arguments.append(argument) }
            }
        }
        let ack = bool(object["ack"], Self.join(path, "ack")) ?? false
        if !ack {
            for key in ["within", "match", "capture", "onTimeout"] where object[key] != nil {
                problem(Self.join(path, key), "applies to an awaited ack", hint: "set \"ack\": true")
            }
        }
        let within = ack ? requiredWithin(object, path, hint: "how long to await the ack") : nil
        let match = object["match"] == nil ? [] : conditions(object["match"], Self.join(path, "match"), &declarations)
        let captures = self.captures(object["capture"], Self.join(path, "capture"), groups: nil, allowsPaths: true, &declarations)
        let policy = choice(object["onTimeout"], Self.join(path, "onTimeout"), as: FlowFailurePolicy.self)
        guard problems.count == before, let event, let match, let captures else { return nil }
        var emit = SocketIOEmit(event: event)
        emit.arguments = arguments
        emit.ackWithin = within
        emit.ackMatch = match
        emit.ackCaptures = captures
        if let policy { emit.onTimeout = policy }
        return emit
    }

    mutating func on(_ value: JSONValue, _ path: String, _ declarations: inout FlowDeclarations) -> SocketIOOn? {
        guard let object = object(value, path, kind: "on") else { return nil }
        let before = problems.count
        let event = required(object, "event", path).flatMap { string($0, Self.join(path, "event")) }
        let match = object["match"] == nil ? [] : conditions(object["match"], Self.join(path, "match"), &declarations)
        let within = requiredWithin(object, path, hint: "how long to wait, e.g. \"2s\"")
        let from = object["from"] == nil ? nil : mark(from: object["from"], Self.join(path, "from"), declarations)
        let skip = integer(object["skip"], Self.join(path, "skip"), in: 0...1_000_000)
        let policy = choice(object["onTimeout"], Self.join(path, "onTimeout"), as: FlowFailurePolicy.self)
        let captures = self.captures(object["capture"], Self.join(path, "capture"), groups: nil, allowsPaths: true, &declarations)
        guard problems.count == before, let event, let match, let within, let captures else { return nil }
        var expectation = FlowExpectation(matcher: .json(match), within: within)
        expectation.captures = captures
        expectation.from = from
        if let skip { expectation.skipLimit = skip }
        if let policy { expectation.onTimeout = policy }
        return SocketIOOn(event: event, expectation: expectation)
    }

    mutating func graphQLOperation(_ object: JSONObject, _ path: String, _ declarations: inout FlowDeclarations) -> GraphQLOperation? {
        let query = required(object, "query", path, hint: "the GraphQL document").flatMap { template($0, Self.join(path, "query"), &declarations) }
        let variables = object["variables"] == nil || object["variables"] == .null ? nil
            : jsonTemplate(object["variables"], Self.join(path, "variables"), &declarations)
        if let value = object["variables"], value != .null, value.objectValue == nil {
            problem(Self.join(path, "variables"), "expected an object, found \(value.kindName)")
        }
        let operationName = object["operationName"] == .null ? nil : string(object["operationName"], Self.join(path, "operationName"))
        guard let query else { return nil }
        var operation = GraphQLOperation(query: query)
        operation.variables = variables
        operation.operationName = operationName
        return operation
    }

    mutating func graphQLQuery(_ value: JSONValue, _ path: String, _ declarations: inout FlowDeclarations) -> GraphQLQuery? {
        guard let object = object(value, path, kind: "graphqlQuery") else { return nil }
        let before = problems.count
        let operation = graphQLOperation(object, path, &declarations)
        let within = requiredWithin(object, path, hint: "how long to await the result")
        let match = object["match"] == nil ? [] : conditions(object["match"], Self.join(path, "match"), &declarations)
        let policy = choice(object["onTimeout"], Self.join(path, "onTimeout"), as: FlowFailurePolicy.self)
        let captures = self.captures(object["capture"], Self.join(path, "capture"), groups: nil, allowsPaths: true, &declarations)
        guard problems.count == before, let operation, let within, let match, let captures else { return nil }
        var query = GraphQLQuery(operation: operation, within: within)
        query.match = match
        query.captures = captures
        if let policy { query.onTimeout = policy }
        return query
    }

    mutating func graphQLSubscription(_ value: JSONValue, _ path: String, _ declarations: inout FlowDeclarations) -> GraphQLSubscription? {
        guard let object = object(value, path, kind: "graphqlSubscribe") else { return nil }
        let before = problems.count
        let operation = graphQLOperation(object, path, &declarations)
        let count = integer(object["count"], Self.join(path, "count"), in: 1...1_000_000_000)
        let within = requiredWithin(object, path, hint: "how long to await each result")
        let match = object["match"] == nil ? [] : conditions(object["match"], Self.join(path, "match"), &declarations)
        let policy = choice(object["onTimeout"], Self.join(path, "onTimeout"), as: FlowFailurePolicy.self)
        guard problems.count == before, let operation, let within, let match else { return nil }
        var subscription = GraphQLSubscription(operation: operation, within: within)
        subscription.count = count
        subscription.match = match
        if let policy { subscription.onTimeout = policy }
        return subscription
    }
}

/// The graphql-transport-ws subprotocol name, as the handshake offers it (the same as `GraphQLWSMessage.subprotocol`).
enum GraphQLWSProtocol {
    static let subprotocol = "graphql-transport-ws"
}

import JSON

/// One message of the graphql-transport-ws subprotocol (enisdenjo/graphql-ws PROTOCOL.md): a JSON object with a
/// `type`, an `id` on the operation messages and an optional or required `payload`. A present payload of `null`
/// is kept as `.null` (so decoding then encoding gives the same message); an absent one is nil.
package enum GraphQLWSMessage: Sendable, Equatable {
    /// Client → server first; the payload (an object) is the connection parameters, e.g. a token.
    case connectionInit(payload: JSONValue?)
    /// Server → client: the init is accepted.
    case connectionAck(payload: JSONValue?)
    /// Either way; must be answered with ``pong(payload:)``.
    case ping(payload: JSONValue?)
    /// Either way: the answer to a ping, or a unidirectional heartbeat.
    case pong(payload: JSONValue?)
    /// Client → server: start operation `id` (a query, mutation or subscription).
    case subscribe(id: String, query: String, variables: JSONValue?, operationName: String?, extensions: JSONValue?)
    /// Server → client: one execution result (an object, `data` and/or `errors`) of operation `id`.
    case next(id: String, payload: JSONValue)
    /// Server → client: operation `id` failed before executing; `errors` is the array of GraphQL errors. Ends it.
    case error(id: String, errors: JSONValue)
    /// Either way: operation `id` is over (server: no more results; client: stop it).
    case complete(id: String)

    /// The WebSocket subprotocol the client offers and the server must accept.
    package static let subprotocol = "graphql-transport-ws"

    /// Decodes one text frame. Over 1 MiB, not a JSON object, no string `type`, an unknown type, a missing or
    /// empty `id` where the type needs one, or a payload of the wrong shape is an error; never traps.
    package static func decode(_ text: String) -> Result<GraphQLWSMessage, FlowProtocolError> {
        if let error = FlowProtocolError.oversized(text, what: "graphql-transport-ws message") {
            return .failure(error)
        }
        let value: JSONValue
        switch parsePresetJSON(Array(text.utf8)[...], offset: 0, what: "graphql-transport-ws message") {
        case .success(let parsed): value = parsed
        case .failure(let error): return .failure(error)
        }
        guard let object = value.objectValue else { return fail("not a JSON object") }
        guard let type = object["type"]?.stringValue else { return fail("type is missing or not a string") }
        func objectOrNull(_ key: String, in object: JSONObject) -> Result<JSONValue?, FlowProtocolError> {
            guard let member = object[key] else { return .success(nil) }
            guard member == .null || member.objectValue != nil else {
                return fail("\(type): \(key) is \(member.kindName), not an object")
            }
            return .success(member)
        }
        func identifier() -> Result<String, FlowProtocolError> {
            guard let id = object["id"]?.stringValue, !id.isEmpty else {
                return fail("\(type): id is missing or not a non-empty string")
            }
            return .success(id)
        }
        switch type {
        case "connection_init": return objectOrNull("payload", in: object).map { .connectionInit(payload: $0) }
        case "connection_ack": return objectOrNull("payload", in: object).map { .connectionAck(payload: $0) }
        case "ping": return objectOrNull("payload", in: object).map { .ping(payload: $0) }
        case "pong": return objectOrNull("payload", in: object).map { .pong(payload: $0) }
        case "complete": return identifier().map { .complete(id: $0) }
        case "next":
            return identifier().flatMap { id in
                guard let payload = object["payload"], payload.objectValue != nil else {
                    return fail("next: payload is missing or not an object")
                }
                return .success(.next(id: id, payload: payload))
            }
        case "error":
            return identifier().flatMap { id in
                guard let errors = object["payload"], let list = errors.arrayValue, !list.isEmpty else {
                    return fail("error: payload is missing or not a non-empty array")
                }
                return .success(.error(id: id, errors: errors))
            }
        case "subscribe":
            return identifier().flatMap { id in
                guard let payload = object["payload"]?.objectValue else {
                    return fail("subscribe: payload is missing or not an object")
                }
                guard let query = payload["query"]?.stringValue else { return fail("subscribe: query is not a string") }
                var operationName: String?
                switch payload["operationName"] {
                case nil, .null?: operationName = nil
                case .string(let name)?: operationName = name
                default: return fail("subscribe: operationName is not a string or null")
                }
                return objectOrNull("variables", in: payload).flatMap { variables in
                    objectOrNull("extensions", in: payload).map { extensions in
                        .subscribe(
                            id: id, query: query, variables: variables, operationName: operationName,
                            extensions: extensions)
                    }
                }
            }
        default: return fail("unknown message type")
        }
    }

    private static func fail<T>(_ message: String) -> Result<T, FlowProtocolError> {
        .failure(FlowProtocolError(message: "graphql-transport-ws message: \(message)"))
    }

    /// The message as a text frame: a compact JSON object, `id` first, then `type`, then `payload`.
    package var encoded: String {
        var object = JSONObject()
        func put(_ type: String, id: String? = nil, payload: JSONValue? = nil) {
            if let id { object["id"] = .string(id) }
            object["type"] = .string(type)
            if let payload { object["payload"] = payload }
        }
        switch self {
        case .connectionInit(let payload): put("connection_init", payload: payload)
        case .connectionAck(let payload): put("connection_ack", payload: payload)
        case .ping(let payload): put("ping", payload: payload)
        case .pong(let payload): put("pong", payload: payload)
        case .subscribe(let id, let query, let variables, let operationName, let extensions):
            var payload = JSONObject()
            payload["query"] = .string(query)
            if let variables { payload["variables"] = variables }
            if let operationName { payload["operationName"] = .string(operationName) }
            if let extensions { payload["extensions"] = extensions }
            put("subscribe", id: id, payload: .object(payload))
        case .next(let id, let payload): put("next", id: id, payload: payload)
        case .error(let id, let errors): put("error", id: id, payload: errors)
        case .complete(let id): put("complete", id: id)
        }
        return JSONValue.object(object).formatted(pretty: false)
    }
}

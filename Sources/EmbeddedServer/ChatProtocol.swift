import JSON

/// The `/chat` service's wire format: one JSON object per text frame. Pure: text in, a request or the error
/// text the client gets out; replies encoded here so every message the service writes has one spelling.
///
/// Client → server: `{"type":"join","room":R}`, `{"type":"say","room":R,"text":T}` (optional `"ref"`: any JSON
/// value, echoed in the `said`), `{"type":"leave","room":R}`. Server → client: `joined` (with the connection's
/// `id`), `said` (to every member of the room, the sender included), `left`, and `error` naming the problem.
enum ChatRequest: Sendable, Equatable {
    case join(room: String)
    case say(room: String, text: String, ref: JSONValue?)
    case leave(room: String)

    /// Longest room name, in UTF-8 bytes.
    static let maximumRoomBytes = 64
    /// Longest `text` of a `say`, in UTF-8 bytes.
    static let maximumTextBytes = 64 * 1024
    /// Longest `ref` of a `say`, in bytes of its compact JSON encoding.
    static let maximumRefBytes = 4 * 1024
    /// Longest client message, in bytes: checked before parsing, so a huge frame is never turned into a tree.
    static let maximumMessageBytes = 1 << 20

    /// Parses one client message; the failure is the text of the `error` reply.
    static func parse(_ text: String) -> Result<ChatRequest, ChatRequestError> {
        guard text.utf8.count <= maximumMessageBytes else {
            return .failure(ChatRequestError("message over \(maximumMessageBytes) bytes"))
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text, maximumDepth: 32)
        } catch {
            return .failure(ChatRequestError("not JSON: \(error)"))
        }
        guard let object = value.objectValue else {
            return .failure(ChatRequestError("expected a JSON object, got \(value.kindName)"))
        }
        guard let typeValue = object["type"] else { return .failure(ChatRequestError("missing \"type\"")) }
        guard let type = typeValue.stringValue else {
            return .failure(ChatRequestError("\"type\" must be a string, got \(typeValue.kindName)"))
        }
        switch type {
        case "join":
            return room(in: object).map { .join(room: $0) }
        case "leave":
            return room(in: object).map { .leave(room: $0) }
        case "say":
            let room: String
            switch Self.room(in: object) {
            case .success(let name): room = name
            case .failure(let error): return .failure(error)
            }
            guard let textValue = object["text"] else { return .failure(ChatRequestError("missing \"text\"")) }
            guard let text = textValue.stringValue else {
                return .failure(ChatRequestError("\"text\" must be a string, got \(textValue.kindName)"))
            }
            guard text.utf8.count <= maximumTextBytes else {
                return .failure(ChatRequestError("\"text\" is over \(maximumTextBytes) bytes"))
            }
            let ref = object["ref"]
            if let ref, ref.formatted(pretty: false).utf8.count > maximumRefBytes {
                return .failure(ChatRequestError("\"ref\" is over \(maximumRefBytes) bytes of JSON"))
            }
            return .success(.say(room: room, text: text, ref: ref))
        default:
            // The type is echoed JSON-escaped (the reply is encoded), and only when short.
            let shown = type.utf8.count <= 32 ? " \"\(type)\"" : ""
            return .failure(ChatRequestError("unknown type\(shown): expected join, say or leave"))
        }
    }

    private static func room(in object: JSONObject) -> Result<String, ChatRequestError> {
        guard let value = object["room"] else { return .failure(ChatRequestError("missing \"room\"")) }
        guard let room = value.stringValue else {
            return .failure(ChatRequestError("\"room\" must be a string, got \(value.kindName)"))
        }
        guard (1...maximumRoomBytes).contains(room.utf8.count) else {
            return .failure(ChatRequestError("\"room\" must be 1 to \(maximumRoomBytes) bytes"))
        }
        return .success(room)
    }
}

/// Why a client message was refused: the `error` reply's text (the connection stays open).
struct ChatRequestError: Error, Sendable, Equatable {
    var message: String
    init(_ message: String) { self.message = message }
}

/// The messages the `/chat` service writes, compact JSON with the keys in the documented order.
enum ChatReply {
    static func joined(room: String, id: Int) -> String {
        encode(["type": "joined", "room": .string(room), "id": JSONValue(id)])
    }

    static func said(room: String, text: String, from id: Int, ref: JSONValue?) -> String {
        var object: JSONObject = ["type": "said", "room": .string(room), "text": .string(text), "from": JSONValue(id)]
        if let ref { object["ref"] = ref }
        return JSONValue.object(object).formatted(pretty: false)
    }

    static func left(room: String) -> String {
        encode(["type": "left", "room": .string(room)])
    }

    static func error(_ message: String) -> String {
        encode(["type": "error", "error": .string(message)])
    }

    private static func encode(_ object: JSONObject) -> String { JSONValue.object(object).formatted(pretty: false) }
}

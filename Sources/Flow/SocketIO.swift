import JSON

/// One Socket.IO (protocol 5, Socket.IO 3 and 4) packet: what an Engine.IO `message` (`4...`) carries.
/// Wire form: `<type>[<attachments>-][<namespace>,][<ack id>][<JSON payload>]`; the namespace is written only when
/// it is not `/`. Examples: `0{"token":"1"}`, `0/admin,`, `2["hello",1]`, `2/admin,456["delete",123]`,
/// `3/admin,456[]`, `4{"message":"Not authorized"}`, `51-["x",{"_placeholder":true,"num":0}]`.
package enum SocketIOPacket: Sendable, Equatable {
    /// `0`: connect to a namespace (client, with an optional auth object) or its acceptance (server, `{"sid":..}`).
    case connect(namespace: String, payload: JSONValue?)
    /// `1`: leave a namespace.
    case disconnect(namespace: String)
    /// `2`: an event; `arguments[0]` is the event name (a string), the rest its arguments. An ack id asks the
    /// other side to answer with an ``ack(namespace:ackID:arguments:)`` of the same id.
    case event(namespace: String, ackID: UInt64?, arguments: [JSONValue])
    /// `3`: the answer to the event with the same ack id.
    case ack(namespace: String, ackID: UInt64, arguments: [JSONValue])
    /// `4`: the server refused the namespace connect (payload usually `{"message":..}`).
    case connectError(namespace: String, payload: JSONValue?)
    /// `5`: an event with binary attachments (sent as following binary frames); the preset refuses these.
    case binaryEvent(namespace: String, attachments: Int)
    /// `6`: an ack with binary attachments; refused likewise.
    case binaryAck(namespace: String, attachments: Int)

    /// The longest namespace accepted, in bytes.
    package static let maximumNamespaceBytes = 256

    /// Whether `namespace` is one the codec writes and reads back: `/` then up to 255 bytes with no `,` and no
    /// control or space characters. The profile decoder checks `socketio.namespace` with this.
    package static func isValidNamespace(_ namespace: String) -> Bool {
        let bytes = namespace.utf8
        guard bytes.first == UInt8(ascii: "/"), bytes.count <= maximumNamespaceBytes else { return false }
        return !bytes.contains { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: ",") }
    }

    /// Decodes the text after the Engine.IO `4`. Over 1 MiB, an unknown type, a bad namespace, an ack id past
    /// UInt64, a payload that is not JSON (or not the shape the type needs) is an error; never traps.
    package static func decode(_ text: String) -> Result<SocketIOPacket, FlowProtocolError> {
        if let error = FlowProtocolError.oversized(text, what: "Socket.IO packet") { return .failure(error) }
        var reader = SocketIOReader(bytes: Array(text.utf8))
        return reader.decode()
    }

    /// The packet as text, without the Engine.IO `4` prefix. Writes what it holds (the namespace is the caller's
    /// to have checked with ``isValidNamespace(_:)``).
    package var encoded: String {
        func prefix(_ namespace: String) -> String { namespace == "/" ? "" : namespace + "," }
        func json(_ value: JSONValue?) -> String { value.map { $0.formatted(pretty: false) } ?? "" }
        switch self {
        case .connect(let namespace, let payload): return "0" + prefix(namespace) + json(payload)
        case .disconnect(let namespace): return "1" + prefix(namespace)
        case .event(let namespace, let ackID, let arguments):
            return "2" + prefix(namespace) + (ackID.map { String($0) } ?? "") + json(.array(arguments))
        case .ack(let namespace, let ackID, let arguments):
            return "3" + prefix(namespace) + String(ackID) + json(.array(arguments))
        case .connectError(let namespace, let payload): return "4" + prefix(namespace) + json(payload)
        case .binaryEvent(let namespace, let attachments): return "5\(attachments)-" + prefix(namespace)
        case .binaryAck(let namespace, let attachments): return "6\(attachments)-" + prefix(namespace)
        }
    }
}

/// Reads one packet's fields left to right, each step checking what it reads.
private struct SocketIOReader {
    let bytes: [UInt8]
    var position = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    func fail<T>(_ message: String, at offset: Int? = nil) -> Result<T, FlowProtocolError> {
        .failure(FlowProtocolError(offset: offset ?? position, message: "Socket.IO packet: \(message)"))
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// Digits at the position as a UInt64, nil when none; an overflow is an error.
    mutating func number(_ what: String) -> Result<UInt64?, FlowProtocolError> {
        let start = position
        var value: UInt64 = 0
        while position < bytes.count, Self.isDigit(bytes[position]) {
            let (scaled, overflowMultiply) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowAdd) = scaled.addingReportingOverflow(UInt64(bytes[position] - UInt8(ascii: "0")))
            if overflowMultiply || overflowAdd { return fail("\(what) is larger than \(UInt64.max)", at: start) }
            value = sum
            position += 1
        }
        return .success(position == start ? nil : value)
    }

    /// `/name,` (or `/name` at the end of the packet) → the namespace; anything else → `/`.
    mutating func namespace() -> Result<String, FlowProtocolError> {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "/") else { return .success("/") }
        let start = position
        while position < bytes.count, bytes[position] != UInt8(ascii: ",") { position += 1 }
        let name = String(decoding: bytes[start..<position], as: UTF8.self)
        if position < bytes.count { position += 1 }  // the comma
        guard SocketIOPacket.isValidNamespace(name) else {
            let limit = SocketIOPacket.maximumNamespaceBytes - 1
            return fail("the namespace is not / and up to \(limit) printable bytes", at: start)
        }
        return .success(name)
    }

    /// The rest as JSON; nil when nothing is left.
    mutating func payload() -> Result<JSONValue?, FlowProtocolError> {
        guard position < bytes.count else { return .success(nil) }
        return parsePresetJSON(bytes[position...], offset: position, what: "the payload").map { $0 }
    }

    mutating func decode() -> Result<SocketIOPacket, FlowProtocolError> {
        guard let type = bytes.first else { return fail("empty") }
        guard type >= UInt8(ascii: "0"), type <= UInt8(ascii: "6") else { return fail("unknown packet type", at: 0) }
        position = 1
        var attachments = 0
        if type == UInt8(ascii: "5") || type == UInt8(ascii: "6") {
            switch number("the attachment count") {
            case .failure(let error): return .failure(error)
            case .success(nil): return fail("a binary packet has no attachment count")
            case .success(let count?):
                guard position < bytes.count, bytes[position] == UInt8(ascii: "-"), let exact = Int(exactly: count)
                else { return fail("a binary packet's attachment count is not followed by -") }
                attachments = exact
                position += 1
            }
        }
        let namespace: String
        switch self.namespace() {
        case .success(let name): namespace = name
        case .failure(let error): return .failure(error)
        }
        let ackStart = position
        let ackID: UInt64?
        switch number("the ack id") {
        case .success(let id): ackID = id
        case .failure(let error): return .failure(error)
        }
        switch type {
        case UInt8(ascii: "5"): return .success(.binaryEvent(namespace: namespace, attachments: attachments))
        case UInt8(ascii: "6"): return .success(.binaryAck(namespace: namespace, attachments: attachments))
        default: break
        }
        let payloadStart = position
        let payload: JSONValue?
        switch self.payload() {
        case .success(let value): payload = value
        case .failure(let error): return .failure(error)
        }
        switch type {
        case UInt8(ascii: "0"), UInt8(ascii: "4"):
            guard ackID == nil else { return fail("a connect packet has an ack id", at: ackStart) }
            if let payload, payload.objectValue == nil, !(type == UInt8(ascii: "4") && payload.stringValue != nil) {
                return fail("the payload is \(payload.kindName), not an object", at: payloadStart)
            }
            if type == UInt8(ascii: "4") { return .success(.connectError(namespace: namespace, payload: payload)) }
            return .success(.connect(namespace: namespace, payload: payload))
        case UInt8(ascii: "1"):
            guard ackID == nil, payload == nil else { return fail("a disconnect packet carries data", at: ackStart) }
            return .success(.disconnect(namespace: namespace))
        case UInt8(ascii: "2"):
            guard let arguments = payload?.arrayValue, arguments.first?.stringValue != nil else {
                return fail("an event's payload is not an array starting with the event name", at: payloadStart)
            }
            return .success(.event(namespace: namespace, ackID: ackID, arguments: arguments))
        default:
            guard let ackID else { return fail("an ack has no ack id", at: ackStart) }
            guard let arguments = payload?.arrayValue else {
                return fail("an ack's payload is not an array", at: payloadStart)
            }
            return .success(.ack(namespace: namespace, ackID: ackID, arguments: arguments))
        }
    }
}

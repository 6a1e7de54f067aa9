import Foundation
import WebSocket

/// A message type carried in a `{"type": …, "payload": …}` envelope.
package protocol WebSocketMessage: Codable, Sendable {
    /// The envelope's `type` for this message.
    static var messageType: String { get }
}

/// Codable messages over a ``WebSocketManager``: each message travels as a JSON text frame
/// `{"type": "<messageType>", "payload": <the message>}`. Decoding knows a set of message types;
/// anything else is surfaced as `.unknown`, never dropped.
package struct TypedWebSocketTransport: Sendable {
    /// A decoded frame.
    package enum Decoded: Sendable {
        case message(any WebSocketMessage)
        /// A well-formed envelope whose type is not registered; `payload` is its raw JSON.
        case unknown(type: String, payload: [UInt8])
        /// Not an envelope (invalid JSON, no `type`, or a payload that does not decode as its type).
        case malformed(reason: String)
    }

    package let manager: WebSocketManager
    private let knownTypes: [any WebSocketMessage.Type]

    package init(manager: WebSocketManager, knownTypes: [any WebSocketMessage.Type]) {
        self.manager = manager
        self.knownTypes = knownTypes
    }

    private struct Envelope<Payload: Encodable>: Encodable {
        var type: String
        var payload: Payload
    }

    private struct Header: Decodable {
        var type: String
    }

    private struct Payload<T: Decodable>: Decodable {
        var payload: T
    }

    /// The JSON text for `message` in its envelope.
    package static func encode<T: WebSocketMessage>(_ message: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(Envelope(type: T.messageType, payload: message)), as: UTF8.self)
    }

    /// Sends `message` as a text frame.
    package func send<T: WebSocketMessage>(_ message: T) async throws {
        try await manager.send(text: try Self.encode(message))
    }

    /// Decodes one frame's bytes (text or binary JSON).
    package func decode(_ bytes: [UInt8]) -> Decoded {
        let data = Data(bytes)
        let decoder = JSONDecoder()
        // Not an envelope: reported as an undecodable message below, not an error of the connection.
        guard let header = try? decoder.decode(Header.self, from: data) else {
            return .malformed(reason: "not a {\"type\", \"payload\"} envelope")
        }
        guard let type = knownTypes.first(where: { $0.messageType == header.type }) else {
            // Unknown type: its payload is passed on raw if it parses, else nil (the caller sees the type name).
            let payload = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["payload"]
            let raw = payload.flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.fragmentsAllowed, .sortedKeys]) }
            return .unknown(type: header.type, payload: raw.map(Array.init) ?? [])
        }
        do {
            return .message(try Self.decodePayload(type, from: data, decoder: decoder))
        } catch {
            return .malformed(reason: "payload of type \"\(header.type)\" does not decode: \(error)")
        }
    }

    private static func decodePayload<T: WebSocketMessage>(_ type: T.Type, from data: Data, decoder: JSONDecoder) throws -> T {
        try decoder.decode(Payload<T>.self, from: data).payload
    }

    /// Decodes a manager event's message, or nil for events that carry none.
    package func decode(_ event: WebSocketManager.Event) -> Decoded? {
        switch event {
        case .text(let text): decode(Array(text.utf8))
        case .data(let bytes): decode(bytes)
        default: nil
        }
    }
}

import Clients
import EmbeddedServer
import TestSupport
import Testing
import WebSocket

private struct ChatMessage: WebSocketMessage, Equatable {
    static let messageType = "chat"
    var id: Int
    var text: String
}

private struct Presence: WebSocketMessage, Equatable {
    static let messageType = "presence"
    var user: String
    var isOnline: Bool
}

@Suite("Typed transport", .timeLimit(.minutes(1)))
struct TypedTransportTests {
    @Test("typed messages round-trip through the echo server; unknown and malformed frames are surfaced")
    func roundTrip() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                _ = try await runSession(url: server.url, loop: group.loops[0]) { manager, events in
                    var events = events
                    let transport = TypedWebSocketTransport(manager: manager, knownTypes: [ChatMessage.self, Presence.self])
                    try await transport.send(ChatMessage(id: 7, text: "héllo"))
                    try await transport.send(Presence(user: "ana", isOnline: true))
                    try await manager.send(text: #"{"type":"typing","payload":{"user":"bo"}}"#)
                    try await manager.send(text: #"{"type":"chat","payload":{"id":"x"}}"#)
                    try await manager.send(text: "not json")
                    var decoded: [TypedWebSocketTransport.Decoded] = []
                    for _ in 0..<5 {
                        guard let event = await events.nextMessage(), let message = transport.decode(event) else { break }
                        decoded.append(message)
                    }
                    try #require(decoded.count == 5, "\(decoded)")
                    if case .message(let first as ChatMessage) = decoded[0] { #expect(first == ChatMessage(id: 7, text: "héllo")) } else { Issue.record("\(decoded[0])") }
                    if case .message(let second as Presence) = decoded[1] { #expect(second.user == "ana") } else { Issue.record("\(decoded[1])") }
                    if case .unknown(let type, let payload) = decoded[2] {
                        #expect(type == "typing")
                        #expect(String(decoding: payload, as: UTF8.self) == #"{"user":"bo"}"#)
                    } else { Issue.record("\(decoded[2])") }
                    if case .malformed(let reason) = decoded[3] { #expect(reason.contains("chat")) } else { Issue.record("\(decoded[3])") }
                    if case .malformed = decoded[4] {} else { Issue.record("\(decoded[4])") }
                    await manager.disconnect()
                }
            }
        }
        #expect(try TypedWebSocketTransport.encode(ChatMessage(id: 1, text: "a")) == #"{"payload":{"id":1,"text":"a"},"type":"chat"}"#)
    }
}

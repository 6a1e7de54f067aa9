import Flow
import JSON
import Testing

@Suite("Engine.IO codec", .timeLimit(.minutes(2)))
struct EngineIOTests {
    private func decode(_ text: String) throws -> EngineIOPacket { try EngineIO.decodeOrThrow(text) }

    @Test func openPacketFromTheProtocolDocument() throws {
        let text = #"0{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":["websocket"],"pingInterval":25000,"pingTimeout":5000,"maxPayload":1000000}"#
        let packet = try decode(text)
        let handshake = EngineIOHandshake(
            sid: "lv_VI97HAXpY6yYWAAAC", upgrades: ["websocket"], pingInterval: .milliseconds(25000),
            pingTimeout: .milliseconds(5000), maxPayload: 1_000_000)
        #expect(packet == .open(handshake))
        #expect(packet.encoded == text)
    }
}

enum EngineIO {
    static func decodeOrThrow(_ text: String) throws -> EngineIOPacket { try EngineIOPacket.decode(text).get() }
}

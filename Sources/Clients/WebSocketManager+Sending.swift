import Runtime
import WebSocket
import WebSocketIO

/// Sending messages: queued on the connection and written at once by the calling task.
extension WebSocketManager {
    /// Sends a text message. - Throws: `not_connected` unless open; `transport` if the write fails.
    package func send(text: String) async throws(WebSocketClientError) {
        try await send(.text(text))
    }

    /// Sends a binary message.
    package func send(data: [UInt8]) async throws(WebSocketClientError) {
        try await send(.binary(data))
    }

    /// Sends a message (compressed and fragmented as configured). - Throws: as ``send(text:)``.
    package func send(_ message: WebSocketConnection.Message) async throws(WebSocketClientError) {
        guard state == .open, let channel, channel.connection.state == .open else {
            throw WebSocketClientError(.notConnected, "send on a connection that is \(state)")
        }
        channel.connection.send(message)
        do {
            try await channel.flush()
        } catch {
            throw Self.transportFailure(error)
        }
    }
}

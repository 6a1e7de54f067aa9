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
        if try !sendIfReady(message) { try await flushQueued() }
    }

    /// ``send(_:)`` as a plain call when the transport takes the frame without waiting: true once it is written;
    /// false when it is queued and the write would wait, and the caller then awaits ``flushQueued()`` (nothing
    /// else may be sent in between). For a driver whose every message would otherwise cost an async call.
    /// - Throws: as ``send(text:)``.
    package func sendIfReady(_ message: WebSocketConnection.Message) throws(WebSocketClientError) -> Bool {
        let channel = try queue(message)
        do {
            return try channel.flushIfReady()
        } catch {
            throw Self.transportFailure(error)
        }
    }

    /// Queues `message` on the open connection's channel (framed, masked), for the caller to write.
    /// - Throws: `not_connected` unless open.
    func queue(_ message: WebSocketConnection.Message) throws(WebSocketClientError) -> WebSocketChannel {
        guard state == .open, let channel, channel.queueIfOpen(message) else {
            throw WebSocketClientError(.notConnected, "send on a connection that is \(state)")
        }
        return channel
    }

    /// Writes what ``sendIfReady(_:)`` queued, waiting for the transport (backpressure).
    package func flushQueued() async throws(WebSocketClientError) {
        guard let channel else { throw WebSocketClientError(.notConnected, "send on a connection that is \(state)") }
        do {
            try await channel.flush()
        } catch {
            throw Self.transportFailure(error)
        }
    }
}

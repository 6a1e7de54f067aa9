import Runtime
import WebSocket
import WebSocketIO

/// Sending from a loop timer's callback, which has no task to suspend: the frame is queued on the connection and
/// handed to the transport at once (`uv_try_write`, the rest queued). Pings and the close have their own
/// counterparts beside their waiting forms (``sendPingWithoutWaiting()``, ``beginClosingWithoutWaiting(code:reason:)``).
extension WebSocketManager {
    /// Sends a message without waiting for the transport (compressed and fragmented as configured). A failed write
    /// is not thrown: it closes the transport, and the next read reports it.
    /// - Throws: `not_connected` unless open.
    package func sendWithoutWaiting(_ message: WebSocketConnection.Message) throws(WebSocketClientError) {
        try queue(message).flushWithoutWaiting()
    }
}

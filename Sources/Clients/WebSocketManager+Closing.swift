import Runtime
import WebSocket
import WebSocketIO

/// Closing: the intentional closing handshake (RFC 6455 §7.1.2), bounded by `closeTimeout`, and the abort.
extension WebSocketManager {
    /// Starts an intentional close without reading: queues and writes the close frame and returns. For a
    /// driver whose own task is blocked in ``receive()``: that read then sees the rest of the messages in
    /// flight and the peer's close, and ends with `not_connected` (`.disconnected` carries the peer's code).
    /// Does nothing unless the connection is open.
    package func beginClosing(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        // Ignoring a failed write is safe: the read side then sees the transport end and reports 1006.
        try? await queueClose(code: code, reason: reason)?.flush()
    }

    /// ``beginClosing(code:reason:)`` from a callback with no task to suspend (a loop timer's, a stop hook's): the
    /// close frame is handed to the transport without waiting; a failed write surfaces on the next read.
    package func beginClosingWithoutWaiting(code: WebSocketCloseCode = .normalClosure, reason: String = "") {
        queueClose(code: code, reason: reason)?.flushWithoutWaiting()
    }

    /// Queues the close frame on the open connection (now closing); returns the channel to write it, nil unless open.
    private func queueClose(code: WebSocketCloseCode, reason: String) -> WebSocketChannel? {
        guard state == .open else { return nil }
        state = .closing
        ending = nil
        eventQueue.release()  // run()'s reader must read on to the peer's close, whatever the consumer does
        guard let channel else { return nil }
        channel.connection.close(code: code, reason: reason)
        return channel
    }

    /// Drops the connection at once, without a closing handshake (the reader ends with 1006 and `reason`).
    package func abort(reason: String) {
        guard state != .closed, stream != nil else { return }
        if ending == nil { ending = (.abnormalClosure, reason) }
        dropTransport()
    }

    /// Closes the socket and stops run()'s reader waiting for the consumer, so it sees the end at once.
    func dropTransport() {
        eventQueue.release()
        stream?.close()
    }

    /// Closes intentionally: sends a close frame, waits up to `closeTimeout` for the closing handshake,
    /// then closes the transport. Idempotent; returns when the connection is closed.
    package func disconnect(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        switch state {
        case .idle:
            state = .closed
            finish()
            return
        case .connecting:
            state = .closed
            stream?.close()
            return
        case .closed:
            return
        case .open:
            await beginClosing(code: code, reason: reason)
        case .closing:
            break
        }
        // Closing the socket ends whichever read is pending (run's reader or the loop below), which then
        // reports `.disconnected`. Timer callbacks run on the loop thread outside any job.
        let timer = ScheduledTimer(on: loop, after: configuration.closeTimeout) { [self] in
            self.assumeIsolated { $0.dropTransport() }
        }
        if isRunning {
            await withCheckedContinuation { continuation in
                if state == .closed { continuation.resume() } else { closeWaiters.append(continuation) }
            }
        } else {
            // Nobody else reads (the receive() mode): read until the peer's close ends the connection;
            // messages still in flight are dropped. The timer bounds it.
            while state != .closed {
                do { _ = try await receive() } catch { break }
            }
            endReceiving()
        }
        timer.cancel()
    }
}

import Runtime
import WebSocket
import WebSocketIO

/// The read side, in both modes, over the one read loop the embedded server shares (`WebSocketChannel`):
/// ``run()``'s reader turns events into ``WebSocketManager/Event``s; ``receive()`` is read by the calling task.
extension WebSocketManager {
    /// The next message, read by the calling task itself, like `URLSessionWebSocketTask.receive()`:
    /// the fastest path (no reader task, no stream hop), for drivers that alternate send and receive.
    /// Pings are answered and pongs matched while it reads. Use either this (after ``connect()``) or
    /// ``run()``, not both.
    /// - Throws: `protocol` after a violation (the connection is failed with its close code);
    ///   `not_connected` once the connection has closed (``events()`` then ends with `.disconnected`).
    package func receive() async throws(WebSocketClientError) -> WebSocketConnection.Message {
        guard !isRunning, let channel, state == .open || state == .closing else { return try receiveRefused() }
        // The one await is the read; the ends are built out of line, so this frame (held by a parked reader for
        // as long as its connection is idle) keeps none of their values.
        var isCloseReceived = false
        while true {
            let event: WebSocketConnection.Event?
            do {
                event = try await channel.next()
            } catch {
                throw endReceiving(transportFailure: error)
            }
            guard let event else { throw endReceiving(isCloseReceived: isCloseReceived) }
            switch event {
            case .message(let message):
                return message
            case .ping, .pong, .closeReceived:
                if didReadControl(event) { isCloseReceived = true }
            case .failed(let error):
                throw endReceiving(failed: error)
            }
        }
    }

    /// ``receive()`` cannot read: run() reads, or the connection is not open (a test's fault may still hand over a
    /// message after the close).
    @inline(never)
    private func receiveRefused() throws(WebSocketClientError) -> WebSocketConnection.Message {
        if isRunning { throw WebSocketClientError(.invalidConfiguration, "receive() while run() reads") }
        if let late = messageAfterClose() { return late }
        throw WebSocketClientError(.notConnected, "receive on a connection that is \(state)")
    }

    /// ``receive()`` saw the transport end (after the peer's close, or without one): the connection is over.
    @inline(never)
    private func endReceiving(isCloseReceived: Bool) -> WebSocketClientError {
        let failure: WebSocketClientError
        if isCloseReceived {
            failure = WebSocketClientError(.notConnected, "closed: \(ending.map { "\($0.code)" } ?? "")")
        } else {
            let detail = "the connection closed without a closing handshake"
            if ending == nil { ending = (.abnormalClosure, detail) }
            failure = WebSocketClientError(.notConnected, detail)
        }
        endReceiving()
        return failure
    }

    /// ``receive()`` read a protocol violation (the channel wrote the close frame with its code).
    @inline(never)
    private func endReceiving(failed error: WebSocketProtocolError) -> WebSocketClientError {
        didFail(error)
        endReceiving()
        return WebSocketClientError(.protocolViolation, error.description, protocolError: error)
    }

    /// A read or write under ``receive()`` failed.
    @inline(never)
    private func endReceiving(transportFailure error: any Error) -> WebSocketClientError {
        let failure = Self.transportFailure(error)
        if ending == nil { ending = (.abnormalClosure, failure.detail) }
        endReceiving()
        return failure
    }

    /// After ``receive()`` saw the end: emit `.disconnected` and finish, as run() would.
    func endReceiving() {
        guard state != .closed else { return }
        stream?.close()
        let (code, reason) = ending ?? (.abnormalClosure, "connection ended")
        eventQueue.yield(.disconnected(code, reason))
        finish()
    }

    /// ``run()``'s reader: events until the connection ends; `ending` then says how it ended.
    func readLoop() async {
        guard let channel else { return }
        do {
            while let event = try await channel.next() {
                switch event {
                case .message(.text(let text)):
                    if eventQueue.yield(.text(text), messageBytes: text.utf8.count) { await waitForConsumer() }
                case .message(.binary(let bytes)):
                    if eventQueue.yield(.data(bytes), messageBytes: bytes.count) { await waitForConsumer() }
                case .ping, .pong, .closeReceived:
                    didReadControl(event)
                case .failed(let error):
                    didFail(error)
                    return
                }
            }
            if ending == nil { ending = (.abnormalClosure, "the connection closed without a closing handshake") }
        } catch {
            guard ending == nil else { return }
            if isPeerDead {
                ending = (.abnormalClosure, "no pong within \(configuration.pongTimeout)")
            } else if error is CancellationError || Task.isCancelled {
                ending = (.abnormalClosure, "cancelled")
            } else {
                let failure = Self.transportFailure(error)
                eventQueue.yield(.error(failure))
                ending = (.abnormalClosure, failure.detail)
            }
        }
    }

    /// Backpressure (see ``events()``): the consumer is a high-water mark behind, so nothing more is read until
    /// it caught up to half, the connection is closing or dropped, or run() is cancelled.
    private func waitForConsumer() async {
        readerPauseCount &+= 1
        isReaderPaused = true
        await eventQueue.waitForRoom()
        isReaderPaused = false
    }

    /// A control frame the channel read, in either mode: a ping it already answered, a pong to match, or the peer's
    /// close frame (the channel wrote our reply; the next read waits for the server's FIN). True for the close.
    @discardableResult
    private func didReadControl(_ event: WebSocketConnection.Event) -> Bool {
        switch event {
        case .pong(let payload):
            didReceivePong(payload)
        case .closeReceived(let code, let reason):
            didReceiveClose(code: code, reason: reason)
            return true
        default:
            break  // a ping: answered already
        }
        return false
    }

    /// The peer's close frame arrived (the channel wrote our reply): its code is what `.disconnected` reports.
    private func didReceiveClose(code: WebSocketCloseCode?, reason: String) {
        ending = (code ?? .noStatusReceived, reason.isEmpty ? nil : reason)
        state = .closing
        eventQueue.release()  // the closing handshake never waits for the consumer
    }

    /// The peer broke the protocol (the channel wrote the close frame with the error's code).
    private func didFail(_ error: WebSocketProtocolError) {
        eventQueue.yield(.error(WebSocketClientError(.protocolViolation, error.description, protocolError: error)))
        ending = (error.closeCode, error.reason)
    }

    /// A failed read or write as the client reports it.
    static func transportFailure(_ error: any Error) -> WebSocketClientError {
        switch error {
        case let error as WebSocketClientError: error
        case let error as RuntimeError: .from(error, during: .transport)
        default: WebSocketClientError(.transport, "\(error)")
        }
    }
}

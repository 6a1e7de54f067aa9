import Runtime
import WebSocket
import WebSocketIO

/// Messages handed to a driver where they are read: ``WebSocketManager/receiveEach(_:)``.
extension WebSocketManager {
    /// What ``receiveEach(_:)`` hands each message to, isolated to the manager: true to go on, false to stop.
    package typealias MessageHandler =
        @Sendable (isolated WebSocketManager, WebSocketConnection.Message) throws(WebSocketClientError) -> Bool

    /// ``receive()`` in a loop, for a driver that answers every message with plain calls (a closed-model echo client:
    /// the reply, then the next request): each message goes to `handler` as it is read — on the loop thread, in the
    /// transport's read callback, without resuming the calling task, where the transport can (TCP) — until `handler`
    /// returns false (this then returns) or throws (this throws it). A control frame, the peer's close, a failure, a
    /// write that would wait, or a stream that cannot read on the loop thread (TLS) takes ``receive()``'s path, and
    /// the next message goes back to the loop thread. Cancelling the calling task ends it as it ends a read.
    /// - Throws: as ``receive()``, or what `handler` threw.
    package func receiveEach(_ handler: @escaping MessageHandler) async throws(WebSocketClientError) {
        var isLoopReadable = true
        while true {
            guard try handler(self, try await receive()) else { return }
            guard isLoopReadable, let channel, let stream, channel.isReadableWithoutWaiting else { continue }
            switch await deliverOnLoop(channel: channel, stream: stream, handler: handler) {
            case .handedOver: continue
            case .unsupported: isLoopReadable = false  // TLS: receive() from now on, without asking again
            case .stopped: return
            case .failed(let error): throw error
            }
        }
    }

    /// One stretch of messages read on the loop thread: the calling task parks (once, not once per message) until the
    /// stretch ends. Out of line: the per-message path is the read callback, not this frame.
    @inline(never)
    private func deliverOnLoop(
        channel: WebSocketChannel, stream: any ByteStream, handler: @escaping MessageHandler
    ) async -> LoopDelivery.Outcome {
        let delivery = LoopDelivery(channel: channel, handler: handler)
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                delivery.park(continuation)
                // Called per read: `isolatedCallback`, not `assumeIsolated` in the handler (two allocations per call).
                let readable = isolatedCallback { delivery.readable($0) }
                let isSet: Bool
                do {
                    isSet = try stream.setReadableHandler(readable)
                } catch {
                    return delivery.handOver()  // the stream is failing: receive() meets its failure
                }
                guard isSet else { return delivery.handOver(.unsupported) }
                readable()  // what arrived before the handler was set
            }
        } onCancel: {
            stream.cancelReads()
        }
        _ = try? stream.setReadableHandler(nil)  // clearing starts no read: nothing can throw
        return delivery.outcome
    }
}

/// The state of one ``WebSocketManager/receiveEach(_:)`` stretch on the loop thread: the parked task, and how the
/// stretch ended. Loop-confined (hence unchecked): every method runs on the manager's loop, isolated to it. Its state
/// is not checked for exclusive access at run time either: each access is a plain read or store, and a read callback
/// made seven checked ones.
final class LoopDelivery: @unchecked Sendable {
    /// The stretch ended for ``WebSocketManager/receive()`` to go on, because the handler stopped, because it threw,
    /// or at once because the stream cannot read on the loop thread.
    enum Outcome { case handedOver, stopped, failed(WebSocketClientError), unsupported }

    let channel: WebSocketChannel
    let handler: WebSocketManager.MessageHandler
    @exclusivity(unchecked) private(set) var outcome = Outcome.handedOver
    @exclusivity(unchecked) private var waiter: UnsafeContinuation<Void, Never>?
    /// Set while ``readable(_:)`` runs: a close inside it (the handler's write failing) calls it again, and that call
    /// returns at once; the running one meets the close on its next pull.
    @exclusivity(unchecked) private var isDelivering = false

    init(channel: WebSocketChannel, handler: @escaping WebSocketManager.MessageHandler) {
        self.channel = channel
        self.handler = handler
    }

    func park(_ continuation: UnsafeContinuation<Void, Never>) {
        waiter = continuation
    }

    /// Ends the stretch: the parked task resumes (once) and returns ``outcome``.
    func handOver(_ outcome: Outcome = .handedOver) {
        guard let waiter else { return }
        self.waiter = nil
        self.outcome = outcome
        waiter.resume()
    }

    /// The transport has bytes, ended or closed: every message parsed goes to the handler, then the next bytes are
    /// pulled, until none are left (the task stays parked) or something only ``WebSocketManager/receive()`` handles
    /// comes (the stretch ends; EOF and failures stay with the transport for it to meet).
    func readable(_ manager: isolated WebSocketManager) {
        guard waiter != nil, !isDelivering else { return }
        isDelivering = true
        defer { isDelivering = false }
        do {
            while waiter != nil {
                while let message = channel.nextIfAvailable() {
                    let goesOn: Bool
                    do { goesOn = try handler(manager, message) } catch { return handOver(.failed(error)) }
                    guard goesOn else { return handOver(.stopped) }
                }
                // A control frame or failure parsed, the close begun, or a stall: receive()'s path.
                guard channel.isReadableWithoutWaiting, try channel.flushIfReady() else { return handOver() }
                guard let count = try channel.pullAvailable() else { return }  // nothing more yet: stay parked
                if count == 0 { return handOver() }  // EOF
            }
        } catch {
            handOver()  // the transport failed: receive() meets its failure
        }
    }
}

import Runtime
import WebSocket
import WebSocketIO

/// Heartbeats: pings with an 8-byte id whose pongs are matched to their round trip (§5.5.2–5.5.3), and the
/// periodic ping that declares a silent peer dead.
extension WebSocketManager {
    /// Sends a ping and returns the round trip when its pong arrives (needs ``run()`` to be reading).
    package func sendPing() async throws -> Duration {
        let id = try await transmitPing()
        if let roundTrip = answeredPings.removeValue(forKey: id) { return roundTrip }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if let roundTrip = answeredPings.removeValue(forKey: id) {
                    continuation.resume(returning: roundTrip)
                } else if state != .open {
                    continuation.resume(throwing: WebSocketClientError(.notConnected, "connection closed before the pong"))
                } else {
                    pingWaiters[id] = continuation
                }
            }
        } onCancel: {
            // Deferred (never inline), so it cannot interleave with a running job of this actor.
            loop.execute { self.assumeIsolated { $0.cancelPingWait(id) } }
        }
    }

    private func cancelPingWait(_ id: UInt64) {
        pingWaiters.removeValue(forKey: id)?.resume(throwing: CancellationError())
        pingSentAt.removeValue(forKey: id)
    }

    /// Queues and writes a ping carrying a fresh 8-byte id; returns the id.
    private func transmitPing() async throws(WebSocketClientError) -> UInt64 {
        guard let (id, channel) = queuePing() else {
            throw WebSocketClientError(.notConnected, "ping on a connection that is \(state)")
        }
        do {
            try await channel.flush()
        } catch {
            pingSentAt.removeValue(forKey: id)
            throw WebSocketClientError(.transport, "\(error)")
        }
        return id
    }

    /// Queues a ping carrying a fresh 8-byte id and hands it to the transport without waiting, for a driver that
    /// pings from a loop timer's callback: the pong's round trip goes to ``pongObserver`` as it is read (by
    /// ``receive()`` or run()'s reader); a failed write surfaces on the next read. Returns the id; nil unless open.
    package func sendPingWithoutWaiting() -> UInt64? {
        guard let (id, channel) = queuePing() else { return nil }
        channel.flushWithoutWaiting()
        return id
    }

    /// Queues a ping with the next id on the open connection, its send time noted; nil unless open.
    private func queuePing() -> (UInt64, WebSocketChannel)? {
        guard state == .open, let channel, channel.connection.state == .open else { return nil }
        nextPingID += 1
        let id = nextPingID
        pingSentAt[id] = clock.now
        channel.connection.sendPing((0..<8).map { UInt8(truncatingIfNeeded: id >> (56 - 8 * UInt64($0))) })
        return (id, channel)
    }

    func didReceivePong(_ payload: [UInt8]) {
        guard payload.count == 8 else { return }  // Unsolicited pongs are allowed and ignored (§5.5.3).
        let id = payload.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard let sentAt = pingSentAt.removeValue(forKey: id) else { return }
        let roundTrip = sentAt.duration(to: clock.now)
        lastPingRoundTrip = roundTrip
        if let waiter = pingWaiters.removeValue(forKey: id) {
            waiter.resume(returning: roundTrip)
        } else if let pongObserver {
            pongObserver(id, roundTrip)
        } else {
            answeredPings[id] = roundTrip
        }
    }

    /// Pings every `interval` while one is set; a ping unanswered within `pongTimeout` declares the
    /// peer dead. Runs in ``run()``'s task group for the connection's whole life.
    func pingLoop() async {
        let timeout = configuration.pongTimeout
        while state == .open {
            guard let interval = pingInterval else {
                await withCheckedContinuation { pingIntervalWaiter = $0 }
                continue
            }
            do {
                try await loop.sleep(for: interval)
                guard state == .open else { return }
                let id = try await transmitPing()
                let pausesAtPing = readerPauseCount
                try await loop.sleep(for: min(timeout, interval))
                if timeout > interval, pingSentAt[id] != nil { try await loop.sleep(for: timeout - interval) }
                // A reader that waited for a slow consumer meanwhile may have left the pong unread: no verdict.
                let wasPongReadable = !isReaderPaused && readerPauseCount == pausesAtPing
                if pingSentAt.removeValue(forKey: id) != nil && state == .open && wasPongReadable {
                    isPeerDead = true
                    eventQueue.yield(.error(WebSocketClientError(.pongTimeout, "no pong within \(timeout)")))
                    dropTransport()
                    return
                }
                answeredPings.removeValue(forKey: id)
            } catch {
                return
            }
        }
    }

    /// Pings every `interval` from now on (replacing `configuration.pingInterval`); each ping must be
    /// answered within `configuration.pongTimeout` or the peer is declared dead. Needs ``run()``.
    package func startPinging(interval: Duration) {
        pingInterval = interval
        pingIntervalWaiter?.resume()
        pingIntervalWaiter = nil
        if isRunning { post(.pingingChanged) }
    }

    /// Stops periodic pings (after the current one).
    package func stopPinging() {
        pingInterval = nil
    }

}

import HTTP1
import Runtime
import WebSocket

/// How a ``WebSocketManager`` connects: handshake options, TLS, limits, heartbeats and timeouts.
package struct WebSocketClientConfiguration: Sendable {
    /// How the client proves who it is. Tokens are never printed or written to reports.
    package enum Authentication: Sendable {
        /// `Authorization: Bearer <token>`: preferred (query strings end up in access logs).
        case bearer(String)
        /// Any header, e.g. `X-API-Key`.
        case header(name: String, value: String)
        /// `?<name>=<token>` in the request target, for servers that accept nothing else.
        case query(name: String, token: String)
    }

    /// Extra handshake headers.
    package var headers: HTTPHeaders
    package var origin: String?
    /// Subprotocols offered in preference order; the chosen one is ``WebSocketManager/negotiatedSubprotocol``.
    package var subprotocols: [String]
    /// A permessage-deflate offer, or nil to not offer compression.
    package var compression: PerMessageDeflateOffer?
    package var authentication: Authentication?
    /// The client TLS context for `wss://` (share one across connections so sessions resume).
    package var tls: TLSContext?
    /// SNI and the name the certificate must match; defaults to the URL's host.
    package var serverName: String?
    package var tcp: TCPOptions
    /// The whole opening handshake (TLS included) must finish within this.
    package var handshakeTimeout: Duration
    /// After a close frame is sent, the peer's close (and TCP close) must come within this.
    package var closeTimeout: Duration
    /// Frame, message and fragment limits for what the server sends.
    package var limits: WebSocketConnection.Configuration
    /// Send a ping every `pingInterval`; nil sends none.
    package var pingInterval: Duration?
    /// A ping unanswered this long declares the peer dead (event `.error(pong_timeout)`, then 1006).
    package var pongTimeout: Duration
    /// Where a test bends the client to prove the correctness oracle notices; nil (always, in real runs) is the
    /// honest client. Asked at most once per connection, never per message.
    package var faults: (any WebSocketClientFaults)?
    /// run() mode's backpressure: the reader stops reading the socket while the consumer of
    /// ``WebSocketManager/events()`` has this many messages not yet taken (it reads on at half).
    package var maximumPendingMessages: Int
    /// The same for the bytes of those messages (one larger message still passes).
    package var maximumPendingBytes: Int
    /// Bounds the opening handshakes in flight per loop (``HandshakeWindow``); nil: every connect starts at once.
    package var handshakeWindow: HandshakeWindow?

    package init(
        headers: HTTPHeaders = HTTPHeaders(), origin: String? = nil, subprotocols: [String] = [],
        compression: PerMessageDeflateOffer? = nil, authentication: Authentication? = nil, tls: TLSContext? = nil,
        serverName: String? = nil, tcp: TCPOptions = TCPOptions(), handshakeTimeout: Duration = .seconds(10),
        closeTimeout: Duration = .seconds(5), limits: WebSocketConnection.Configuration = .init(),
        pingInterval: Duration? = nil, pongTimeout: Duration = .seconds(10), maximumPendingMessages: Int = 256,
        maximumPendingBytes: Int = 4 << 20
    ) {
        self.maximumPendingMessages = maximumPendingMessages
        self.maximumPendingBytes = maximumPendingBytes
        self.headers = headers
        self.origin = origin
        self.subprotocols = subprotocols
        self.compression = compression
        self.authentication = authentication
        self.tls = tls
        self.serverName = serverName
        self.tcp = tcp
        self.handshakeTimeout = handshakeTimeout
        self.closeTimeout = closeTimeout
        self.limits = limits
        self.pingInterval = pingInterval
        self.pongTimeout = pongTimeout
    }
}

/// Where a ``WebSocketManager`` can be bent on purpose, for the oracle's proofs: the conformances that break
/// something live in the tests, and the defaults (a protocol extension) are the honest client. Each method is
/// asked at most once per connection, off the per-message path. Class-bound: every connection keeps a copy of
/// its configuration, which so grows by one reference, not by an inline existential.
package protocol WebSocketClientFaults: AnyObject, Sendable {
    /// The upgrade request is about to be written (the server has said nothing yet). `announceConnected`
    /// emits `.connected` and counts the connection open at once; the honest client calls it only after a
    /// valid 101, so the default does nothing.
    func upgradeRequestWillBeSent(announceConnected: () -> Void)
    /// A message the first ``WebSocketManager/receive()`` after the connection closed returns instead of
    /// throwing `not_connected`; asked once, by that receive. Honest: nil.
    func messageAfterClose() -> WebSocketConnection.Message?
    /// The ``WebSocketManager/closeReason`` reported for a connection closed with `code` and `reason`.
    /// Honest: `reason`.
    func reportedCloseReason(_ reason: String?, code: WebSocketCloseCode) -> String?
}

extension WebSocketClientFaults {
    package func upgradeRequestWillBeSent(announceConnected: () -> Void) {}
    package func messageAfterClose() -> WebSocketConnection.Message? { nil }
    package func reportedCloseReason(_ reason: String?, code: WebSocketCloseCode) -> String? { reason }
}

/// One ``WebSocketClientConfiguration`` that many connections share by reference: the struct is over 500 bytes, and
/// every ``WebSocketManager`` held its own copy inline (an engine's idle connection: 0.5 KB of 11).
package final class SharedWebSocketConfiguration: Sendable {
    package let value: WebSocketClientConfiguration
    package init(_ value: WebSocketClientConfiguration) { self.value = value }
}

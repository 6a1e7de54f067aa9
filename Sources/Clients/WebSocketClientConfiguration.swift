import HTTP1
import Runtime
import WebSocket

/// How a ``WebSocketManager`` connects: handshake options, TLS, limits, heartbeats and timeouts.
public struct WebSocketClientConfiguration: Sendable {
    /// How the client proves who it is. Tokens are never printed or written to reports.
    public enum Authentication: Sendable {
        /// `Authorization: Bearer <token>`: preferred (query strings end up in access logs).
        case bearer(String)
        /// Any header, e.g. `X-API-Key`.
        case header(name: String, value: String)
        /// `?<name>=<token>` in the request target, for servers that accept nothing else.
        case query(name: String, token: String)
    }

    /// Extra handshake headers.
    public var headers: HTTPHeaders
    public var origin: String?
    /// Subprotocols offered in preference order; the chosen one is ``WebSocketManager/negotiatedSubprotocol``.
    public var subprotocols: [String]
    /// A permessage-deflate offer, or nil to not offer compression.
    public var compression: PerMessageDeflateOffer?
    public var authentication: Authentication?
    /// The client TLS context for `wss://` (share one across connections so sessions resume).
    public var tls: TLSContext?
    /// SNI and the name the certificate must match; defaults to the URL's host.
    public var serverName: String?
    public var tcp: TCPOptions
    /// The whole opening handshake (TLS included) must finish within this.
    public var handshakeTimeout: Duration
    /// After a close frame is sent, the peer's close (and TCP close) must come within this.
    public var closeTimeout: Duration
    /// Frame, message and fragment limits for what the server sends.
    public var limits: WebSocketConnection.Configuration
    /// Send a ping every `pingInterval`; nil sends none.
    public var pingInterval: Duration?
    /// A ping unanswered this long declares the peer dead (event `.error(pong_timeout)`, then 1006).
    public var pongTimeout: Duration
    /// Test-only: break the client on purpose so tests can prove the correctness oracle notices.
    public var faults = ClientFaults()

    /// Deliberate client bugs for the oracle's tests; all off unless a test turns one on.
    public struct ClientFaults: Sendable, Hashable {
        /// Emit `.connected` (and count as open) before the upgrade request is even sent — the reference's bug.
        public var isConnectedBeforeHandshake = false
        /// Once closed, answer the next ``WebSocketManager/receive()`` with a message instead of `not_connected`.
        public var isDeliveringAfterClose = false
        /// Report no ``WebSocketManager/closeReason`` for a connection that ended without a closing handshake.
        public var isForgettingAbnormalCloseReason = false

        public init() {}
    }

    public init(
        headers: HTTPHeaders = HTTPHeaders(), origin: String? = nil, subprotocols: [String] = [],
        compression: PerMessageDeflateOffer? = nil, authentication: Authentication? = nil, tls: TLSContext? = nil,
        serverName: String? = nil, tcp: TCPOptions = TCPOptions(), handshakeTimeout: Duration = .seconds(10),
        closeTimeout: Duration = .seconds(5), limits: WebSocketConnection.Configuration = .init(),
        pingInterval: Duration? = nil, pongTimeout: Duration = .seconds(10)
    ) {
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

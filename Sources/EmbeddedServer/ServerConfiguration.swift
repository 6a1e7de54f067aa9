import HTTP1
import Runtime
import WebSocket

/// Faults the embedded server injects, for testing how clients cope (reconnects, timeouts, close codes).
package struct ChaosOptions: Sendable, Hashable {
    /// How a chaos close ends a connection.
    package enum CloseMode: String, Sendable, Hashable, CaseIterable {
        /// A close frame with ``closeCode``, then the closing handshake.
        case closeFrame = "close"
        /// TCP closed without a close frame (the client sees 1006).
        case drop
        /// TCP reset (RST).
        case reset
    }

    /// Close each connection this long after its handshake.
    package var closeAfter: Duration?
    /// Close instead of echoing, with this probability per message (0–1).
    package var closeProbability: Double
    package var closeCode: WebSocketCloseCode
    package var closeMode: CloseMode
    /// Wait this long before each echo.
    package var echoDelay: Duration?
    /// After the handshake, never read again (a stalled server: pings go unanswered).
    package var isReadingStopped: Bool
    /// Seed for the probability draws (runs repeat exactly); nil seeds from the system.
    package var seed: UInt64?

    package init(
        closeAfter: Duration? = nil, closeProbability: Double = 0, closeCode: WebSocketCloseCode = .goingAway,
        closeMode: CloseMode = .closeFrame, echoDelay: Duration? = nil, isReadingStopped: Bool = false, seed: UInt64? = nil
    ) {
        self.closeAfter = closeAfter
        self.closeProbability = closeProbability
        self.closeCode = closeCode
        self.closeMode = closeMode
        self.echoDelay = echoDelay
        self.isReadingStopped = isReadingStopped
        self.seed = seed
    }

    /// True when no fault is configured.
    package var isNone: Bool {
        closeAfter == nil && closeProbability == 0 && echoDelay == nil && !isReadingStopped
    }
}

/// How the embedded server listens and behaves.
package struct ServerConfiguration: Sendable {
    /// Loopback by default: the embedded server is a test target, not a public service.
    package var host: String
    /// 0 picks a free port (see ``EmbeddedServer/localAddress``).
    package var port: Int
    /// A server TLS context to serve `wss://`; nil serves plain `ws://`.
    package var tls: TLSContext?
    /// Subprotocols the server accepts, in preference order.
    package var subprotocols: [String]
    /// Answer permessage-deflate offers.
    package var isCompressionEnabled: Bool
    /// Limits on what clients send.
    package var limits: WebSocketConnection.Configuration
    package var chaos: ChaosOptions
    /// The request head and TLS handshake must arrive within this.
    package var handshakeTimeout: Duration
    /// Called with each upgrade request (tests check headers the client sent). Runs on a loop thread.
    package var onHandshake: (@Sendable (HTTPRequestHead) -> Void)?
    /// Where `/files/<name>` is served from; nil serves no files (only generated `/bytes/<size>`).
    package var filesDirectory: String?
    /// Where `/upload` stores what it receives; nil only digests it.
    package var uploadDirectory: String?
    /// The largest upload accepted (413 above it; `serve --max-upload`).
    package var maximumUploadSize: Int64 = 1 << 30
    /// How long a kept-alive HTTP connection may wait for its next request before it is closed; nil: no limit.
    package var idleTimeout: Duration? = .seconds(60)
    /// A request head after the first must arrive whole within this (the first, with TLS, within
    /// ``handshakeTimeout``); a head trickled byte by byte cannot stretch it. nil: no limit.
    package var headTimeout: Duration? = .seconds(10)
    /// The longest a request body may go without a byte arriving; nil: no limit.
    package var bodyTimeout: Duration? = .seconds(30)
    /// The longest the server waits, with response or WebSocket bytes queued, for a client that takes none of
    /// them: an inactivity limit (any byte the client reads restarts it, so a slow reader is never cut, one that
    /// stopped reading is); HTTP responses and upgraded sessions alike. nil: no limit.
    package var writeTimeout: Duration? = .seconds(30)
    /// Connections served at once; one more is answered 503 with `Connection: close` and closed. 0: no cap.
    /// Below the process's open-file limit (about 20,000 here), so the cap, not `EMFILE`, answers a flood.
    package var maximumConnections: Int = 16_384
    /// The largest `/bytes/<size>` served.
    package var maximumGeneratedSize: Int64 = 1 << 40
    package var httpChaos = HTTPChaosOptions()
    /// Socket options of accepted connections (tests shrink the write queue's water marks to see backpressure
    /// with small bodies).
    package var tcpOptions = TCPOptions()
    /// Limits of the `/chat` service (tests shrink them to reach each one).
    package var chatLimits = ChatLimits()

    package init(
        host: String = "127.0.0.1", port: Int = 0, tls: TLSContext? = nil, subprotocols: [String] = [],
        isCompressionEnabled: Bool = true, limits: WebSocketConnection.Configuration = .init(), chaos: ChaosOptions = .init(),
        handshakeTimeout: Duration = .seconds(10), onHandshake: (@Sendable (HTTPRequestHead) -> Void)? = nil
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.subprotocols = subprotocols
        self.isCompressionEnabled = isCompressionEnabled
        self.limits = limits
        self.chaos = chaos
        self.handshakeTimeout = handshakeTimeout
        self.onHandshake = onHandshake
    }
}

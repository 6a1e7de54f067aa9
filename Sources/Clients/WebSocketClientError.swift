import Runtime
import WebSocket

/// Why a WebSocket client connection failed or ended badly; ``code`` is stable and tags report metrics.
package struct WebSocketClientError: Error, Sendable, CustomStringConvertible {
    /// The stable tag of the failure, as reports count it.
    package enum Code: String, Sendable, Hashable, CaseIterable {
        /// TCP or DNS failed (see ``runtimeError`` for refused, timeout, dns, ...).
        case connect
        /// TLS failed: verification, handshake or configuration.
        case tls
        /// The server's handshake response was refused (status, Accept, subprotocol, extension).
        case handshake
        /// No complete handshake response in time.
        case handshakeTimeout = "handshake_timeout"
        /// The peer broke RFC 6455/7692; the connection was failed with a close code.
        case protocolViolation = "protocol"
        /// A ping got no pong within the timeout: the peer was declared dead.
        case pongTimeout = "pong_timeout"
        /// The transport failed after the handshake (reset, broken pipe, ...).
        case transport
        /// The operation needs an open connection.
        case notConnected = "not_connected"
        /// The URL or options are unusable.
        case invalidConfiguration = "invalid_configuration"
    }

    package var code: Code
    package var detail: String
    /// The runtime failure behind `connect`, `tls` and `transport` errors.
    package var runtimeError: RuntimeError? { if case .runtime(let error) = cause { error } else { nil } }
    package var handshakeError: WebSocketHandshakeError? {
        if case .handshake(let error) = cause { error } else { nil }
    }
    package var protocolError: WebSocketProtocolError? {
        if case .protocolViolation(let error) = cause { error } else { nil }
    }

    /// The one failure behind the code, boxed: this error is thrown (typed) through the read's and the connect's
    /// async frames, and every frame that can hold one reserves its size. Three optional structs inline made it
    /// about 150 bytes, held many times over by each idle connection's task; boxed, it is 32.
    private let cause: Cause?
    private indirect enum Cause: Sendable {
        case runtime(RuntimeError)
        case handshake(WebSocketHandshakeError)
        case protocolViolation(WebSocketProtocolError)
    }

    /// At most one of the causes (the first given).
    package init(
        _ code: Code, _ detail: String, runtimeError: RuntimeError? = nil, handshakeError: WebSocketHandshakeError? = nil,
        protocolError: WebSocketProtocolError? = nil
    ) {
        self.code = code
        self.detail = detail
        if let runtimeError {
            cause = .runtime(runtimeError)
        } else if let handshakeError {
            cause = .handshake(handshakeError)
        } else if let protocolError {
            cause = .protocolViolation(protocolError)
        } else {
            cause = nil
        }
    }

    package var description: String { "\(code.rawValue): \(detail)" }

    /// `connect`, `tls` or `transport` from a runtime error, keeping it.
    static func from(_ error: RuntimeError, during code: Code) -> WebSocketClientError {
        let isTLS = [.tlsHandshakeFailed, .tlsVerificationFailed, .tlsProtocolError, .tlsConfiguration].contains(error.code)
        return WebSocketClientError(isTLS && code == .connect ? .tls : code, error.description, runtimeError: error)
    }
}

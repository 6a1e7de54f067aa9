/// A close status code (RFC 6455 §7.4), shaped like `URLSessionWebSocketTask.CloseCode`.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// Never sent: reported when a close frame carried no code (§7.1.5).
    public static let noStatusReceived = WebSocketCloseCode(rawValue: 1005)
    /// Never sent: reported when the connection ended without a close frame (§7.1.5).
    public static let abnormalClosure = WebSocketCloseCode(rawValue: 1006)
    public static let invalidFramePayloadData = WebSocketCloseCode(rawValue: 1007)
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    public static let mandatoryExtensionMissing = WebSocketCloseCode(rawValue: 1010)
    public static let internalServerError = WebSocketCloseCode(rawValue: 1011)
    /// Never sent: reported when the TLS handshake failed (§7.4.1).
    public static let tlsHandshakeFailure = WebSocketCloseCode(rawValue: 1015)

    /// Whether the code may appear in a close frame: 1000–1003, 1007–1014 (the IANA-registered codes),
    /// and 3000–4999 (registered and private use). 1004–1006 and 1015 are reserved or local-only.
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    public var description: String {
        let name: String? = switch rawValue {
        case 1000: "normal closure"
        case 1001: "going away"
        case 1002: "protocol error"
        case 1003: "unsupported data"
        case 1005: "no status received"
        case 1006: "abnormal closure"
        case 1007: "invalid frame payload data"
        case 1008: "policy violation"
        case 1009: "message too big"
        case 1010: "mandatory extension missing"
        case 1011: "internal server error"
        case 1015: "TLS handshake failure"
        default: nil
        }
        return name.map { "\(rawValue) (\($0))" } ?? String(rawValue)
    }
}

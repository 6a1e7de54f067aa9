/// A frame opcode (RFC 6455 §5.2): an open set of 4-bit wire values.
public struct WebSocketOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8

    public init?(rawValue: UInt8) {
        guard rawValue < 16 else { return nil }
        self.rawValue = rawValue
    }

    private init(_ value: UInt8) { rawValue = value }

    public static let continuation = WebSocketOpcode(0x0)
    public static let text = WebSocketOpcode(0x1)
    public static let binary = WebSocketOpcode(0x2)
    public static let close = WebSocketOpcode(0x8)
    public static let ping = WebSocketOpcode(0x9)
    public static let pong = WebSocketOpcode(0xA)

    /// Control frames (close, ping, pong, and the reserved 0xB–0xF) have the high bit set.
    public var isControl: Bool { rawValue & 0x8 != 0 }

    /// Opcodes RFC 6455 reserves for future use (0x3–0x7, 0xB–0xF): receiving one fails the connection.
    public var isReserved: Bool { !(rawValue <= 0x2 || (0x8...0xA).contains(rawValue)) }

    public var description: String {
        switch rawValue {
        case 0x0: "continuation"
        case 0x1: "text"
        case 0x2: "binary"
        case 0x8: "close"
        case 0x9: "ping"
        case 0xA: "pong"
        default: "reserved(0x\(String(rawValue, radix: 16)))"
        }
    }
}

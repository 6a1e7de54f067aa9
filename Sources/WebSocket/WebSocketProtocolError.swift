/// A violation of RFC 6455/7692 by the peer: the connection fails with ``closeCode``.
///
/// `offset` is the byte offset in the inbound stream (after the handshake) where the offending frame
/// or byte begins, so a report can point at it.
public struct WebSocketProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The close code the connection fails with: 1002, 1007 or 1009 (§7.4.1).
    public var closeCode: WebSocketCloseCode
    public var reason: String
    public var offset: Int

    public init(_ closeCode: WebSocketCloseCode, _ reason: String, offset: Int) {
        self.closeCode = closeCode
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "\(reason) at stream offset \(offset) (close \(closeCode.rawValue))" }
}

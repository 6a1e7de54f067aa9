import JSON

/// A preset packet (Engine.IO, Socket.IO, graphql-transport-ws) that a peer sent and that does not parse: the
/// engine reports it as that preset's protocol error code. The message never quotes the packet (it may hold
/// secrets); `offset` is the byte offset of the problem in the decoded text, when there is one place to name.
package struct FlowProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    package var offset: Int?
    package var message: String

    package init(offset: Int? = nil, message: String) {
        self.offset = offset
        self.message = message
    }

    package var description: String { offset.map { "at byte \($0): \(message)" } ?? message }
}

/// Limits every preset decoder applies before it looks at a peer's packet.
package enum PresetLimits {
    /// The largest packet text a decoder reads (1 MiB of UTF-8); larger is an error, never buffered further.
    package static let maximumPacketBytes = 1 << 20
    /// JSON nesting beyond this is refused by the JSON parser rather than recursed into.
    package static let maximumJSONDepth = 64
}

extension FlowProtocolError {
    /// The error for text over ``PresetLimits/maximumPacketBytes``, nil when it fits.
    static func oversized(_ text: String, what: String) -> FlowProtocolError? {
        let count = text.utf8.count
        guard count > PresetLimits.maximumPacketBytes else { return nil }
        return FlowProtocolError(
            message: "\(what) of \(count) bytes is over the limit of \(PresetLimits.maximumPacketBytes)")
    }
}

/// Parses `bytes` as one JSON document at `offset` of the packet, with the presets' depth limit; errors carry the
/// packet's byte offset and the parser's reason (never the text).
func parsePresetJSON(_ bytes: ArraySlice<UInt8>, offset: Int, what: String) -> Result<JSONValue, FlowProtocolError> {
    do {
        return .success(try JSONValue(parsing: bytes, maximumDepth: PresetLimits.maximumJSONDepth))
    } catch {
        return .failure(
            FlowProtocolError(offset: offset + error.offset, message: "\(what) is not JSON: \(error.reason)"))
    }
}

// Frame parser: bytes → frames, fed whole and in pieces. Properties: the split does not change the
// frames or the error; every frame parsed re-encodes (masked as its role expects) to bytes that parse
// back to the same frame.
import FuzzSupport
import WebSocket

func parseAll(_ pieces: [ArraySlice<UInt8>], role: WebSocketFrameParser.Role, rsv1: Bool, limit: Int)
    -> (frames: [WebSocketFrame], error: WebSocketProtocolError?) {
    var parser = WebSocketFrameParser(role: role, maximumFrameSize: limit, isRSV1Allowed: rsv1)
    var frames: [WebSocketFrame] = []
    for piece in pieces {
        parser.append(piece)
        do {
            while let frame = try parser.nextFrame() { frames.append(frame) }
        } catch {
            return (frames, error)
        }
    }
    return (frames, nil)
}

fuzzMain { data in
    var input = FuzzInput(data)
    let options = input.byte()
    let step = input.byte()
    let role: WebSocketFrameParser.Role = options & 1 == 0 ? .client : .server
    let rsv1 = options & 2 != 0
    let limit = options & 4 != 0 ? 1 << 16 : 125
    let whole = parseAll(input.pieces(step: 0), role: role, rsv1: rsv1, limit: limit)
    let split = parseAll(input.pieces(step: step), role: role, rsv1: rsv1, limit: limit)
    fuzzCheck(whole.frames == split.frames, "pieces of \(step) bytes parse to other frames")
    fuzzCheck((whole.error == nil) == (split.error == nil), "pieces of \(step) bytes change the error: \(String(describing: whole.error)) vs \(String(describing: split.error))")
    for frame in whole.frames {
        // A server reads masked (client) frames; a client reads unmasked ones.
        let wire = frame.encoded(maskingKey: role == .server ? 0x3712_5A0F : nil)
        let again = parseAll([wire[...]], role: role, rsv1: rsv1, limit: limit)
        fuzzCheck(again.error == nil && again.frames == [frame], "frame \(frame.opcode) of \(frame.payload.count) bytes does not round-trip")
    }
}

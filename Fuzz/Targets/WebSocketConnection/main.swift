// Connection state machine: peer bytes → events, with or without permessage-deflate (with and
// without context takeover, both roles), answering every message with an echo so the deflater runs too.
// Properties: events stop after a failure or a completed close; the state only moves forward.
import FuzzSupport
import WebSocket

/// Masking keys from a fixed seed: the same input always produces the same output.
struct FixedRandom: RandomNumberGenerator, Sendable {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func rank(_ state: WebSocketConnection.State) -> Int {
    switch state {
    case .open: 0
    case .closeSent: 1
    case .closed: 2
    }
}

fuzzMain { data in
    var input = FuzzInput(data)
    let options = input.byte()
    let step = input.byte()
    var compression: PerMessageDeflateParameters?
    if options & 1 != 0 {
        var parameters = PerMessageDeflateParameters()
        parameters.serverNoContextTakeover = options & 2 != 0
        parameters.clientNoContextTakeover = options & 4 != 0
        parameters.serverMaxWindowBits = 9 + Int(options >> 5) % 7
        parameters.clientMaxWindowBits = 9 + Int(options >> 5) % 7
        compression = parameters
    }
    let configuration = WebSocketConnection.Configuration(
        maximumFrameSize: 1 << 16, maximumMessageSize: 1 << 18, maximumFragmentCount: 64, compression: compression,
        outgoingFragmentSize: options & 16 != 0 ? 7 : nil)
    var connection = WebSocketConnection(role: options & 8 == 0 ? .client : .server, configuration: configuration,
                                         random: FixedRandom())
    var ended = false
    var lastRank = 0
    for piece in input.pieces(step: step) {
        connection.receive(piece)
        while let event = connection.nextEvent() {
            fuzzCheck(!ended, "an event after the connection failed or closed: \(event)")
            switch event {
            case .message(let message):
                if connection.state == .open { connection.send(message) }
            case .closeReceived, .failed:
                ended = true
            case .ping, .pong:
                break
            }
            let now = rank(connection.state)
            fuzzCheck(now >= lastRank, "state went back to \(connection.state)")
            lastRank = now
        }
        _ = connection.takeOutput()
    }
    if connection.state == .open { connection.close(code: .normalClosure, reason: "fuzz") }
    connection.transportClosed()
    _ = connection.takeOutput()
}

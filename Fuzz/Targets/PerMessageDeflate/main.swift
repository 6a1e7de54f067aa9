// permessage-deflate (RFC 7692): the input is a run of messages, each inflated as peer data (any bytes:
// corrupt streams must throw, never trap), then compressed and inflated back with the same context
// rules. Property: deflate → inflate is the identity, message after message, with context takeover
// (one stream across messages) and without (a reset per message).
import FuzzSupport
import WebSocket

fuzzMain { data in
    var input = FuzzInput(data)
    let options = input.byte()
    let isContextReset = options & 1 != 0
    let windowBits = 9 + Int((options >> 1) % 7)
    let peer = MessageInflater(isContextReset: isContextReset, maximumMessageSize: 1 << 20)
    let deflater = MessageDeflater(windowBits: windowBits, isContextReset: isContextReset, level: Int32(options >> 4) % 10)
    let inflater = MessageInflater(isContextReset: isContextReset, maximumMessageSize: 1 << 20)
    var isPeerBroken = false
    while !input.bytes.isEmpty {
        let length = Int(input.byte())
        let message = input.take(length)
        if !isPeerBroken {
            var output: [UInt8] = []
            do {
                // Split the peer's message in two fragments at its middle.
                let middle = message.count / 2
                try peer.inflate(Array(message[..<middle]), isFinal: false, into: &output)
                try peer.inflate(Array(message[middle...]), isFinal: true, into: &output)
            } catch {
                isPeerBroken = true  // a failed message fails the connection: no later message is read
            }
        }
        let compressed = message.withUnsafeBytes { deflater.compress($0) }
        var restored: [UInt8] = []
        do {
            try inflater.inflate(compressed, isFinal: true, into: &restored)
        } catch {
            fuzzCheck(false, "our own deflate output of \(message.count) bytes does not inflate: \(error)")
        }
        fuzzCheck(restored == message, "deflate → inflate changed a \(message.count)-byte message \(hex(message)): "
                  + "compressed \(hex(compressed)), inflated \(hex(restored))")
    }
}

// Opening handshakes (RFC 6455 §4, RFC 7692 §5): the first byte picks the side. Client: the input is
// the server's response head, validated against a fixed request (key bytes 0...15, so its accept value
// sits in the dictionary). Server: the input is a client's request head, answered. Property: a request
// the server accepts yields a 101 whose Sec-WebSocket-Accept matches the request's key, and whose
// negotiated deflate parameters the offering client accepts.
import FuzzSupport
import HTTP1
import WebSocket

let keyBytes: [UInt8] = Array(0..<16)

fuzzMain { data in
    var input = FuzzInput(data)
    let options = input.byte()
    var parser = HTTPHeadParser(maximumHeadSize: 4096, maximumHeaderCount: 64)
    let bytes = Array(input.bytes)
    if options & 1 == 0 {
        guard let (response, _) = try? parser.parseResponse(bytes) else { return }  // an unparseable head never reaches validation
        var offer: PerMessageDeflateOffer?
        if options & 2 != 0 {
            offer = PerMessageDeflateOffer()
            offer?.requestServerNoContextTakeover = options & 4 != 0
            offer?.requestClientNoContextTakeover = options & 8 != 0
            offer?.serverMaxWindowBits = options & 16 != 0 ? 10 : nil
            offer?.acceptsClientMaxWindowBits = options & 32 != 0
        }
        let client = WebSocketClientHandshake(host: "127.0.0.1", port: 9001, isSecure: options & 64 != 0, target: "/chat?x=1",
                                              subprotocols: options & 128 != 0 ? ["chat", "superchat"] : [],
                                              compression: offer, keyBytes: keyBytes)
        _ = client.request.serialized()
        if let result = try? client.validate(response) {  // a refused response is the expected outcome for most inputs
            if let subprotocol = result.subprotocol {
                fuzzCheck(client.subprotocols.contains(subprotocol), "accepted subprotocol \(subprotocol) that was not offered")
            }
            if result.compression != nil { fuzzCheck(offer != nil, "accepted deflate that was not offered") }
        }
    } else {
        guard let (request, _) = try? parser.parseRequest(bytes) else { return }  // as above
        switch WebSocketServerHandshake.respond(to: request, subprotocols: ["chat"], isCompressionEnabled: options & 2 != 0) {
        case .accept(let response, _, let compression):
            let key = request.headers["Sec-WebSocket-Key"] ?? ""
            fuzzCheck(response.headers["Sec-WebSocket-Accept"] == webSocketAcceptValue(forKey: key), "101 with a wrong accept value")
            var reparser = HTTPHeadParser(maximumHeadSize: 1 << 16, maximumHeaderCount: 256)
            let reparsed = try? reparser.parseResponse(response.serialized())  // nil is a finding: checked next
            fuzzCheck(reparsed?.head == response, "our 101 does not parse back to itself")
            if let compression {
                fuzzCheck((9...15).contains(compression.serverMaxWindowBits) && (9...15).contains(compression.clientMaxWindowBits),
                          "negotiated window bits out of 9...15: \(compression)")
            }
        case .reject(let response, _):
            fuzzCheck(response.status >= 400, "a rejection with status \(response.status)")
        }
    }
}

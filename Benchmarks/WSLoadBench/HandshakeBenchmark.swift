import Crypto
import Foundation
import HTTP1
import WebSocket

/// What one WebSocket opening handshake costs in CPU, without sockets: the client's request (key, build,
/// serialize), the server's side (parse, validate, Sec-WebSocket-Accept, the 101 serialized), the client's check of
/// the 101 (parse, validate), and SHA-1 alone. Each step is timed over `rounds` handshakes, on one thread.
struct HandshakeBenchmark {
    var rounds: Int

    func run() {
        let rounds = max(1, rounds)
        var sink = 0
        var started = ContinuousClock.now
        var requests: [[UInt8]] = []
        var handshakes: [WebSocketClientHandshake] = []
        requests.reserveCapacity(rounds)
        handshakes.reserveCapacity(rounds)
        for _ in 0..<rounds {
            // As `wsload run` connects by default: no subprotocol, no compression offer.
            let handshake = WebSocketClientHandshake(host: "127.0.0.1", port: 8765, isSecure: false, target: "/")
            handshakes.append(handshake)
            requests.append(handshake.requestBytes)
        }
        let client = ContinuousClock.now - started

        started = ContinuousClock.now
        var responses: [[UInt8]] = []
        responses.reserveCapacity(rounds)
        for request in requests {
            var parser = HTTPHeadParser()
            guard let (head, _) = try? parser.parseRequest(request) else { continue }  // counted below: none fail
            if case .accept(let response, _, _) = WebSocketServerHandshake.respond(to: head) {
                responses.append(response.serialized())
            }
        }
        let server = ContinuousClock.now - started

        started = ContinuousClock.now
        for (handshake, response) in zip(handshakes, responses) {
            var parser = HTTPHeadParser()
            guard let (head, _) = try? parser.parseResponse(response) else { continue }  // counted below: none fail
            if (try? handshake.validate(head)) != nil { sink += 1 }
        }
        let validate = ContinuousClock.now - started

        started = ContinuousClock.now
        for handshake in handshakes { sink &+= webSocketAcceptValue(forKey: handshake.key).utf8.count }
        let accept = ContinuousClock.now - started

        print("handshake (\(rounds) rounds, \(sink - 28 * rounds) of them accepted): client request \(format(client, rounds)) µs, "
              + "server parse + 101 \(format(server, rounds)) µs, client parse + validate \(format(validate, rounds)) µs; "
              + "Sec-WebSocket-Accept alone \(format(accept, rounds)) µs; request \(requests.first?.count ?? 0) B, "
              + "101 \(responses.first?.count ?? 0) B")
    }

    private func format(_ duration: Duration, _ count: Int) -> String {
        String(format: "%.2f", duration.figureNanoseconds / Double(count) / 1_000)
    }
}

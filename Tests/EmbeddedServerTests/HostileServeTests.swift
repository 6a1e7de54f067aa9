import Foundation
import Runtime
import TestSupport
import Testing

/// Clients that trap, smuggle, slowloris and flood a child `wsload serve`: each case ends with the server alive,
/// the offender refused (a clear status) or timed out (closed, and counted), and a following request served.
@Suite("Hostile clients against wsload serve (child process)", .timeLimit(.minutes(4)))
struct HostileServeTests {
    @Test("query, path and header shapes never trap: empty pieces, ?=, % at the end, bad escapes, huge numbers, ranges")
    func requestShapes() async throws {
        let server = try await ServerChild.serve([])
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let targets = ["/?=", "/?", "/?&&=&", "/?=x", "/bytes/8?=", "/bytes/8?&", "/bytes/8?seed=%", "/bytes/8?seed=%zz", "/bytes/8?%",
                           "/bytes/8?seed=99999999999999999999999", "/bytes/99999999999999999999999", "/bytes/-1", "/bytes/", "/bytes/+8",
                           "/bytes/8?throttle=0", "/bytes/8?drop_after=-5", "/bytes/8?fail_rate=nan", "/bytes/8?fail_rate=1e308",
                           "/files/", "/files/..", "/files/%2e%2e%2fetc%2fpasswd", "/upload?=", "/%", "/?%=%"]
            for target in targets {
                let peer = try await RawPeer.connect(port: server.port, on: loop, sending: "GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                try await peer.read()
                peer.close()
                #expect(peer.statuses.count == 1 && peer.statuses.allSatisfy { [200, 400, 404, 405].contains($0) },
                        "GET \(target): \(peer.text.prefix(200))")
                #expect(server.isRunning, "wsload serve died on GET \(target): \(server.process.errors.suffix(500))")
                guard server.isRunning else { return }
            }
            for range in ["bytes=99999999999999999999-", "bytes=-0", "bytes=5-2", "bytes=-99999999999999999999", "bytes=0-,", "bytes=9223372036854775807-"] {
                let peer = try await RawPeer.connect(port: server.port, on: loop, sending: "GET /bytes/8 HTTP/1.1\r\nHost: x\r\nRange: \(range)\r\nConnection: close\r\n\r\n")
                try await peer.read()
                peer.close()
                #expect(peer.statuses.count == 1 && [200, 206, 416].contains(peer.statuses[0]), "Range \(range): \(peer.text.prefix(200))")
            }
            try await expectServes(port: server.port, on: loop)
        }
        _ = try await server.stop()
    }

    @Test("--http-throttle 0 means no cap: a body is sent whole (it trapped on Int64(+inf))")
    func zeroThrottle() async throws {
        let server = try await ServerChild.serve(["--http-throttle", "0"])
        try await withLoopGroup(loopCount: 1) { group in
            let peer = try await RawPeer.connect(port: server.port, on: group.loops[0], sending: "GET /bytes/5000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            try await peer.read()
            peer.close()
            #expect(peer.statuses == [200] && peer.received.count > 5000, "\(peer.text.prefix(200))")
            #expect(server.isRunning)
        }
        _ = try await server.stop()
    }

    @Test("CL.0: a GET's body is read and discarded, never parsed as a second request")
    func contentLengthOnGet() async throws {
        let server = try await ServerChild.serve([])
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let smuggled = "GET /bytes/7 HTTP/1.1\r\nHost: x\r\n\r\n"
            let peer = try await RawPeer.connect(port: server.port, on: loop, sending: "GET /bytes/5 HTTP/1.1\r\nHost: x\r\nContent-Length: \(smuggled.utf8.count)\r\n\r\n\(smuggled)"
                + "GET /bytes/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            try await peer.read()
            peer.close()
            #expect(peer.statuses == [200, 200], "\(peer.text)")
            #expect(peer.text.contains("Content-Length: 5\r\n") && peer.text.contains("Content-Length: 3\r\n"), "\(peer.text)")
            #expect(!peer.text.contains("Content-Length: 7\r\n"), "the body was served as a request: \(peer.text)")
            // A GET body past the discard limit is refused with 413 and the connection closed.
            let large = try await RawPeer.connect(port: server.port, on: loop, sending: "GET /bytes/5 HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n" + String(repeating: "a", count: 1000))
            #expect(try await large.read(), "the connection stays open after a refused body")
            large.close()
            #expect(large.statuses == [413], "\(large.text.prefix(300))")
            try await expectServes(port: server.port, on: loop)
        }
        _ = try await server.stop()
    }

    @Test("smuggling heads are refused with 400 and the connection closed: TE+CL, two Content-Lengths, obs-fold, TE in HTTP/1.0")
    func smugglingHeads() async throws {
        let server = try await ServerChild.serve([])
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let heads = [
                "GET /bytes/5 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
                "GET /bytes/5 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
                "PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                "GET /bytes/5 HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n",
                "POST /upload HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                "GET /bytes/5 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                "GET /bytes/5\tHTTP/1.1 HTTP/1.1\r\nHost: x\r\n\r\n",
            ]
            for head in heads {
                // A smuggled request after the head must not be answered either.
                let peer = try await RawPeer.connect(port: server.port, on: loop, sending: head + "GET /bytes/9 HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await peer.read(), "still open after \(head.debugDescription)")
                peer.close()
                #expect(peer.statuses == [400], "\(head.debugDescription): \(peer.text.prefix(300))")
                #expect(peer.text.contains("Connection: close"), "\(peer.text.prefix(300))")
            }
            try await expectServes(port: server.port, on: loop)
        }
        _ = try await server.stop()
    }

    @Test("pipelined requests are answered in order, each exactly once")
    func pipelined() async throws {
        let server = try await ServerChild.serve([])
        try await withLoopGroup(loopCount: 1) { group in
            let requests = (1...50).map { "GET /bytes/\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined()
            let peer = try await RawPeer.connect(port: server.port, on: group.loops[0], sending: requests + "GET /bytes/0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            try await peer.read()
            peer.close()
            #expect(peer.statuses == Array(repeating: 200, count: 51), "\(peer.statuses)")
            let lengths = peer.text.matches(of: #/Content-Length: (\d+)\r\n/#).compactMap { Int($0.output.1) }
            #expect(lengths == Array(1...50) + [0])
        }
        _ = try await server.stop()
    }

    @Test("slowloris: a keep-alive head trickled byte by byte and a first head trickled are closed by --head-timeout; an idle connection by --idle-timeout")
    func slowHeads() async throws {
        let server = try await ServerChild.serve(["--head-timeout", "1s", "--idle-timeout", "1s"])
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            for isFirst in [true, false] {
                let peer = try await RawPeer.connect(port: server.port, on: loop,
                                                     sending: isFirst ? nil : "GET /bytes/4 HTTP/1.1\r\nHost: x\r\n\r\n")
                if !isFirst { try await peer.read(until: { $0.hasPrefix("HTTP/1.1 200") && $0.contains("\r\n\r\n") }) }
                let start = ContinuousClock.now
                var closed = false
                // Up to 20 s of trickle, a byte every 50 ms: far past the 1 s limit.
                for byte in Array("GET /bytes/4 HTTP/1.1\r\nHost: x\r\n".utf8) + Array(repeating: UInt8(ascii: "X"), count: 400) {
                    // Once the server closed, a write fails (the reset after the first byte past its FIN).
                    do { try await peer.send([byte]) } catch { closed = true; break }
                    if ContinuousClock.now - start > .seconds(20) { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                peer.close()
                #expect(closed, "a trickled \(isFirst ? "first" : "keep-alive") head was not closed within 20 s")
            }
            let idle = try await RawPeer.connect(port: server.port, on: loop, sending: "GET /bytes/4 HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await idle.read(within: .seconds(20)), "an idle keep-alive connection was not closed")
            idle.close()
            #expect(idle.statuses == [200])
            try await expectServes(port: server.port, on: loop)
        }
        let summary = try await server.stop()
        // The trickled first head (the handshake deadline), the trickled keep-alive head, the idle connection.
        #expect(summary.contains("timed out 3"), "\(summary)")
    }

    @Test("a stalled upload body is closed by --body-timeout; a client that never reads by --write-timeout")
    func stalledBodyAndWrite() async throws {
        let server = try await ServerChild.serve(["--body-timeout", "1s", "--write-timeout", "1s"])
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let body = try await RawPeer.connect(port: server.port, on: loop, sending: "PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789")
            #expect(try await body.read(within: .seconds(20)), "a stalled body was not closed")
            body.close()
            let reader = try await RawPeer.connect(port: server.port, on: loop, sending: "GET /bytes/1099511627776 HTTP/1.1\r\nHost: x\r\n\r\n")
            // Read nothing for a while: the server's writes block, then time out.
            try await Task.sleep(for: .seconds(3))
            #expect(try await reader.read(within: .seconds(20), maxBytes: 1 << 30), "a client that stopped reading was not closed")
            reader.close()
            #expect(reader.received.count < 256 * 1024 * 1024, "\(reader.received.count) bytes")
            try await expectServes(port: server.port, on: loop)
        }
        let summary = try await server.stop()
        #expect(summary.contains("timed out 2"), "\(summary)")
    }

    @Test("flood: past --max-connections a client gets 503 with Connection: close, counted; once they go, it is served")
    func connectionCap() async throws {
        let server = try await ServerChild.serve(["--max-connections", "3"])
        var refusedRetries = 0
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            var held: [RawPeer] = []
            for _ in 0..<3 {
                let peer = try await RawPeer.connect(port: server.port, on: loop, sending: "GET /bytes/4 HTTP/1.1\r\nHost: x\r\n\r\n")
                try await peer.read(until: { $0.hasPrefix("HTTP/1.1 200") && $0.contains("\r\n\r\n") })
                held.append(peer)
            }
            for _ in 0..<2 {
                let refused = try await RawPeer.connect(port: server.port, on: loop, sending: "GET /bytes/4 HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await refused.read(), "a connection past the cap stayed open")
                refused.close()
                #expect(refused.statuses == [503] && refused.text.contains("Connection: close"), "\(refused.text.prefix(300))")
            }
            for peer in held { peer.close() }
            // The held connections close on the server's side soon after: retry the normal request until then. A retry
            // that comes before the server has seen them go is refused too, and counted.
            var served = false
            for _ in 0..<200 where !served {
                let peer = try await RawPeer.connect(port: server.port, on: loop, sending: "GET /bytes/16 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                try await peer.read()
                peer.close()
                served = peer.statuses == [200]
                if peer.statuses == [503] { refusedRetries += 1 }
                if !served { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(served)
        }
        let summary = try await server.stop()
        #expect(summary.contains("refused (busy) \(2 + refusedRetries),"), "\(summary), \(refusedRetries) retries refused")
    }
}

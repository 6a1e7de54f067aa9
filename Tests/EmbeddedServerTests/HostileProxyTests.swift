import Foundation
import Runtime
import TestSupport
import Testing

/// Clients that flood, idle and smuggle through a child `wsload proxy`: the proxy stays up, offenders are closed and
/// counted, and a following connection is forwarded.
@Suite("Hostile clients against wsload proxy (child process)", .timeLimit(.minutes(3)))
struct HostileProxyTests {
    @Test("--throttle 0 means no cap: bytes pass (it trapped on Int64(+inf))")
    func zeroThrottle() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let echo = try await EchoServer.start(on: group)
            let proxy = try await ServerChild.proxy(upstream: echo.address.port, ["--throttle", "0"])
            let peer = try await RawPeer.connect(port: proxy.port, on: group.loops[0], sending: "hello through the proxy")
            try await peer.read(within: .seconds(20), until: { $0 == "hello through the proxy" })
            peer.close()
            #expect(peer.text == "hello through the proxy")
            #expect(proxy.isRunning, "\(proxy.process.errors.suffix(500))")
            _ = try await proxy.stop()
            await echo.stop()
        }
    }

    @Test("flood: past --max-connections a client is closed at once, before any upstream connect, and counted")
    func connectionCap() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let echo = try await EchoServer.start(on: group)
            let proxy = try await ServerChild.proxy(upstream: echo.address.port, ["--max-connections", "2", "--idle-timeout", "0s"])
            var held: [RawPeer] = []
            for index in 0..<2 {
                let peer = try await RawPeer.connect(port: proxy.port, on: loop, sending: "held \(index)")
                try await peer.read(until: { $0 == "held \(index)" })
                held.append(peer)
            }
            let refused = try await RawPeer.connect(port: proxy.port, on: loop)
            // Writes may race the close; the close is what counts.
            try? await refused.send("one too many")
            #expect(try await refused.read(within: .seconds(20)), "a connection past the cap stayed open")
            refused.close()
            #expect(refused.received.isEmpty, "a connection past the cap was forwarded")
            for peer in held { peer.close() }
            // The held pairs end on the proxy's side soon after: retry until a fresh one is forwarded.
            var forwarded = false
            for attempt in 0..<100 where !forwarded {
                let fresh = try await RawPeer.connect(port: proxy.port, on: loop, sending: "after \(attempt)")
                try await fresh.read(until: { $0 == "after \(attempt)" })
                fresh.close()
                forwarded = fresh.text == "after \(attempt)"
                if !forwarded { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(forwarded)
            let summary = try await proxy.stop()
            #expect(summary.contains("refused (busy) "), "\(summary)")
            #expect(!summary.contains("refused (busy) 0,"), "\(summary)")
            await echo.stop()
        }
    }

    @Test("idle: --idle-timeout closes a forwarded connection that moves no byte either way, and counts it")
    func idleTimeout() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let echo = try await EchoServer.start(on: group)
            let proxy = try await ServerChild.proxy(upstream: echo.address.port, ["--idle-timeout", "1s"])
            let peer = try await RawPeer.connect(port: proxy.port, on: loop, sending: "hello")
            #expect(try await peer.read(within: .seconds(30)), "an idle forwarded connection was not closed")
            peer.close()
            #expect(peer.text == "hello")
            let summary = try await proxy.stop()
            #expect(summary.contains("timed out ") && !summary.contains("timed out 0"), "\(summary)")
            await echo.stop()
        }
    }

    @Test("slowloris and CL.0 through the proxy to wsload serve: the server behind it closes the trickle and reads the body")
    func throughToServe() async throws {
        let server = try await ServerChild.serve(["--head-timeout", "1s"])
        let proxy = try await ServerChild.proxy(upstream: server.port, [])
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let trickle = try await RawPeer.connect(port: proxy.port, on: loop)
            var closed = false
            let start = ContinuousClock.now
            for byte in Array("GET /bytes/4 HTTP/1.1\r\nHost: x\r\n".utf8) + Array(repeating: UInt8(ascii: "X"), count: 400) {
                // Once the proxy passed the server's close on, a write fails.
                do { try await trickle.send([byte]) } catch { closed = true; break }
                if ContinuousClock.now - start > .seconds(20) { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            trickle.close()
            #expect(closed, "a trickled head through the proxy was not closed")
            let hidden = "GET /bytes/7 HTTP/1.1\r\nHost: x\r\n\r\n"
            let smuggle = try await RawPeer.connect(port: proxy.port, on: loop, sending: "GET /bytes/5 HTTP/1.1\r\nHost: x\r\nContent-Length: \(hidden.utf8.count)\r\n\r\n\(hidden)"
                + "GET /bytes/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            try await smuggle.read()
            smuggle.close()
            #expect(smuggle.statuses == [200, 200] && !smuggle.text.contains("Content-Length: 7\r\n"), "\(smuggle.text)")
            try await expectServes(port: proxy.port, on: loop)
        }
        _ = try await proxy.stop()
        _ = try await server.stop()
    }
}

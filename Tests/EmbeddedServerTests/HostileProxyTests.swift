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
            let peer = try await RawPeer.connect(port: proxy.port, on: group.loops[0])
            try await peer.send("hello through the proxy")
            try await peer.read(within: .seconds(20), until: { $0 == "hello through the proxy" })
            peer.close()
            #expect(peer.text == "hello through the proxy")
            #expect(proxy.isRunning, "\(proxy.process.errors.suffix(500))")
            _ = try await proxy.stop()
            await echo.stop()
        }
    }

    @Test("flood and idle: past --max-connections a client is closed at once (counted); --idle-timeout closes a silent one")
    func capAndIdle() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let echo = try await EchoServer.start(on: group)
            let proxy = try await ServerChild.proxy(upstream: echo.address.port, ["--max-connections", "2", "--idle-timeout", "4s"])
            var held: [RawPeer] = []
            for index in 0..<2 {
                let peer = try await RawPeer.connect(port: proxy.port, on: loop)
                try await peer.send("held \(index)")
                try await peer.read(until: { $0 == "held \(index)" })
                held.append(peer)
            }
            let refused = try await RawPeer.connect(port: proxy.port, on: loop)
            // Writes may race the close; the close is what counts.
            try? await refused.send("one too many")
            #expect(try await refused.read(within: .seconds(1.5)), "a connection past the cap stayed open")
            refused.close()
            #expect(refused.received.isEmpty)
            // The held ones go silent: the idle timeout closes them.
            for peer in held {
                #expect(try await peer.read(within: .seconds(20)), "an idle forwarded connection was not closed")
                peer.close()
            }
            let fresh = try await RawPeer.connect(port: proxy.port, on: loop)
            try await fresh.send("after")
            try await fresh.read(until: { $0 == "after" })
            fresh.close()
            #expect(fresh.text == "after")
            let summary = try await proxy.stop()
            #expect(summary.contains("refused (busy) 1,") && summary.contains("timed out 2"), "\(summary)")
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
            let smuggle = try await RawPeer.connect(port: proxy.port, on: loop)
            let hidden = "GET /bytes/7 HTTP/1.1\r\nHost: x\r\n\r\n"
            try await smuggle.send("GET /bytes/5 HTTP/1.1\r\nHost: x\r\nContent-Length: \(hidden.utf8.count)\r\n\r\n\(hidden)"
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

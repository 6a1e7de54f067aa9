import HTTP1
import Runtime
import Testing
import TestSupport
@testable import LiveView

/// Starts a live server on loopback with `limits` (a `/hello` page, `/events` from `stream`, 404 elsewhere), runs
/// `body` with a client loop, then stops the server and checks it closed everything it opened.
func withLiveServer<T: Sendable>(
    limits: LiveServer.Limits = .standard, stream: EventStream = EventStream(backlogLimit: 10),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable (LiveServer, EventLoop) async throws -> T
) async throws -> T {
    let server = try await LiveServer.start(at: LiveAddress(host: "127.0.0.1", port: 0), name: "--test", limits: limits) { request in
        switch request.path {
        case "/hello":
            .content(status: 200, contentType: "text/plain; charset=utf-8",
                     body: Array("hello \(request.method) \(request.query ?? "-") \(request.accept ?? "-")\n".utf8),
                     headers: [("X-Test", "yes")])
        case "/events":
            .events(stream)
        default:
            .content(status: 404, contentType: "text/plain; charset=utf-8", body: Array("not here\n".utf8))
        }
    }
    do {
        let result = try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            return try await onLoop(loop) { try await body(server, loop) }
        }
        await server.stop()
        #expect(server.statistics.leakedHandles.load(ordering: .relaxed) == 0, "handles open at stop", sourceLocation: sourceLocation)
        return result
    } catch {
        await server.stop()
        throw error
    }
}

@Suite struct LiveServerTests {
    @Test("GET answers with the handler's body and the standard headers; HEAD the same head without a body, on one kept-alive connection")
    func getAndHead() async throws {
        try await withLiveServer { server, loop in
            #expect(server.boundAddress.host == "127.0.0.1" && server.boundAddress.port != 0)
            var client = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { client.close() }
            try await client.request("/hello?x=1", headers: ["Accept: text/plain"])
            let (head, body) = try await client.readResponse()
            #expect(head.status == 200)
            #expect(body == "hello GET x=1 text/plain\n")
            #expect(head.headers["Content-Length"] == String(body.utf8.count))
            #expect(head.headers["Content-Type"] == "text/plain; charset=utf-8")
            #expect(head.headers["Cache-Control"] == "no-store")
            #expect(head.headers["X-Content-Type-Options"] == "nosniff")
            #expect(head.headers["X-Test"] == "yes")
            #expect(head.headers["Date"].flatMap(HTTPDate.init) != nil)
            #expect(head.headers["Connection"] == nil)

            try await client.request("/hello", method: "HEAD")
            let (headOnly, empty) = try await client.readResponse(isHead: true)
            #expect(headOnly.status == 200 && empty.isEmpty)
            #expect(headOnly.headers["Content-Length"] == String("hello HEAD - -\n".utf8.count))

            try await client.request("/elsewhere")
            let (missing, missingBody) = try await client.readResponse()
            #expect(missing.status == 404 && missingBody == "not here\n")
            #expect(server.statistics.accepted.load(ordering: .relaxed) == 1, "one connection carried all three")
        }
    }

    @Test("pipelined requests are answered in order; Connection: close ends the connection after its answer")
    func pipelining() async throws {
        try await withLiveServer { server, loop in
            var client = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { client.close() }
            try await client.send("GET /hello?1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /hello?2 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                + "GET /hello?3 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            for index in 1...3 {
                let (head, body) = try await client.readResponse()
                #expect(head.status == 200 && body == "hello GET \(index) -\n")
                #expect(head.headers["Connection"] == (index == 3 ? "close" : nil))
            }
            #expect(await client.readToEnd() && client.buffer.isEmpty)
        }
    }

    @Test("methods other than GET and HEAD get 405 with Allow and the connection closes")
    func methodNotAllowed() async throws {
        try await withLiveServer { server, loop in
            var client = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { client.close() }
            try await client.send("POST /hello HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello")
            let (head, body) = try await client.readResponse()
            #expect(head.status == 405 && head.headers["Allow"] == "GET, HEAD" && head.headers["Connection"] == "close")
            #expect(body == "only GET and HEAD are served\n")
            #expect(await client.readToEnd() && client.buffer.isEmpty)
        }
    }

    @Test("bad requests get 400 (garbage, a body, a target neither a path nor http://, two Hosts), a foreign Host 421, each closed")
    func badRequests() async throws {
        try await withLiveServer { server, loop in
            let cases: [(String, Int)] = [
                ("HELLO\r\n\r\n", 400),
                ("GET /hello HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc", 400),
                ("GET /hello HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
                ("GET https://127.0.0.1/hello HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
                ("GET * HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
                ("GET http://user@127.0.0.1/hello HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
                ("GET http:///hello HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
                // RFC 9112 §3.2: two Host field lines are a 400, whether they agree or not.
                ("GET /hello HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n", 400),
                ("GET /hello HTTP/1.1\r\nHost: localhost\r\nHost: attacker.example\r\n\r\n", 400),
                // An absolute-form target's authority replaces Host for the foreign-host check (RFC 9112 §3.2.2).
                ("GET http://attacker.example:9464/hello HTTP/1.1\r\nHost: localhost\r\n\r\n", 421),
                ("GET /hello HTTP/1.1\nHost: localhost\n\n", 400),
                ("GET /hello HTTP/1.1\r\nHost: attacker.example:9464\r\n\r\n", 421),
            ]
            for (request, status) in cases {
                var client = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
                defer { client.close() }
                try await client.send(request)
                let (head, _) = try await client.readResponse()
                #expect(head.status == status, "\(request.debugDescription)")
                #expect(head.headers["Connection"] == "close")
                #expect(await client.readToEnd())
            }
            // Loopback names are fine, with or without the port.
            for host in ["localhost", "127.0.0.1:1", "LOCALHOST:80", "[::1]:9"] {
                var client = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
                defer { client.close() }
                try await client.send("GET /hello HTTP/1.1\r\nHost: \(host)\r\n\r\n")
                #expect(try await client.readResponse().head.status == 200, "Host: \(host)")
            }
        }
    }

    @Test("an absolute-form target (http://HOST:PORT/path) is accepted: routed by its path, its authority standing for Host")
    func absoluteFormTarget() async throws {
        try await withLiveServer { server, loop in
            let port = server.boundAddress.port
            let cases: [(String, String)] = [
                ("GET http://127.0.0.1:\(port)/hello?x=1 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n", "hello GET x=1 -\n"),
                // The authority wins over a foreign Host (which RFC 9112 §3.2.2 says to ignore).
                ("GET HTTP://localhost:\(port)/hello HTTP/1.1\r\nHost: attacker.example\r\n\r\n", "hello GET - -\n"),
                ("GET http://[::1]:\(port)?q HTTP/1.1\r\nHost: localhost\r\n\r\n", "not here\n"),
            ]
            for (request, body) in cases {
                var client = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
                defer { client.close() }
                try await client.send(request)
                let response = try await client.readResponse()
                #expect(response.body == body, "\(request.debugDescription): \(response.head.status)")
            }
        }
    }

    @Test("requestTarget: origin form as is, absolute form split into path and authority, every other form nil")
    func requestTargetForms() {
        func parts(_ target: String) -> [String?]? { LiveHTTP.requestTarget(target).map { [$0.path, $0.authority] } }
        #expect(parts("/metrics?x") == ["/metrics?x", nil])
        #expect(parts("http://127.0.0.1:9464/metrics") == ["/metrics", "127.0.0.1:9464"])
        #expect(parts("http://127.0.0.1:9464") == ["/", "127.0.0.1:9464"])
        #expect(parts("http://[::1]:80?a=b") == ["/?a=b", "[::1]:80"])
        for bad in ["*", "127.0.0.1:80", "https://127.0.0.1/", "http://", "http:///x", "http://:80/x", "http://u@h/x",
                    "http://h/x#f", "http://h#f", "ftp://h/"] {
            #expect(LiveHTTP.requestTarget(bad) == nil, "\(bad)")
        }
    }

    @Test("a request head over the cap gets 431 and the connection closes, however the rest of it arrives")
    func headTooLarge() async throws {
        var limits = LiveServer.Limits()
        limits.maximumHeadSize = 1024
        try await withLiveServer(limits: limits) { server, loop in
            var client = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { client.close() }
            try await client.send("GET /hello HTTP/1.1\r\nHost: localhost\r\nX-Filler: " + String(repeating: "a", count: 1100) + "\r\n\r\n")
            let (head, body) = try await client.readResponse()
            #expect(head.status == 431 && head.headers["Connection"] == "close")
            #expect(body == "the request head is larger than 1024 bytes\n")
            #expect(await client.readToEnd())

            // Just under the cap is served.
            var fits = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { fits.close() }
            let prefix = "GET /hello HTTP/1.1\r\nHost: localhost\r\nX-Filler: "
            try await fits.send(prefix + String(repeating: "a", count: 1024 - prefix.utf8.count - 4) + "\r\n\r\n")
            #expect(try await fits.readResponse().head.status == 200)
        }
    }

    @Test("a client that never finishes its head is closed after the head timeout, as is an idle kept-alive one")
    func headTimeout() async throws {
        var limits = LiveServer.Limits()
        limits.headTimeout = .seconds(2)  // long enough for a busy CPU to connect, ask and be answered in it
        try await withLiveServer(limits: limits) { server, loop in
            var slow = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { slow.close() }
            try await slow.send("GET /hello HTTP/1.1\r\nHost: loc")
            #expect(await slow.readToEnd(), "the server closed the slow client")
            #expect(slow.buffer.isEmpty)

            var idle = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { idle.close() }
            try await idle.request("/hello")
            #expect(try await idle.readResponse().head.status == 200)
            #expect(await idle.readToEnd() && idle.buffer.isEmpty, "the idle kept-alive client was closed")
            try await waitUntil { server.statistics.timedOut.load(ordering: .relaxed) == 2 }
        }
    }

    @Test("past the client cap a connection gets 503 and is closed; once a client leaves, a new one is served")
    func clientCap() async throws {
        var limits = LiveServer.Limits()
        limits.maximumClients = 2
        try await withLiveServer(limits: limits) { server, loop in
            var first = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            let second = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { second.close() }
            try await waitUntil { server.statistics.open.load(ordering: .relaxed) == 2 }
            var third = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { third.close() }
            try await third.request("/hello")
            let (head, body) = try await third.readResponse()
            #expect(head.status == 503 && head.headers["Connection"] == "close" && body == "busy: 2 clients are connected\n")
            #expect(await third.readToEnd())
            #expect(server.statistics.refused.load(ordering: .relaxed) == 1)

            try await first.request("/hello")
            #expect(try await first.readResponse().head.status == 200, "the clients within the cap are served")
            first.close()
            try await waitUntil { server.statistics.open.load(ordering: .relaxed) == 1 }
            var fourth = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { fourth.close() }
            try await fourth.request("/hello")
            #expect(try await fourth.readResponse().head.status == 200)
        }
    }

    @Test("stop() closes idle and streaming clients, returns, and a second stop() is harmless")
    func stopClosesEverything() async throws {
        let stream = EventStream(backlogLimit: 4)
        let server = try await LiveServer.start(at: LiveAddress(host: "127.0.0.1", port: 0), name: "--test") { _ in .events(stream) }
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            try await onLoop(loop) {
                var idle = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
                defer { idle.close() }
                var streaming = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
                defer { streaming.close() }
                try await streaming.request("/events")
                try await waitUntil { stream.clientCount == 1 }
                stream.publish(event: "frame", data: "{}", keep: false)
                #expect(await streaming.read(until: "data: {}\n\n"))
                try await waitUntil { server.statistics.open.load(ordering: .relaxed) == 2 }
                await server.stop()
                #expect(await idle.readToEnd(), "the idle client was closed")
                #expect(await streaming.readToEnd(), "the streaming client was closed")
                #expect(stream.clientCount == 0)
            }
        }
        await server.stop()
        #expect(server.statistics.leakedHandles.load(ordering: .relaxed) == 0)
        #expect(server.statistics.open.load(ordering: .relaxed) == 0)
    }

    @Test("an address in use fails the start with the option's name and the address")
    func bindFailure() async throws {
        let first = try await LiveServer.start(at: LiveAddress(host: "127.0.0.1", port: 0), name: "--metrics") { _ in
            .content(status: 204, contentType: "text/plain", body: [])
        }
        do {
            let second = try await LiveServer.start(at: first.boundAddress, name: "--metrics") { _ in
                .content(status: 204, contentType: "text/plain", body: [])
            }
            await second.stop()
            Issue.record("a second server bound \(first.boundAddress)")
        } catch {
            #expect(error.description.hasPrefix("--metrics: cannot listen on \(first.boundAddress): address_in_use"), "\(error)")
        }
        await first.stop()
    }
}

import HTTP1
import Runtime
import Testing

/// What a scripted server does with the first request head on one connection: it writes to `stream` (and may
/// wait) and returns; the connection is then closed (a TLS one without close_notify).
public typealias HTTPServerScript = @Sendable (_ request: HTTPRequestHead, _ stream: any ByteStream, _ loop: EventLoop) async throws -> Void

/// A loopback server on `loop` (TCP, or TLS with `tls`) that reads each connection's first request head and runs
/// `script` for it; every connection lives at most 20 s, so a test that expects the client to give up cannot hang.
/// The server stops when `body` returns.
public func withScriptedHTTPServer<T: Sendable>(
    on loop: EventLoop, tls: TLSContext? = nil, script: @escaping HTTPServerScript,
    _ body: @Sendable (_ port: Int) async throws -> T
) async throws -> T {
    let listener = try await loop.submit { try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop) }
    let server = Task(executorPreference: loop.taskExecutor) {
        await withDiscardingTaskGroup { connections in
            while let tcp = try? await listener.accept() {  // nil once the listener is closed: the server ends
                connections.addTask(executorPreference: loop.taskExecutor) {
                    let lifetime = ScheduledTimer(on: loop, after: .seconds(20)) { tcp.close() }
                    defer {
                        lifetime.cancel()
                        tcp.close()
                    }
                    var stream: any ByteStream = tcp
                    if let tls {
                        // A client that fails the handshake just loses its connection.
                        guard let secure = try? await TLSConnection.accept(over: tcp, context: tls) else { return }
                        stream = secure
                    }
                    var parser = HTTPHeadParser()
                    var buffer: [UInt8] = []
                    // A read that fails (the client went away) ends the connection; that is all it means here.
                    while let count = try? await stream.read(into: &buffer, maxBytes: 64 * 1024), count > 0 {
                        guard let (request, _) = try? parser.parseRequest(buffer) else { continue }  // not a whole head yet
                        // A script that fails (the client went away) ends its connection; that is all it means here.
                        try? await script(request, stream, loop)
                        return
                    }
                }
            }
        }
    }
    defer {
        listener.close()
        server.cancel()
    }
    let result = try await body(listener.localAddress.port)
    server.cancel()
    listener.close()
    await server.value
    return result
}

/// A scripted server on a loop of its own that writes `response` to every request, then waits `linger` and closes.
public func withCannedHTTPServer<T: Sendable>(
    tls: TLSContext? = nil, response: [UInt8], linger: Duration = .zero, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @Sendable (_ port: Int) async throws -> T
) async throws -> T {
    try await withLoopGroup(loopCount: 1, sourceLocation: sourceLocation) { group in
        try await withScriptedHTTPServer(on: group.loops[0], tls: tls, script: { _, stream, loop in
            try await stream.write(response)
            try await loop.sleep(for: linger)  // cut short when the test ends; either way the connection closes
        }, body)
    }
}

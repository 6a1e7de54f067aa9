import Foundation
import Runtime
import TestSupport
import Testing

/// A raw TCP client for the hostile-client tests: exactly what it sends goes on the wire. Every read has a
/// deadline (a timer closes the socket when it passes), so a server that never answers fails a test, never hangs it.
final class RawPeer: @unchecked Sendable {
    let connection: TCPConnection
    let loop: EventLoop
    /// Everything received so far.
    private(set) var received: [UInt8] = []
    private(set) var isClosedByPeer = false

    private init(connection: TCPConnection, loop: EventLoop) {
        self.connection = connection
        self.loop = loop
    }

    /// Connects and sends `first` in one turn of the loop: on a busy test process a hop back to the shared pool
    /// between the two could take longer than the server's head timeout, which would fail the test, not the server.
    static func connect(port: Int, on loop: EventLoop, sending first: String? = nil) async throws -> RawPeer {
        try await onLoop(loop) {
            let connection = try await TCPConnection.connect(to: try SocketAddress(ip: "127.0.0.1", port: port), on: loop)
            if let first {
                do { try await connection.write(Array(first.utf8)) } catch {
                    connection.close()
                    throw error
                }
            }
            return RawPeer(connection: connection, loop: loop)
        }
    }

    var text: String { String(decoding: received, as: UTF8.self) }

    func send(_ text: String) async throws { try await send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) async throws {
        let connection = connection
        try await onLoop(loop) { try await connection.write(bytes) }
    }

    /// Reads until the server closes, `condition` holds on what arrived, or `limit` passes.
    /// - Returns: whether the server closed the connection (EOF or reset) within the limit.
    @discardableResult
    func read(within limit: Duration = .seconds(20), maxBytes: Int = 1 << 30,
              until condition: (@Sendable (String) -> Bool)? = nil) async throws -> Bool {
        try await onLoop(loop) { () async throws -> Bool in
            let connection = self.connection
            let expired = Flag()
            let timer = ScheduledTimer(on: self.loop, after: limit) {
                expired.isSet = true
                connection.close()
            }
            defer { timer.cancel() }
            var buffer: [UInt8] = []
            // The condition decodes everything received: only asked for when given (a big body stays linear).
            while self.received.count < maxBytes && !(condition?(self.text) ?? false) {
                buffer.removeAll(keepingCapacity: true)
                let count: Int
                do {
                    count = try await connection.read(into: &buffer, maxBytes: 64 * 1024)
                } catch {
                    if expired.isSet { return false }
                    self.isClosedByPeer = true
                    return true
                }
                if count == 0 {
                    if expired.isSet { return false }
                    self.isClosedByPeer = true
                    return true
                }
                self.received.append(contentsOf: buffer)
            }
            return false
        }
    }

    func close() {
        let connection = connection
        loop.perform { connection.close() }
    }

    /// The status codes of the responses received so far, in order.
    var statuses: [Int] {
        text.matches(of: #/HTTP\/1\.1 (\d{3}) /#).compactMap { Int($0.output.1) }
    }
}

/// A flag a timer sets on the loop and the reader checks on the same loop.
private final class Flag: @unchecked Sendable {
    var isSet = false
}

/// A child `wsload serve` or `wsload proxy` (a trap kills it, not the test run), and its port.
final class ServerChild: @unchecked Sendable {
    let process: WSLoadProcess
    let port: Int

    /// Starts `wsload serve --port 0 --loops 1 OPTIONS` and waits for its address.
    static func serve(_ options: [String]) async throws -> ServerChild {
        let process = try WSLoadProcess(["serve", "--port", "0", "--loops", "1", "--duration", "120s"] + options)
        return try await ServerChild(process, pattern: #/listening on ws:\/\/127\.0\.0\.1:(\d+)\//#)
    }

    /// Starts `wsload proxy --listen 127.0.0.1:0 --upstream 127.0.0.1:UPSTREAM OPTIONS`.
    static func proxy(upstream: Int, _ options: [String]) async throws -> ServerChild {
        let process = try WSLoadProcess(["proxy", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(upstream)", "--loops", "1",
                                         "--duration", "120s"] + options)
        return try await ServerChild(process, pattern: #/listening on 127\.0\.0\.1:(\d+),/#)
    }

    private init(_ process: WSLoadProcess, pattern: Regex<(Substring, Substring)>) async throws {
        self.process = process
        // Generous: on one CPU shared with a busy loop (scripts/test.sh --stress --one-cpu) a debug wsload once took
        // over 30 s to print its address.
        let deadline = ContinuousClock.now + .seconds(90)
        var found: Int?
        while found == nil && process.isRunning && ContinuousClock.now < deadline {
            found = process.output.firstMatch(of: pattern).flatMap { Int($0.output.1) }
            if found == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        guard let found else {
            process.signal(SIGKILL)
            throw TestProcess.Failure(description: "no address within 90 s: \(process.output) \(process.errors)")
        }
        port = found
    }

    var isRunning: Bool { process.isRunning }

    /// Stops it with SIGINT; returns its closing line (the counts) after checking it exited 0.
    func stop() async throws -> String {
        process.signal(SIGINT)
        let status = try await process.waitForExit(within: .seconds(30))
        #expect(status == 0, "exit \(status): \(process.errors)")
        return process.output
    }

    deinit { if process.isRunning { process.signal(SIGKILL) } }
}

/// One normal request on a fresh connection: the server must still serve after whatever came before.
func expectServes(port: Int, on loop: EventLoop, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let peer = try await RawPeer.connect(port: port, on: loop, sending: "GET /bytes/16 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    defer { peer.close() }
    try await peer.read()
    #expect(peer.statuses == [200], "a normal request after the hostile one: \(peer.text.prefix(300))", sourceLocation: sourceLocation)
}

import HTTP1
import Runtime
@testable import LiveView

/// A raw HTTP/1.1 client of a live server for tests: real TCP on loopback, every read bounded by a deadline
/// (a timer that closes the socket, so a hung server fails the test instead of hanging it). Use it on its
/// loop's thread (inside `onLoop`).
struct LiveTestClient {
    let tcp: TCPConnection
    /// Bytes received and not yet consumed by a ``readResponse(isHead:)``.
    var buffer: [UInt8] = []
    var deadline: Duration = .seconds(30)

    /// The failure of a read that the server did not answer as expected.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func connect(to address: LiveAddress, on loop: EventLoop) async throws -> LiveTestClient {
        let tcp = try await TCPConnection.connect(to: try SocketAddress(ip: address.host, port: Int(address.port)), on: loop)
        return LiveTestClient(tcp: tcp)
    }

    func send(_ text: String) async throws {
        try await tcp.write(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) async throws {
        try await tcp.write(bytes)
    }

    /// `GET path` (or another method) with `Host: localhost` and extra header lines.
    func request(_ path: String, method: String = "GET", headers: [String] = []) async throws {
        try await send("\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n")
    }

    /// Reads more bytes into ``buffer``; false when the server closed (EOF or reset).
    mutating func readMore() async -> Bool {
        let tcp = tcp
        let timer = ScheduledTimer(on: tcp.loop, after: deadline) { tcp.close() }
        defer { timer.cancel() }
        do {
            return try await tcp.read(into: &buffer, maxBytes: 64 * 1024) > 0
        } catch {
            return false
        }
    }

    /// One response: its head and a body of its Content-Length (none for a HEAD request).
    mutating func readResponse(isHead: Bool = false) async throws -> (head: HTTPResponseHead, body: String) {
        var parser = HTTPHeadParser()
        while true {
            if let (head, length) = try parser.parseResponse(buffer) {
                let bodyLength = isHead ? 0 : Int(head.headers["Content-Length"] ?? "") ?? 0
                while buffer.count < length + bodyLength {
                    guard await readMore() else { throw Failure(description: "the server closed inside a body") }
                }
                let body = String(decoding: buffer[length..<(length + bodyLength)], as: UTF8.self)
                buffer.removeFirst(length + bodyLength)
                return (head, body)
            }
            guard await readMore() else {
                throw Failure(description: "the server closed before a response head; got \(String(decoding: buffer, as: UTF8.self))")
            }
        }
    }

    /// Reads until `text` has arrived (true) or the server closed first (false).
    mutating func read(until text: String) async -> Bool {
        while !String(decoding: buffer, as: UTF8.self).contains(text) {
            guard await readMore() else { return false }
        }
        return true
    }

    /// Reads until the server closes; true when it did so within the deadline.
    mutating func readToEnd(limit: Int = 64 * 1024 * 1024) async -> Bool {
        let tcp = tcp
        let timedOut = Flag()
        let timer = ScheduledTimer(on: tcp.loop, after: deadline) {
            timedOut.isSet = true
            tcp.close()
        }
        defer { timer.cancel() }
        while buffer.count < limit, (try? await tcp.read(into: &buffer, maxBytes: 64 * 1024)) ?? 0 > 0 {}
        return !timedOut.isSet
    }

    var text: String { String(decoding: buffer, as: UTF8.self) }

    func close() { tcp.close() }
}

/// A flag a loop timer sets and the test reads on the same loop.
final class Flag: @unchecked Sendable {
    var isSet = false
}

import Glibc
import HTTP1
import Runtime

/// One client of a ``LiveServer``, served on the server's loop: request heads within the head cap and timeout,
/// GET and HEAD only, keep-alive, and responses that must leave within the write timeout. Loop-confined.
struct LiveConnection {
    let tcp: TCPConnection
    let core: LiveServerCore
    private var limits: LiveServer.Limits { core.limits }

    init(tcp: TCPConnection, core: LiveServerCore) {
        self.tcp = tcp
        self.core = core
    }

    /// What reading the next request head came to.
    private enum HeadResult {
        case head(HTTPRequestHead)
        /// The client closed (or the connection failed, or the server stops) between requests.
        case closed
        case timedOut
        case tooLarge
        case malformed(HTTPParseError)
    }

    /// Serves requests until the client closes, a response says close, a limit is hit or the task is cancelled.
    func serve() async {
        defer { tcp.close() }
        var buffer: [UInt8] = []
        while !Task.isCancelled {
            let result = await readHead(&buffer)
            let request: HTTPRequestHead
            switch result {
            case .head(let head):
                request = head
            case .closed:
                return
            case .timedOut:
                core.statistics.timedOut.add(1, ordering: .relaxed)
                return
            case .tooLarge:
                await answerAndClose(status: 431, "the request head is larger than \(limits.maximumHeadSize) bytes\n")
                return
            case .malformed(let error):
                await answerAndClose(status: 400, "\(error.reason)\n")
                return
            }
            core.statistics.requests.add(1, ordering: .relaxed)
            guard request.method == "GET" || request.method == "HEAD" else {
                await answerAndClose(status: 405, "only GET and HEAD are served\n", headers: [("Allow", "GET, HEAD")])
                return
            }
            // A body would have to be read past; none is ever wanted, so its framing is refused outright.
            if request.headers["Transfer-Encoding"] != nil || request.headers.listValues("Content-Length").contains(where: { $0 != "0" }) {
                await answerAndClose(status: 400, "a GET or HEAD request has no body\n")
                return
            }
            // RFC 9112 §3.2: a request with more than one Host field line gets a 400.
            guard request.headers.count(of: "Host") <= 1 else {
                await answerAndClose(status: 400, "more than one Host header\n")
                return
            }
            guard let parsedTarget = LiveHTTP.requestTarget(request.target) else {
                await answerAndClose(status: 400, "the request target is not a path or an http:// URL\n")
                return
            }
            // RFC 9112 §3.2.2: an absolute-form target's authority stands for Host (which is then ignored).
            if let host = parsedTarget.authority ?? request.headers["Host"],
                !LiveHTTP.isAcceptableHost(host, boundAddress: core.boundAddress) {
                // A page elsewhere that rebinds its DNS name to 127.0.0.1 must not read a loopback endpoint.
                await answerAndClose(status: 421, "this server answers for \(core.boundAddress) only\n")
                return
            }
            let isHead = request.method == "HEAD"
            let isClosing = request.version == "HTTP/1.0" || request.headers.listContains("Connection", token: "close")
            let target = parsedTarget.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            let liveRequest = LiveRequest(method: request.method, path: String(target[0]),
                                          query: target.count > 1 ? String(target[1]) : nil, accept: request.headers["Accept"])
            switch core.handler(liveRequest) {
            case .content(let status, let contentType, let body, let headers):
                let head = LiveHTTP.responseHead(status: status, contentType: contentType, contentLength: body.count,
                                                 headers: headers, isClosing: isClosing)
                guard await write(isHead ? head : head + body) else { return }
                if isClosing {
                    await closeGracefully()
                    return
                }
            case .events(let stream):
                let head = LiveHTTP.responseHead(status: 200, contentType: "text/event-stream; charset=utf-8", contentLength: nil,
                                                 headers: [], isClosing: true)
                guard await write(head) else { return }
                if isHead {
                    await closeGracefully()
                } else {
                    await streamEvents(stream)
                }
                return
            }
        }
    }

    /// Answers a client past the connection cap with a 503 and closes it.
    func refuse() async {
        await answerAndClose(status: 503, "busy: \(limits.maximumClients) clients are connected\n", headers: [("Retry-After", "1")])
        tcp.close()
    }

    /// Reads until `buffer` starts with a whole head (taking it off `buffer`), within the head timeout.
    private func readHead(_ buffer: inout [UInt8]) async -> HeadResult {
        let expiry = Expiry()
        let tcp = tcp
        let timer = ScheduledTimer(on: tcp.loop, after: limits.headTimeout) {
            expiry.isExpired = true
            tcp.close()
        }
        defer { timer.cancel() }
        var parser = HTTPHeadParser(maximumHeadSize: limits.maximumHeadSize, maximumHeaderCount: limits.maximumHeaderCount)
        while true {
            if !buffer.isEmpty {
                do {
                    if let (head, length) = try parser.parseRequest(buffer) {
                        buffer.removeFirst(length)
                        return .head(head)
                    }
                } catch {
                    return buffer.count >= limits.maximumHeadSize ? .tooLarge : .malformed(error)
                }
                // The parser waits for CRLF CRLF; a head with bare LF line ends would never end, so say so now.
                if let bareLF = buffer.indices.first(where: { buffer[$0] == 10 && ($0 == 0 || buffer[$0 - 1] != 13) }) {
                    return .malformed(HTTPParseError(offset: bareLF, reason: "bare LF line ending"))
                }
            }
            // Never more than the cap: the parser says "too large" once a full cap holds no blank line.
            let room = limits.maximumHeadSize - buffer.count
            do {
                guard try await tcp.read(into: &buffer, maxBytes: max(1, room)) > 0 else {
                    return buffer.isEmpty ? .closed : .malformed(HTTPParseError(offset: buffer.count, reason: "the head ended early"))
                }
            } catch {
                return expiry.isExpired ? .timedOut : .closed
            }
        }
    }

    /// Writes within the write timeout; false (the connection closed) when it could not.
    private func write(_ bytes: [UInt8]) async -> Bool {
        let expiry = Expiry()
        let tcp = tcp
        let statistics = core.statistics
        let timer = ScheduledTimer(on: tcp.loop, after: limits.writeTimeout) {
            expiry.isExpired = true
            statistics.timedOut.add(1, ordering: .relaxed)
            tcp.close()
        }
        defer { timer.cancel() }
        do {
            try await tcp.write(bytes)
            return true
        } catch {
            tcp.close()
            return false
        }
    }

    /// An error answer with `Connection: close`, then the close.
    private func answerAndClose(status: Int, _ message: String, headers: [(String, String)] = []) async {
        let body = Array(message.utf8)
        let head = LiveHTTP.responseHead(status: status, contentType: "text/plain; charset=utf-8", contentLength: body.count,
                                         headers: headers, isClosing: true)
        guard await write(head + body) else { return }
        await closeGracefully()
    }

    /// Sends FIN after what was written, then reads what the client still sends for up to a second (closing with
    /// unread bytes would reset the connection and could destroy the answer before the client read it).
    private func closeGracefully() async {
        let tcp = tcp
        let timer = ScheduledTimer(on: tcp.loop, after: .seconds(1)) { tcp.close() }
        defer {
            timer.cancel()
            tcp.close()
        }
        do {
            try await tcp.shutdownWrite()
            var sink: [UInt8] = []
            var drained = 0
            while drained < 64 * 1024, try await tcp.read(into: &sink, maxBytes: 16 * 1024) > 0 {
                drained += sink.count
                sink.removeAll(keepingCapacity: true)
            }
        } catch {
            return  // closed by the client, the timer or the server's stop: nothing more to say.
        }
    }

    /// Sends the stream's backlog, then its events as they come, until it finishes, the client goes or falls too far
    /// behind (then ``EventStream`` closes the connection), or the server stops; then FIN after the last event.
    private func streamEvents(_ stream: EventStream) async {
        let tcp = tcp
        let subscription = stream.subscribe(disconnect: { tcp.close() })
        defer { subscription.cancel() }
        var linger: ScheduledTimer?
        await withDiscardingTaskGroup { tasks in
            // The one reader from here on: notices the client going away (a client sends nothing on an event
            // stream; junk past 64 KiB ends it), and after the FIN drains until the client closes or the linger ends.
            tasks.addTask(executorPreference: tcp.loop.taskExecutor) {
                var sink: [UInt8] = []
                var received = 0
                // A failed read is the client gone (or the server stopping): either way the stream ends below.
                while received < 64 * 1024, let count = try? await tcp.read(into: &sink, maxBytes: 16 * 1024), count > 0 {
                    received += count
                    sink.removeAll(keepingCapacity: true)
                }
                subscription.end()
                tcp.close()
            }
            await sendEvents(subscription)
            // The FIN goes after every queued byte (a close now would discard what libuv still holds), within the
            // write timeout; then the client has a second to close first.
            let flush = ScheduledTimer(on: tcp.loop, after: limits.writeTimeout) { tcp.close() }
            try? await tcp.shutdownWrite()
            flush.cancel()
            linger = ScheduledTimer(on: tcp.loop, after: .seconds(1)) { tcp.close() }
        }
        linger?.cancel()
    }

    private func sendEvents(_ subscription: EventSubscription) async {
        var batch: [UInt8] = []
        for event in subscription.replay {
            batch += event
            if batch.count >= 64 * 1024 {
                guard await write(batch) else { return }
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty {
            guard await write(batch) else { return }
        }
        while true {
            let next = await subscription.next()
            if next.isDropped { return }
            if !next.bytes.isEmpty {
                guard await write(next.bytes) else { return }
            }
            if next.isEnded { return }
        }
    }
}

/// A flag a loop timer sets and the task it cut short reads (both on the loop).
private final class Expiry: @unchecked Sendable {
    var isExpired = false
}

/// The live server's wire text: pure.
enum LiveHTTP {
    /// A response head with the headers every answer carries.
    /// - Parameter contentLength: nil for an event stream (its end is the connection's close).
    static func responseHead(status: Int, contentType: String, contentLength: Int?, headers: [(String, String)],
                             isClosing: Bool, date: HTTPDate = HTTPDate(secondsSince1970: Int64(time(nil)))) -> [UInt8] {
        var fields = HTTPHeaders()
        fields.add(name: "Content-Type", value: contentType)
        if let contentLength { fields.add(name: "Content-Length", value: String(contentLength)) }
        fields.add(name: "Date", value: date.description)
        fields.add(name: "Cache-Control", value: "no-store")
        fields.add(name: "X-Content-Type-Options", value: "nosniff")
        for (name, value) in headers {
            // The handler's headers are the program's own; one that could split the head is dropped, never sent.
            guard (try? HTTPHeaders.validate(name: name, value: value)) != nil else { continue }
            fields.add(name: name, value: value)
        }
        if isClosing { fields.add(name: "Connection", value: "close") }
        return HTTPResponseHead(status: status, reason: reason(status), headers: fields).serialized()
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 421: "Misdirected Request"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    /// The origin-form (`/path?query`) of a request target and, for the absolute form (`http://host:port/path`,
    /// which RFC 9112 §3.2.2 says a server MUST accept), its authority; nil for any other form (`*`, an authority,
    /// another scheme, userinfo, an empty host, a fragment).
    static func requestTarget(_ target: String) -> (path: String, authority: String?)? {
        if target.hasPrefix("/") { return (target, nil) }
        guard target.utf8.count > 7, target.prefix(7).lowercased() == "http://" else { return nil }
        let rest = target.dropFirst(7)
        let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<end]
        // RFC 9110 §4.2.4: userinfo is deprecated in http URIs and a recipient should treat it as an error.
        guard !authority.isEmpty, !authority.hasPrefix(":"), !authority.contains("@"), !rest.contains("#") else {
            return nil
        }
        let path = rest[end...]
        return (path.hasPrefix("/") ? String(path) : "/" + path, String(authority))
    }

    /// Whether a request's `Host` names this server: any host when it listens beyond loopback (clients reach it by
    /// names it cannot know); on loopback, only a loopback address or `localhost` (with or without a port).
    static func isAcceptableHost(_ host: String, boundAddress: LiveAddress) -> Bool {
        guard boundAddress.isLoopback else { return true }
        var name = Substring(host.lowercased())
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            name = name[name.index(after: name.startIndex)..<close]
            return name == "::1"
        }
        if let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        if name == "localhost" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isNumber) && Int(part).map { $0 <= 255 } == true
        }
    }
}

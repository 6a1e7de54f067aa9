import HTTP1
import Runtime

// One request and its response head: redirects followed, a dead kept-alive connection replaced once, and a
// 206's Content-Range checked against what was asked.
extension DownloadTask {
    /// Sends a GET (following redirects) and returns a 2xx or 416 response whose body is still unread.
    ///
    /// Credentials (the bearer token, credential headers) and the configured TLS server name go only to the
    /// request's own origin (scheme, host, port): a redirect elsewhere is followed without them, and one from
    /// https to http is refused (`insecure_redirect`).
    func open(
        headers: HTTPHeaders, reusing reused: HTTPClientConnection? = nil
    ) async throws -> (HTTPClientConnection, HTTPResponseHead) {
        var target = url
        var reused = reused
        for _ in 0...configuration.maximumRedirects {
            try Task.checkCancellation()
            let candidate: HTTPClientConnection
            if let existing = reused, existing.isReusable, existing.origin == HTTPClientConnection.origin(of: target) {
                candidate = existing
            } else {
                reused?.close()
                candidate = try await HTTPClientConnection.connect(to: target, configuration: configuration, on: loop,
                                                                   trustedOrigin: TransferOrigin(request.url))
                connectionsOpened += 1
            }
            let isReused = reused != nil && candidate === reused
            reused = nil
            let sent = LoopClock().now
            let (connection, head) = try await exchange(on: candidate, isReused: isReused, target: target, headers: headers)
            if timeToFirstByte == nil { timeToFirstByte = sent.duration(to: LoopClock().now) }
            statuses[head.status, default: 0] += 1
            let framing = try HTTPBodyFraming(response: head, requestMethod: "GET")
            switch head.status {
            case 200, 206, 416:
                if head.status == 416 { _ = try await connection.readBody(framing: framing, limit: 4096) }
                url = target
                return (connection, head)
            case 301, 302, 303, 307, 308:
                guard let location = head.headers["Location"] else {
                    throw TransferError(.httpStatus, "\(head.status) from \(target.redactedDescription) without Location",
                                        status: head.status)
                }
                _ = try await connection.readBody(framing: framing, limit: 64 * 1024)
                if !connection.isReusable { release(connection) } else { reused = connection }
                let next: HTTPURL
                do {
                    next = try target.resolving(location)
                } catch {
                    throw TransferError(.httpStatus, "bad redirect: \(TerminalText.printable(error.description, limit: 240))", status: head.status)
                }
                guard next.isSecure || !target.isSecure else {
                    throw TransferError(.insecureRedirect, "\(head.status) from \(target.redactedDescription) redirects to "
                                        + "\(next.redactedDescription): https to http is refused", status: head.status)
                }
                target = next
            default:
                // The error page only decorates the status error thrown below; a failure reading it must not mask that.
                let body = try? await connection.readBody(framing: framing, limit: 512)
                release(connection)
                let text = TerminalText.printable(String(decoding: body ?? [], as: UTF8.self), limit: 120)
                throw TransferError(.httpStatus, "\(head.status) \(TerminalText.printable(head.reason, limit: 80)) from \(target.redactedDescription)"
                                    + "\(text.isEmpty ? "" : ": \(text)")", status: head.status)
            }
        }
        throw TransferError(.tooManyRedirects, "more than \(configuration.maximumRedirects) redirects from \(request.url.redactedDescription)")
    }

    /// Sends the GET and reads the response head. On a kept-alive connection the server had already
    /// closed (nothing came back), the GET is sent once more on a new connection (RFC 9112 §9.3.1).
    private func exchange(
        on connection: HTTPClientConnection, isReused: Bool, target: HTTPURL, headers: HTTPHeaders
    ) async throws -> (HTTPClientConnection, HTTPResponseHead) {
        liveConnections[ObjectIdentifier(connection)] = connection
        do {
            try await connection.send(connection.requestHead(method: "GET", url: target, headers: headers))
            return (connection, try await connection.readResponseHead())
        } catch let error as TransferError where isReused && error.code == .network
            && (connection.wasClosedBeforeResponse || error.runtimeCode == RuntimeError.Code.brokenPipe.name
                || error.runtimeCode == RuntimeError.Code.connectionReset.name)
        {
            release(connection)
            let fresh = try await HTTPClientConnection.connect(to: target, configuration: configuration, on: loop,
                                                               trustedOrigin: TransferOrigin(request.url))
            connectionsOpened += 1
            return try await exchange(on: fresh, isReused: false, target: target, headers: headers)
        }
    }

    func release(_ connection: HTTPClientConnection) {
        liveConnections[ObjectIdentifier(connection)] = nil
        connection.close()
    }

    /// Checks a 206's `Content-Range` against what was asked: same start, same end (or the file's end for
    /// an open range), and a complete length.
    func checkedContentRange(_ head: HTTPResponseHead, requested first: Int64, last: Int64?) throws -> ContentRange {
        guard let value = head.headers["Content-Range"], let range = ContentRange(headerValue: value), let got = range.range,
            let complete = range.completeLength
        else {
            let value = head.headers["Content-Range"]?.prefix(80) ?? "none"
            throw TransferError(.contentRangeMismatch, "206 without a valid Content-Range (\(value))")
        }
        let expectedLast = last ?? (complete - 1)
        guard got.first == first, got.last == min(expectedLast, complete - 1) else {
            throw TransferError(.contentRangeMismatch, "asked for bytes \(first)-\(last.map(String.init) ?? ""), got \(value)")
        }
        if case .length(let length) = try HTTPBodyFraming(response: head, requestMethod: "GET"), length != got.count {
            throw TransferError(.contentRangeMismatch, "Content-Range \(value) but Content-Length \(length)")
        }
        return range
    }
}

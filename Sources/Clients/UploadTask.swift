import Crypto
import HTTP1
import Runtime

/// An upload from a file (`uploadTask(with:fromFile:)`): background uploads never come from memory.
package struct UploadRequest: Sendable {
    package var url: HTTPURL
    /// PUT or POST.
    package var method: String
    package var file: String
    package var contentType: String

    package init(url: HTTPURL, method: String = "PUT", file: String, contentType: String = "application/octet-stream") {
        self.url = url
        self.method = method
        self.file = file
        self.contentType = contentType
    }
}

/// `didSendBodyData`: how far an upload is.
package struct UploadProgress: Sendable, Hashable {
    package var bytesSent: Int64
    package var bytesExpected: Int64
}

/// A finished upload: the server's answer (a 2xx) and what was sent.
package struct UploadResult: Sendable {
    package var status: Int
    /// The response body, cut at the configuration's in-memory limit.
    package var body: [UInt8]
    package var bytesSent: Int64
    /// SHA-256 of the bytes sent (the file as read while sending).
    package var sha256: [UInt8]
    /// From the last body byte sent to the response head.
    package var timeToFirstByte: Duration
    package var duration: Duration
    package var retries: Int
    package var statuses: [Int: Int]
}

/// Uploads a file with `Content-Length`, streamed from disk in 256 KiB reads with the connection's
/// backpressure. Retryable failures start the upload again after the backoff delay the connection lifecycle
/// draws (HTTP/1.1 has no standard way to continue a partial upload).
package actor UploadTask {
    package nonisolated let loop: EventLoop
    package nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    package nonisolated let request: UploadRequest
    private let configuration: TransferConfiguration
    private let onProgress: (@Sendable (UploadProgress) -> Void)?
    private var random = SeededRandomNumberGenerator(seed: nil)
    private var statuses: [Int: Int] = [:]
    private var connection: HTTPClientConnection?
    /// The request's attempts: the connection lifecycle decides retries, backoff, give-up and the deadline's stop.
    private var attempts: TransferRetries

    package init(request: UploadRequest, configuration: TransferConfiguration = TransferConfiguration(), loop: EventLoop,
                onProgress: (@Sendable (UploadProgress) -> Void)? = nil) {
        self.loop = loop
        self.request = request
        self.configuration = configuration
        self.onProgress = onProgress
        attempts = TransferRetries(policy: configuration.retry)
    }

    package func run() async throws -> UploadResult {
        let clock = LoopClock()
        let start = clock.now
        attempts = TransferRetries(policy: configuration.retry)
        // The resource deadline stops the lifecycle (no attempt after it) and cuts the attempt in flight short.
        let deadline = ScheduledTimer(on: loop, after: configuration.resourceTimeout) { [weak self] in
            self?.assumeIsolated { $0.expireResource(since: start) }
        }
        defer {
            deadline.cancel()
            connection?.close()
        }
        var step = attempts.begin(at: .zero, using: &random)
        while true {
            switch step {
            case .attempt:
                do {
                    var result = try await attemptUpload()
                    attempts.attemptSucceeded(at: start.duration(to: clock.now))
                    result.duration = start.duration(to: clock.now)
                    result.retries = attempts.retries
                    return result
                } catch {
                    connection?.close()
                    connection = nil
                    let failure = TransferError.from(error, doing: "upload of \(request.file)")
                    step = attempts.attemptFailed(failure, at: start.duration(to: clock.now), using: &random)
                }
            case .wait(let delay):
                let sleep = TransferRetries.sleep(for: delay, at: start.duration(to: clock.now), deadline: configuration.resourceTimeout)
                try await loop.sleep(for: sleep.duration)
                if sleep.endsAtDeadline { expireResource(since: start) }
                step = attempts.backoffElapsed(at: start.duration(to: clock.now), using: &random)
            case .end:
                if attempts.isStopped {
                    throw TransferError(.resourceTimeout, "the upload did not finish within \(configuration.resourceTimeout)")
                }
                throw attempts.lastFailure ?? TransferError(.cancelled, "upload of \(request.file) ended before its first attempt")
            }
        }
    }

    /// The resource deadline: the lifecycle stops (no attempt after it) and the attempt in flight is cut short.
    private func expireResource(since start: LoopClock.Instant) {
        attempts.stop(at: start.duration(to: LoopClock().now))
        connection?.close()
    }

    private func attemptUpload() async throws -> UploadResult {
        let file = try DataFile.open(request.file, mode: .read)
        defer { file.close() }
        let length = try file.size()
        let connection = try await HTTPClientConnection.connect(to: request.url, configuration: configuration, on: loop)
        self.connection = connection
        var headers: HTTPHeaders = ["Content-Type": request.contentType, "Content-Length": String(length)]
        headers.add(name: "Connection", value: "close")
        try await connection.send(connection.requestHead(method: request.method, url: request.url, headers: headers))
        let hasher = SHA256Hasher()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(256 * 1024)
        var sent: Int64 = 0
        let limiter = configuration.bandwidthLimit.flatMap { $0 > 0 ? BandwidthLimiter(bytesPerSecond: $0) : nil }
        while sent < length {
            try file.read(into: &buffer, count: Int(min(256 * 1024, length - sent)), at: sent)
            guard !buffer.isEmpty else {
                throw TransferError(.file, "\(request.file) shrank to \(sent) bytes while it was being sent (expected \(length))")
            }
            hasher.update(buffer)
            try await connection.sendBody(buffer)
            sent += Int64(buffer.count)
            onProgress?(UploadProgress(bytesSent: sent, bytesExpected: length))
            if let limiter { try await limiter.pace(adding: Int64(buffer.count)) }
        }
        let sentAt = LoopClock().now
        let head = try await connection.readResponseHead()
        let timeToFirstByte = sentAt.duration(to: LoopClock().now)
        statuses[head.status, default: 0] += 1
        let body = try await connection.readBody(framing: HTTPBodyFraming(response: head, requestMethod: request.method),
                                                 limit: configuration.maximumInMemoryBody)
        guard (200..<300).contains(head.status) else {
            let text = TerminalText.printable(String(decoding: body.prefix(120), as: UTF8.self), limit: 120)
            throw TransferError(.httpStatus, "\(head.status) \(TerminalText.printable(head.reason, limit: 80)) from \(request.url.redactedDescription)"
                                + "\(text.isEmpty ? "" : ": \(text)")", status: head.status)
        }
        return UploadResult(status: head.status, body: body, bytesSent: sent, sha256: hasher.finalize(),
                            timeToFirstByte: timeToFirstByte, duration: .zero, retries: 0, statuses: statuses)
    }
}

/// A `multipart/form-data` body (RFC 7578) written to a temporary file first, as background uploads
/// require, then uploaded from that file.
package struct MultipartForm: Sendable {
    /// A plain text field of the form.
    package struct Field: Sendable {
        package var name: String
        package var value: String

        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    package var fields: [Field] = []
    /// The file part: form name, file name, content type and the path to read.
    package var file: (name: String, fileName: String, contentType: String, path: String)?
    package let boundary: String

    package init(boundary: String = "wsload-" + Crypto.hex(Crypto.randomBytes(12))) {
        self.boundary = boundary
    }

    package var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Writes the whole body to `path` (a new file) and returns its length.
    package func write(to path: String) throws -> Int64 {
        let output = try DataFile.open(path, mode: .createNew)
        defer { output.close() }
        var offset: Int64 = 0
        func emit(_ bytes: [UInt8]) throws {
            try output.write(bytes[...], at: offset)
            offset += Int64(bytes.count)
        }
        for field in fields {
            try emit(Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(field.name))\"\r\n\r\n\(field.value)\r\n".utf8))
        }
        if let file {
            try emit(Array(("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(file.name))\"; "
                + "filename=\"\(Self.quoted(file.fileName))\"\r\nContent-Type: \(file.contentType)\r\n\r\n").utf8))
            let input = try DataFile.open(file.path, mode: .read)
            defer { input.close() }
            var buffer: [UInt8] = []
            var read: Int64 = 0
            while true {
                try input.read(into: &buffer, count: 1024 * 1024, at: read)
                if buffer.isEmpty { break }
                try emit(buffer)
                read += Int64(buffer.count)
            }
            try emit([13, 10])
        }
        try emit(Array("--\(boundary)--\r\n".utf8))
        return offset
    }

    /// Escapes `"` and line breaks in a quoted parameter (RFC 7578 §4.2 as browsers do it).
    static func quoted(_ text: String) -> String {
        text.replacingAll("\"", with: "%22").replacingAll("\r", with: "%0D").replacingAll("\n", with: "%0A")
    }
}

extension String {
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var result = ""
        for character in self { if character == target { result += replacement } else { result.append(character) } }
        return result
    }
}

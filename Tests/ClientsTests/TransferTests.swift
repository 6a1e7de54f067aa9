import Clients
import Crypto
import EmbeddedServer
import Foundation
import HTTP1
import Lifecycle
import Profile
import Runtime
import TestSupport
import Testing
import WebSocket

/// A fresh directory under the system temp directory, removed when the value is released.
final class TransferScratch: @unchecked Sendable {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "wsload-transfer-" + Crypto.hex(Crypto.randomBytes(6))
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    /// Names in the directory (to prove no partial or temporary file is left behind).
    var contents: [String] { (try? FileManager.default.contentsOfDirectory(atPath: path).sorted()) ?? [] }

    /// Writes `size` bytes of pattern content with `seed`; returns its SHA-256.
    @discardableResult
    func writePattern(_ name: String, size: Int64, seed: UInt64) throws -> [UInt8] {
        let file = try DataFile.open(self.file(name) + ".tmp", mode: .createNew)
        var buffer: [UInt8] = []
        var offset: Int64 = 0
        while offset < size {
            let count = Int(min(4 << 20, size - offset))
            PatternContent.fill(&buffer, count: count, offset: offset, seed: seed)
            try file.write(buffer[...], at: offset)
            offset += Int64(count)
        }
        file.close()
        try FileSystem.rename(self.file(name) + ".tmp", to: self.file(name))
        return PatternContent.sha256(size: size, seed: seed)
    }
}

func sha256(ofFile path: String) throws -> [UInt8] {
    let file = try DataFile.open(path, mode: .read)
    defer { file.close() }
    let hasher = SHA256Hasher()
    var buffer: [UInt8] = []
    var offset: Int64 = 0
    while true {
        try file.read(into: &buffer, count: 4 << 20, at: offset)
        if buffer.isEmpty { break }
        hasher.update(buffer)
        offset += Int64(buffer.count)
    }
    return hasher.finalize()
}

private func download(
    _ url: String, to destination: String, segments: Int = 1, connections: Int? = nil, minimumSegment: Int64 = 1 << 20,
    expected: [UInt8]? = nil, resumeData: ResumeData? = nil, configuration: TransferConfiguration = TransferConfiguration(),
    loop: EventLoop
) async throws -> DownloadResult {
    let request = DownloadRequest(url: try HTTPURL(url), destination: destination, segments: segments, connections: connections,
                                  minimumSegmentSize: minimumSegment, expectedSHA256: expected, computesDigest: true)
    return try await onLoop(loop) {
        try await DownloadTask(request: request, configuration: configuration, loop: loop, resumeData: resumeData).run()
    }
}

/// A download expected to fail: returns its error.
private func failedDownload(
    _ url: String, to destination: String, segments: Int = 1, resumeData: ResumeData? = nil,
    configuration: TransferConfiguration = TransferConfiguration(retry: ReconnectPolicy(maximumAttempts: 0)), loop: EventLoop
) async throws -> TransferError {
    do {
        let result = try await download(url, to: destination, segments: segments, resumeData: resumeData, configuration: configuration,
                                        loop: loop)
        Issue.record("the download succeeded: \(result.length) bytes")
        throw TestProcess.Failure(description: "expected a failure")
    } catch let error as TransferError {
        return error
    }
}

@Suite("Downloads against the embedded server", .timeLimit(.minutes(3)))
struct EmbeddedDownloadTests {
    static let size: Int64 = 256 << 20

    @Test("256 MiB single and ranged (8 segments over 4 connections) are byte-identical; nothing left beside them")
    func bigDownloads() async throws {
        let scratch = try TransferScratch()
        let expected = PatternContent.sha256(size: Self.size, seed: 7)
        try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                let url = "\(server.httpURL)/bytes/\(Self.size)?seed=7"
                let single = try await download(url, to: scratch.file("single.bin"), expected: expected, loop: group.loops[0])
                #expect(single.length == Self.size && single.bytesTransferred == Self.size && single.segments == 1)
                #expect(single.statuses == [200: 1])
                let ranged = try await download(url, to: scratch.file("ranged.bin"), segments: 8, connections: 4, expected: expected,
                                                loop: group.loops[1])
                #expect(ranged.segments == 8 && ranged.bytesTransferred == Self.size && !ranged.isRangeFallback)
                #expect(ranged.connectionsOpened >= 4 && ranged.statuses[206] == 8)
            }
        }
        #expect(try sha256(ofFile: scratch.file("single.bin")) == expected)
        #expect(try sha256(ofFile: scratch.file("ranged.bin")) == expected)
        #expect(scratch.contents == ["ranged.bin", "single.bin"])
    }

    @Test("a server that ignores ranges: the probe's 200 becomes the single stream")
    func ignoredRanges() async throws {
        let scratch = try TransferScratch()
        let size: Int64 = 5_000_000
        let result = try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                try await download("\(server.httpURL)/bytes/\(size)?seed=2&ranges=0", to: scratch.file("f"), segments: 4,
                                   expected: PatternContent.sha256(size: size, seed: 2), loop: group.loops[0])
            }
        }
        #expect(result.isRangeFallback && result.segments == 1 && result.statuses == [200: 1] && result.connectionsOpened == 1)
    }

    @Test("a connection dropped mid-body: resume data, no file at the destination; the resume fetches only what is missing")
    func dropAndResume() async throws {
        let scratch = try TransferScratch()
        let size: Int64 = 20_000_000
        let expected = PatternContent.sha256(size: size, seed: 3)
        try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                let destination = scratch.file("f.bin")
                let failure = try await failedDownload("\(server.httpURL)/bytes/\(size)?seed=3&drop_after=7000000", to: destination,
                                                       loop: group.loops[0])
                #expect(failure.metricCode == "eof", "\(failure)")
                let resume = try #require(failure.resumeData)
                #expect(resume.bytesOnDisk == 7_000_000 && resume.totalLength == size && resume.isResumable)
                #expect(!FileManager.default.fileExists(atPath: destination))
                #expect(FileManager.default.fileExists(atPath: resume.partPath))
                // Resume data survives a round trip through its serialized form.
                let restored = try ResumeData(serialized: resume.serialized())
                #expect(restored == resume)
                let result = try await download("\(server.httpURL)/bytes/\(size)?seed=3", to: destination, expected: expected,
                                                resumeData: restored, loop: group.loops[1])
                #expect(result.isResumed && result.bytesReused == 7_000_000 && result.bytesTransferred == size - 7_000_000)
                #expect(result.statuses == [206: 1] && result.restarts == 0)
            }
        }
        #expect(scratch.contents == ["f.bin"])
    }

    @Test("ranged segments cut mid-body retry from where they stopped, with backoff")
    func segmentRetries() async throws {
        let scratch = try TransferScratch()
        let size: Int64 = 8_000_000
        let result = try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                // Every response stops after 1.5 MB: each 2 MB segment needs a second request.
                try await download("\(server.httpURL)/bytes/\(size)?seed=4&drop_after=1500000", to: scratch.file("f"), segments: 4,
                                   expected: PatternContent.sha256(size: size, seed: 4),
                                   configuration: TransferConfiguration(retry: ReconnectPolicy(
                                       initialDelay: .milliseconds(5), maximumDelay: .milliseconds(20), maximumAttempts: 3)),
                                   loop: group.loops[0])
            }
        }
        #expect(result.retries >= 4 && result.bytesTransferred == size)
    }

    @Test("the resource deadline during a segment's backoff stops the download: resource_timeout, no request after it")
    func deadlineDuringSegmentBackoff() async throws {
        let scratch = try TransferScratch()
        let size: Int64 = 4_000_000
        let failure = try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                // Two 2 MB segments, every response cut after 1.5 MB; the backoff (20 s) outlasts the 200 ms deadline,
                // which ends the download when it passes, not when the backoff would have.
                let configuration = TransferConfiguration(
                    resourceTimeout: .milliseconds(200),
                    retry: ReconnectPolicy(initialDelay: .seconds(20), maximumDelay: .seconds(20), jitter: .none,
                                           maximumAttempts: 5))
                let started = ContinuousClock.now
                defer { #expect(ContinuousClock.now - started < .seconds(20), "the deadline cut the backoff short") }
                let failure = try await failedDownload("\(server.httpURL)/bytes/\(size)?seed=4&drop_after=1500000",
                                                       to: scratch.file("f"), segments: 2, configuration: configuration,
                                                       loop: group.loops[0])
                // The probe and the second segment's first request at most: no retry after the deadline.
                #expect(server.statistics.httpRequests.load(ordering: .relaxed) <= 2)
                return failure
            }
        }
        #expect(failure.metricCode == "resource_timeout", "\(failure)")
    }

    @Test("the file changed between attempts: If-Range gets a 200 and the download restarts cleanly")
    func changedFile() async throws {
        let scratch = try TransferScratch()
        try FileManager.default.createDirectory(atPath: scratch.file("served"), withIntermediateDirectories: true)
        let size: Int64 = 6_000_000
        try scratch.writePattern("served/file.bin", size: size, seed: 1)
        var configuration = ServerConfiguration()
        configuration.filesDirectory = scratch.file("served")
        try await withLoopGroup { group in
            try await withEmbeddedServer(configuration, on: group) { server in
                let destination = scratch.file("f.bin")
                let failure = try await failedDownload("\(server.httpURL)/files/file.bin?drop_after=2000000", to: destination,
                                                       loop: group.loops[0])
                let resume = try #require(failure.resumeData)
                #expect(resume.bytesOnDisk == 2_000_000)
                let newDigest = try scratch.writePattern("served/file.bin", size: size, seed: 2)  // same size, new content
                let result = try await download("\(server.httpURL)/files/file.bin", to: destination, expected: newDigest,
                                                resumeData: resume, loop: group.loops[1])
                #expect(result.restarts == 1 && result.bytesTransferred == size && result.statuses == [200: 2])
            }
        }
        #expect(scratch.contents == ["f.bin", "served"])
    }

    @Test("a wrong expected SHA-256 fails with digest_mismatch and leaves nothing at the destination")
    func digestMismatch() async throws {
        let scratch = try TransferScratch()
        let failure = try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                do {
                    _ = try await download("\(server.httpURL)/bytes/1000", to: scratch.file("f"), expected: [UInt8](repeating: 0, count: 32),
                                           loop: group.loops[0])
                    return TransferError(.cancelled, "succeeded")
                } catch let error as TransferError {
                    return error
                }
            }
        }
        #expect(failure.code == .digestMismatch)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("f")))
    }

    @Test("a per-task bandwidth cap paces the download")
    func bandwidthCap() async throws {
        let scratch = try TransferScratch()
        let result = try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                try await download("\(server.httpURL)/bytes/3000000", to: scratch.file("f"),
                                   configuration: TransferConfiguration(bandwidthLimit: 2_000_000), loop: group.loops[0])
            }
        }
        // 3 MB at 2 MB/s, less a 100 ms burst and the last read (256 KiB) that needs no wait: at least 1.2 s.
        // A lower bound only; never an upper one.
        #expect(result.duration >= .milliseconds(1200), "\(result.duration)")
    }
}

@Suite("Uploads", .timeLimit(.minutes(3)))
struct UploadTests {
    @Test("PUT from a file to the embedded sink and to a Python receiver: digest-identical; multipart's file part too")
    func uploads() async throws {
        let scratch = try TransferScratch()
        let size: Int64 = 12_345_678
        let digest = try scratch.writePattern("up.bin", size: size, seed: 9)
        try FileManager.default.createDirectory(atPath: scratch.file("stored"), withIntermediateDirectories: true)
        var configuration = ServerConfiguration()
        configuration.uploadDirectory = scratch.file("stored")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers/upload_receiver.py").path
        let python = try BackgroundProcess(["python3", script])
        defer { python.stop() }
        let port = try #require(python.waitForLine(containing: "listening").flatMap { Int($0.split(separator: " ").last ?? "") })
        try await withLoopGroup { group in
            try await withEmbeddedServer(configuration, on: group) { server in
                let loop = group.loops[0]
                for target in ["\(server.httpURL)/upload/copy.bin", "http://127.0.0.1:\(port)/upload"] {
                    let request = UploadRequest(url: try HTTPURL(target), method: "PUT", file: scratch.file("up.bin"))
                    let result = try await onLoop(loop) { try await UploadTask(request: request, loop: loop).run() }
                    #expect(result.status == 201 && result.bytesSent == size && result.sha256 == digest)
                    let answer = try JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any]
                    #expect(answer?["sha256"] as? String == Crypto.hex(digest), "\(target)")
                    #expect((answer?["bytes"] as? NSNumber)?.int64Value == size)
                }
                #expect(try sha256(ofFile: scratch.file("stored/copy.bin")) == digest)

                var form = MultipartForm()
                form.fields = [.init(name: "note", value: "hello")]
                form.file = (name: "file", fileName: "up.bin", contentType: "application/octet-stream", path: scratch.file("up.bin"))
                let body = scratch.file("form.tmp")
                let length = try form.write(to: body)
                defer { try? FileManager.default.removeItem(atPath: body) }
                let request = UploadRequest(url: try HTTPURL("\(server.httpURL)/upload"), method: "POST", file: body, contentType: form.contentType)
                let result = try await onLoop(loop) { try await UploadTask(request: request, loop: loop).run() }
                #expect(result.status == 200 && result.bytesSent == length)
                let answer = try JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any]
                let parts = try #require(answer?["parts"] as? [[String: Any]])
                #expect(parts.count == 2)
                #expect(parts.last?["filename"] as? String == "up.bin")
                #expect(parts.last?["sha256"] as? String == Crypto.hex(digest))
            }
        }
    }

    @Test("a 5xx is retried with backoff; a 4xx is not")
    func uploadRetries() async throws {
        let scratch = try TransferScratch()
        try scratch.writePattern("up.bin", size: 1000, seed: 1)
        try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                let loop = group.loops[0]
                let policy = ReconnectPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(5), maximumAttempts: 2)
                let failing = UploadRequest(url: try HTTPURL("\(server.httpURL)/upload?fail_rate=1"), file: scratch.file("up.bin"))
                do {
                    _ = try await onLoop(loop) { try await UploadTask(request: failing, configuration: .init(retry: policy), loop: loop).run() }
                    Issue.record("expected a failure")
                } catch let error as TransferError {
                    #expect(error.code == .httpStatus && error.status == 503)
                }
                #expect(server.statistics.httpRequests.load(ordering: .relaxed) == 3)  // the first try and 2 retries
                let wrongMethod = UploadRequest(url: try HTTPURL("\(server.httpURL)/bytes/10"), file: scratch.file("up.bin"))
                do {
                    _ = try await onLoop(loop) { try await UploadTask(request: wrongMethod, configuration: .init(retry: policy), loop: loop).run() }
                    Issue.record("expected a failure")
                } catch let error as TransferError {
                    #expect(error.code == .httpStatus && error.status == 405)
                }
                #expect(server.statistics.httpRequests.load(ordering: .relaxed) == 4)
            }
        }
    }

    @Test("the resource deadline during a backoff stops the upload: resource_timeout, no attempt after the deadline")
    func deadlineDuringBackoff() async throws {
        let scratch = try TransferScratch()
        try scratch.writePattern("up.bin", size: 1000, seed: 1)
        try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                let loop = group.loops[0]
                // Every attempt gets a 503; the backoff (20 s, no jitter) outlasts the 100 ms resource deadline, which
                // ends the upload when it passes, not when the backoff would have.
                let configuration = TransferConfiguration(
                    resourceTimeout: .milliseconds(100),
                    retry: ReconnectPolicy(initialDelay: .seconds(20), maximumDelay: .seconds(20), jitter: .none,
                                           maximumAttempts: 10))
                let started = ContinuousClock.now
                defer { #expect(ContinuousClock.now - started < .seconds(20), "the deadline cut the backoff short") }
                let failing = UploadRequest(url: try HTTPURL("\(server.httpURL)/upload?fail_rate=1"), file: scratch.file("up.bin"))
                do {
                    _ = try await onLoop(loop) { try await UploadTask(request: failing, configuration: configuration, loop: loop).run() }
                    Issue.record("expected a failure")
                } catch let error as TransferError {
                    #expect(error.code == .resourceTimeout, "\(error)")
                }
                // The first attempt (or none, when the deadline cut it before the request arrived), never a retry.
                #expect(server.statistics.httpRequests.load(ordering: .relaxed) <= 1)
            }
        }
    }
}

@Suite("Downloads from nginx", .timeLimit(.minutes(3)))
struct NginxDownloadTests {
    @Test("a 256 MiB file from nginx: single stream, 4 and 16 segments, byte-identical; a resume after a cut")
    func nginxDownloads() async throws {
        let scratch = try TransferScratch()
        try FileManager.default.createDirectory(atPath: scratch.file("root"), withIntermediateDirectories: true)
        let size: Int64 = 256 << 20
        let digest = try scratch.writePattern("root/big.bin", size: size, seed: 11)
        let nginx = try NginxServer(root: scratch.file("root"))
        defer { nginx.stop() }
        try await withLoopGroup { group in
            let loop = group.loops[0]
            for segments in [1, 4, 16] {
                let destination = scratch.file("copy-\(segments).bin")
                let result = try await download("\(nginx.url)/big.bin", to: destination, segments: segments, expected: digest, loop: loop)
                #expect(result.segments == segments && result.bytesTransferred == size && !result.isRangeFallback)
                #expect(result.statuses[segments == 1 ? 200 : 206] == segments)
                try FileManager.default.removeItem(atPath: destination)
            }
            // A resume from nginx: keep the first 100 MB of a partial file, then continue with If-Range.
            let part = scratch.file("resumed.bin.wsload-part")
            let source = try DataFile.open(scratch.file("root/big.bin"), mode: .read)
            let output = try DataFile.open(part, mode: .createNew)
            var buffer: [UInt8] = []
            for offset in stride(from: Int64(0), to: 100_000_000, by: 4_000_000) {
                try source.read(into: &buffer, count: 4_000_000, at: offset)
                try output.write(buffer[...], at: offset)
            }
            source.close()
            output.close()
            // The validators nginx sends for the file (what a first attempt would have recorded).
            let head = try await onLoop(loop) { () -> HTTPResponseHead in
                let connection = try await HTTPClientConnection.connect(to: try HTTPURL(nginx.url), configuration: .init(), on: loop)
                defer { connection.close() }
                try await connection.send(connection.requestHead(method: "HEAD", url: try HTTPURL("\(nginx.url)/big.bin")))
                return try await connection.readResponseHead()
            }
            let resume = ResumeData(url: "\(nginx.url)/big.bin", destination: scratch.file("resumed.bin"), partPath: part,
                                    validators: Validators(headers: head.headers), totalLength: size,
                                    segments: [SegmentProgress(first: 0, last: size - 1, received: 100_000_000)])
            #expect(resume.validators.entityTag != nil)
            let result = try await download("\(nginx.url)/big.bin", to: scratch.file("resumed.bin"), expected: digest,
                                            resumeData: resume, loop: loop)
            #expect(result.bytesTransferred == size - 100_000_000 && result.statuses == [206: 1] && result.isResumed)
        }
        #expect(scratch.contents == ["resumed.bin", "root"])
    }
}

/// A server that answers every request on every connection with `respond(request)` and then closes (or
/// stalls when the response is nil), for hostile-response tests.
private func withCannedServer<T: Sendable>(
    on loop: EventLoop, respond: @escaping @Sendable (HTTPRequestHead) -> [UInt8]?, _ body: @Sendable (String) async throws -> T
) async throws -> T {
    let listener = try await loop.submit { try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop) }
    let server = Task(executorPreference: loop.taskExecutor) {
        await withDiscardingTaskGroup { connections in
            while let connection = try? await listener.accept() {
                connections.addTask(executorPreference: loop.taskExecutor) {
                    defer { connection.close() }
                    var parser = HTTPHeadParser()
                    var buffer: [UInt8] = []
                    while let count = try? await connection.read(into: &buffer), count > 0 {
                        guard let (request, _) = try? parser.parseRequest(buffer) else { continue }
                        guard let response = respond(request) else {
                            try? await loop.sleep(for: .seconds(10))
                            return
                        }
                        try? await connection.write(response)
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
    let result = try await body("http://127.0.0.1:\(listener.localAddress.port)")
    server.cancel()
    listener.close()
    await server.value
    return result
}

@Suite("Hostile HTTP servers", .timeLimit(.minutes(3)))
struct HostileTransferTests {
    @Test("hostile responses fail cleanly with a stable code and leave no file at the destination", arguments: [
        ("HTTP/1.1 200 OK\r\nX-Huge: " + String(repeating: "a", count: 100_000) + "\r\n\r\n", 1, "http_protocol", "exceeds"),
        ("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello", 1, "http_protocol", "Content-Length"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nhello", 1, "http_protocol", "63-bit"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabc", 1, "http_protocol", "conflicting"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", 1, "http_protocol", "chunk size"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", 1, "http_protocol", "too large"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", 1, "eof", "91 of the body's bytes missing"),
        ("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 5-9/10\r\nContent-Length: 5\r\n\r\nhello", 2, "content_range_mismatch", "got bytes 5-9/10"),
        ("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/10\r\nContent-Length: 4\r\n\r\nhell", 2, "content_range_mismatch", "Content-Length 4"),
        ("HTTP/1.1 206 Partial Content\r\nContent-Length: 4\r\n\r\nhell", 2, "content_range_mismatch", "without a valid Content-Range"),
        ("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot here\n", 1, "http_status", "404"),
        ("HTTP/1.1 302 Found\r\nLocation: /again\r\nContent-Length: 0\r\n\r\n", 1, "too_many_redirects", "more than 5 redirects"),
        ("HTTP/1.1 302 Found\r\nLocation: ftp://elsewhere/\r\nContent-Length: 0\r\n\r\n", 1, "http_status", "leaves http"),
        ("HTTP/9.9 200 OK\r\n\r\n", 1, "http_protocol", "not HTTP/1.x"),
    ])
    func hostile(response: String, segments: Int, code: String, detail: String) async throws {
        let scratch = try TransferScratch()
        let failure = try await withLoopGroup { group in
            let loop = group.loops[0]
            return try await withCannedServer(on: loop, respond: { _ in Array(response.utf8) }) { url in
                try await failedDownload(url + "/file", to: scratch.file("f"), segments: segments, loop: loop)
            }
        }
        #expect(failure.metricCode == code, "\(failure)")
        #expect(failure.detail.contains(detail), "\(failure)")
        #expect(!FileManager.default.fileExists(atPath: scratch.file("f")))
    }

    @Test("a server that stalls after the head fails with timeout after the request timeout")
    func stall() async throws {
        let scratch = try TransferScratch()
        let failure = try await withLoopGroup { group in
            let loop = group.loops[0]
            return try await withCannedServer(on: loop, respond: { _ in nil }) { url in
                try await failedDownload(url + "/file", to: scratch.file("f"), configuration: TransferConfiguration(
                    requestTimeout: .milliseconds(300), retry: ReconnectPolicy(maximumAttempts: 0)), loop: loop)
            }
        }
        #expect(failure.metricCode == "timeout", "\(failure)")
    }

    @Test("redirects are followed to the file (relative Location), and the request sent carries no token in reports")
    func redirect() async throws {
        let scratch = try TransferScratch()
        let seen = RequestLog()
        let result = try await withLoopGroup { group in
            let loop = group.loops[0]
            return try await withCannedServer(on: loop, respond: { request in
                seen.append(request)
                if request.target == "/start" { return Array("HTTP/1.1 301 Moved\r\nLocation: file\r\nContent-Length: 0\r\n\r\n".utf8) }
                return Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"x\"\r\n\r\nhello".utf8)
            }) { url in
                try await download(url + "/start", to: scratch.file("f"), configuration: TransferConfiguration(bearerToken: "s3cret"),
                                   loop: loop)
            }
        }
        #expect(result.length == 5 && result.statuses == [301: 1, 200: 1])
        #expect(seen.targets == ["/start", "/file"])
        #expect(seen.authorization == ["Bearer s3cret", "Bearer s3cret"])
        #expect(try String(contentsOfFile: scratch.file("f"), encoding: .utf8) == "hello")
    }
}

final class RequestLog: @unchecked Sendable {
    private let lock = NSLock()
    private var requests: [HTTPRequestHead] = []
    func append(_ request: HTTPRequestHead) { lock.withLock { requests.append(request) } }
    var targets: [String] { lock.withLock { requests.map(\.target) } }
    var requestHeads: [HTTPRequestHead] { lock.withLock { requests } }
    var authorization: [String] { lock.withLock { requests.compactMap { $0.headers["Authorization"] } } }
}

@Suite("Download options", .timeLimit(.minutes(3)))
struct DownloadOptionTests {
    @Test("https with the test CA verifies; without it the download fails with tls_verify and leaves nothing")
    func https() async throws {
        let certificates = try TestCertificates.shared.get()
        let scratch = try TransferScratch()
        var configuration = ServerConfiguration()
        configuration.tls = try TLSContext(role: .server, configuration: TLSConfiguration(
            certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
        try await withLoopGroup { group in
            try await withEmbeddedServer(configuration, on: group) { server in
                let url = "https://localhost:\(server.localAddress.port)/bytes/3000000?seed=8"
                let trusted = TransferConfiguration(tls: try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile)))
                let result = try await download(url, to: scratch.file("s.bin"), segments: 2, expected: PatternContent.sha256(size: 3_000_000, seed: 8),
                                                configuration: trusted, loop: group.loops[0])
                #expect(result.segments == 2 && result.length == 3_000_000)
                let failure = try await failedDownload(url, to: scratch.file("u.bin"), loop: group.loops[0])
                #expect(failure.metricCode == "tls_verify", "\(failure)")
            }
        }
        #expect(scratch.contents == ["s.bin"])
    }

    @Test("resume data for a stream that had in fact finished: the 416 completes it without fetching a byte")
    func rangeNotSatisfiableCompletes() async throws {
        let scratch = try TransferScratch()
        let size: Int64 = 100_000
        let part = scratch.file("f.bin.wsload-part")
        let file = try DataFile.open(part, mode: .createNew)
        var buffer: [UInt8] = []
        PatternContent.fill(&buffer, count: Int(size), offset: 0, seed: 0)
        try file.write(buffer[...], at: 0)
        file.close()
        let result = try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                // A single stream of unknown length with every byte on disk (the server's validators for /bytes/100000).
                let resume = ResumeData(url: "\(server.httpURL)/bytes/\(size)", destination: scratch.file("f.bin"), partPath: part,
                                        validators: Validators(entityTag: EntityTag(opaque: "p-\(size)-0")), totalLength: nil,
                                        segments: [SegmentProgress(first: 0, last: nil, received: size)])
                return try await download("\(server.httpURL)/bytes/\(size)", to: scratch.file("f.bin"),
                                          expected: PatternContent.sha256(size: size, seed: 0), resumeData: resume, loop: group.loops[0])
            }
        }
        #expect(result.bytesTransferred == 0 && result.statuses == [416: 1] && result.length == size)
    }

    @Test("resource timeout ends a slow transfer with resource_timeout and resume data; earliestBeginDate delays the start")
    func timeouts() async throws {
        let scratch = try TransferScratch()
        try await withLoopGroup { group in
            try await withEmbeddedServer(on: group) { server in
                let slow = TransferConfiguration(resourceTimeout: .milliseconds(500), retry: ReconnectPolicy(maximumAttempts: 0))
                let failure = try await failedDownload("\(server.httpURL)/bytes/10000000?throttle=2000000", to: scratch.file("slow.bin"),
                                                       configuration: slow, loop: group.loops[0])
                #expect(failure.metricCode == "resource_timeout", "\(failure)")
                #expect((failure.resumeData?.bytesOnDisk ?? 0) > 0)
                let loop = group.loops[0]
                let beginDate = WallClock.secondsSince1970() + 0.4
                let request = DownloadRequest(url: try HTTPURL("\(server.httpURL)/bytes/10"), destination: scratch.file("late.bin"),
                                              earliestBeginDate: beginDate)
                let result = try await onLoop(loop) { try await DownloadTask(request: request, loop: loop).run() }
                // Not before the date, whatever the box's speed: a starved loop that starts the task late must not
                // make a correct wait look short (it did: a 335 ms duration on a busy box).
                let finished = WallClock.secondsSince1970()
                #expect(finished >= beginDate, "finished \(beginDate - finished) s before the begin date (\(result.duration))")
            }
        }
    }
}

@Suite("Embedded server chaos actions", .timeLimit(.minutes(3)))
struct ServerChaosActionTests {
    /// Connects `count` clients, applies `action`, and returns the close codes the clients saw (the spared
    /// ones are closed by the client afterwards: 1000).
    private func closeCodes(after action: ServerChaosAction, count: Int) async throws -> (affected: Int, codes: [UInt16]) {
        try await withLoopGroup(loopCount: 1) { group in
            try await withEmbeddedServer(on: group) { server in
                let loop = group.loops[0]
                let managers = try (0..<count).map { _ in WebSocketManager(url: try WebSocketURL(server.url), loop: loop) }
                return try await withThrowingTaskGroup(of: Void.self) { readers in
                    for manager in managers {
                        readers.addTask(executorPreference: loop.taskExecutor) { await manager.run() }
                    }
                    try await waitUntil { server.statistics.active.load(ordering: .relaxed) == count }
                    let affected = await server.perform(action, seed: 1)
                    // Let the affected clients see their close, then close the rest ourselves.
                    try await Deadline.waitUntil("\(affected) clients to see the server's \(action)") {
                        var closed = 0
                        for manager in managers where await manager.closeCode != nil { closed += 1 }
                        return closed == affected
                    }
                    for manager in managers { try await onLoop(loop) { await manager.disconnect() } }
                    try await readers.waitForAll()
                    var codes: [UInt16] = []
                    for manager in managers { codes.append(await manager.closeCode?.rawValue ?? 0) }
                    return (affected, codes.sorted())
                }
            }
        }
    }

    @Test("close with a code hits exactly its share; kill and reset end in 1006")
    func actions() async throws {
        let closed = try await closeCodes(after: .close(code: WebSocketCloseCode(rawValue: 1012), fraction: 0.5), count: 6)
        #expect(closed.affected == 3 && closed.codes == [1000, 1000, 1000, 1012, 1012, 1012], "\(closed)")
        let killed = try await closeCodes(after: .kill(fraction: 1), count: 4)
        #expect(killed.affected == 4 && killed.codes == [1006, 1006, 1006, 1006], "\(killed)")
        let reset = try await closeCodes(after: .reset(fraction: 0.25), count: 4)
        #expect(reset.affected == 1 && reset.codes == [1000, 1000, 1000, 1006], "\(reset)")
    }
}

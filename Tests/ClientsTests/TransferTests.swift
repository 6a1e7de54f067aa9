import Clients
import Crypto
import EmbeddedServer
import Foundation
import HTTP1
import Runtime
import TestSupport
import Testing

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

@Suite("Downloads against the embedded server")
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

@Suite("Uploads")
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
}

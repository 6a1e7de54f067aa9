import Crypto
import EmbeddedServer
import Foundation
import Profile
import TestSupport
import Testing

/// curl (a third-party client) with `arguments`; returns its exit status, stdout and stderr.
private func curl(_ arguments: [String]) async throws -> (status: Int32, output: String, errors: String) {
    try await ChildProcess.run(["/usr/bin/curl", "--silent", "--show-error", "--max-time", "30"] + arguments)
}

/// `size` bytes of pattern content written to `path`.
private func writePattern(_ path: String, size: Int, seed: UInt64) throws -> [UInt8] {
    var bytes: [UInt8] = []
    PatternContent.fill(&bytes, count: size, offset: 0, seed: seed)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return bytes
}

private func contents(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

@Suite("wsload serve options (child process)", .serialized, .timeLimit(.minutes(2)))
struct ServeOptionsTests {
    @Test("--files DIR serves a file whole and by range (curl); a missing name is 404")
    func files() async throws {
        let scratch = try DownloadScratch()
        try FileManager.default.createDirectory(atPath: scratch.file("files"), withIntermediateDirectories: false)
        let bytes = try writePattern(scratch.file("files/a.bin"), size: 300_000, seed: 21)
        let serve = try await ServeChild(["--files", scratch.file("files")])
        defer { serve.child.stop() }
        let whole = try await curl(["-o", scratch.file("whole"), "-w", "%{http_code}", "\(serve.httpURL)/files/a.bin"])
        #expect(whole.status == 0 && whole.output == "200", "\(whole)")
        #expect(try contents(scratch.file("whole")) == bytes)
        let range = try await curl(["-o", scratch.file("range"), "-w", "%{http_code}", "-r", "1000-1999", "\(serve.httpURL)/files/a.bin"])
        #expect(range.status == 0 && range.output == "206", "\(range)")
        #expect(try contents(scratch.file("range")) == Array(bytes[1000..<2000]))
        let missing = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "\(serve.httpURL)/files/missing.bin"])
        #expect(missing.status == 0 && missing.output == "404", "\(missing)")
        try await serve.stop()
    }

    @Test("--upload-dir DIR stores an upload (curl -T) with exactly the bytes sent, and answers their SHA-256")
    func uploadDirectory() async throws {
        let scratch = try DownloadScratch()
        try FileManager.default.createDirectory(atPath: scratch.file("stored"), withIntermediateDirectories: false)
        let bytes = try writePattern(scratch.file("up.bin"), size: 250_000, seed: 22)
        let serve = try await ServeChild(["--upload-dir", scratch.file("stored")])
        defer { serve.child.stop() }
        let upload = try await curl(["-T", scratch.file("up.bin"), "-w", "\n%{http_code}", "\(serve.httpURL)/upload/kept.bin"])
        #expect(upload.status == 0 && upload.output.hasSuffix("\n201"), "\(upload)")
        #expect(upload.output.contains("\"sha256\":\"\(Crypto.hex(Crypto.sha256(bytes)))\""), "\(upload.output)")
        try await serve.stop()
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.file("stored")) == ["kept.bin"])
        #expect(try contents(scratch.file("stored/kept.bin")) == bytes)
    }

    @Test("--http-no-ranges answers a range request with 200 and the whole file; wsload download falls back to one stream")
    func noRanges() async throws {
        let scratch = try DownloadScratch()
        let serve = try await ServeChild(["--http-no-ranges"])
        defer { serve.child.stop() }
        let url = "\(serve.httpURL)/bytes/300000?seed=23"
        let ranged = try await curl(["-o", scratch.file("r"), "-D", scratch.file("headers"), "-w", "%{http_code}", "-r", "0-99", url])
        #expect(ranged.status == 0 && ranged.output == "200", "\(ranged)")
        #expect(try contents(scratch.file("r")).count == 300_000)
        #expect(try String(contentsOfFile: scratch.file("headers"), encoding: .utf8).lowercased().contains("accept-ranges: none"))
        let expected = Crypto.hex(PatternContent.sha256(size: 300_000, seed: 23))
        let download = try await ChildProcess.run([wsloadExecutable, "download", url, "-o", scratch.file("d"), "--segments", "3",
                                                   "--min-segment", "64k", "--sha256", expected])
        #expect(download.status == 0, "\(download.errors)")
        #expect(download.output.contains("(the server ignores ranges: one stream)"), "\(download.output)")
        try await serve.stop()
    }

    @Test("--http-drop-after N closes each response after exactly N body bytes (curl sees a short transfer)")
    func dropAfter() async throws {
        let scratch = try DownloadScratch()
        let serve = try await ServeChild(["--http-drop-after", "1000"])
        defer { serve.child.stop() }
        let cut = try await curl(["-o", scratch.file("cut"), "\(serve.httpURL)/bytes/100000?seed=24"])
        #expect(cut.status == 18, "curl's 'partial file': \(cut)")
        var expected: [UInt8] = []
        PatternContent.fill(&expected, count: 1000, offset: 0, seed: 24)
        #expect(try contents(scratch.file("cut")) == expected)
        try await serve.stop()
    }

    @Test("--http-throttle paces bodies: 200 kB at 100K takes at least 1.5 s")
    func throttle() async throws {
        let serve = try await ServeChild(["--http-throttle", "100K"])
        defer { serve.child.stop() }
        let start = ContinuousClock.now
        let slow = try await curl(["-o", "/dev/null", "-w", "%{size_download}", "\(serve.httpURL)/bytes/200000"])
        let elapsed = ContinuousClock.now - start
        #expect(slow.status == 0 && slow.output == "200000", "\(slow)")
        // ~1.9 s at the cap; unthrottled it takes milliseconds. A lower bound only.
        #expect(elapsed >= .milliseconds(1500), "200 kB at --http-throttle 100K arrived in \(elapsed)")
        try await serve.stop()
    }

    @Test("--http-fail-rate 1 answers every request 503")
    func failRate() async throws {
        let serve = try await ServeChild(["--http-fail-rate", "1"])
        defer { serve.child.stop() }
        for _ in 0..<3 {
            let failed = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "\(serve.httpURL)/bytes/10"])
            #expect(failed.status == 0 && failed.output == "503", "\(failed)")
        }
        try await serve.stop()
    }

    @Test("--host 127.0.0.2 listens there: reachable on 127.0.0.2, refused on 127.0.0.1 at the same port")
    func host() async throws {
        let serve = try await ServeChild(["--host", "127.0.0.2"])
        defer { serve.child.stop() }
        let port = try #require(serve.httpURL.split(separator: ":").last.flatMap { Int($0) })
        #expect(serve.httpURL == "http://127.0.0.2:\(port)")
        let there = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.2:\(port)/bytes/10"])
        #expect(there.status == 0 && there.output == "200", "\(there)")
        let elsewhere = try await curl(["-o", "/dev/null", "http://127.0.0.1:\(port)/bytes/10"])
        #expect(elsewhere.status == 7, "curl's 'could not connect': \(elsewhere)")
        try await serve.stop()
    }
}

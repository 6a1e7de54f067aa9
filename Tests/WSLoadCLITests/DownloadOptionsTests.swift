import Clients
import Crypto
import EmbeddedServer
import Foundation
import HTTP1
import Profile
import Runtime
import TestSupport
import Testing

private struct TransferCheckFailure: Error, CustomStringConvertible {
    var description: String
}

/// A download and an upload with `bandwidthLimit: 0` through the public API, which documents 0 as "no cap".
/// Run in an exit test: a cap of 0 that traps (a precondition) would otherwise kill the whole test process.
private func transfersWithZeroBandwidthLimit() async throws {
    let scratch = try DownloadScratch()
    let size: Int64 = 1_000_000
    try await withDownloadServer { server, group in
        let loop = group.loops[0]
        let configuration = TransferConfiguration(bandwidthLimit: 0)
        let url = try HTTPURL("\(server.httpURL)/bytes/\(size)?seed=4")
        let destination = scratch.file("zero.bin")
        let download = try await onLoop(loop) {
            try await DownloadTask(request: DownloadRequest(url: url, destination: destination, computesDigest: true),
                                   configuration: configuration, loop: loop).run()
        }
        guard download.length == size, download.sha256 == PatternContent.sha256(size: size, seed: 4) else {
            throw TransferCheckFailure(description: "download: \(download.length) bytes, sha256 \(download.sha256.map(Crypto.hex) ?? "none")")
        }
        let uploadURL = try HTTPURL("\(server.httpURL)/upload")
        let upload = try await onLoop(loop) {
            try await UploadTask(request: UploadRequest(url: uploadURL, file: destination), configuration: configuration, loop: loop).run()
        }
        guard upload.status == 201, upload.bytesSent == size, upload.sha256 == PatternContent.sha256(size: size, seed: 4) else {
            throw TransferCheckFailure(description: "upload: status \(upload.status), \(upload.bytesSent) bytes sent")
        }
    }
}

/// The most established TCP connections to `port` on loopback seen at once (`ss`, iproute2: the kernel's
/// view, not the client's), sampled from a thread of its own until `process` exits.
private func peakEstablishedConnections(to port: Int, while process: SpawnedProcess) -> () async -> Int {
    // The sampling thread starts here, synchronously: as an `async let` child it could wait on a busy cooperative
    // pool (two threads here, shared with every other suite) until the download was over, and see nothing.
    let peak = Lock(0)
    let finished = DispatchSemaphore(value: 0)
    Thread {
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning && ContinuousClock.now < deadline {
            // Client-side sockets only (their destination is the server's port). A failed sample is skipped:
            // the next one, 10 ms later, counts the same connections.
            if let sample = try? TestProcess.runWithStatus(["ss", "-Htn", "state", "established", "dst", "127.0.0.1:\(port)"]),
                sample.status == 0
            {
                let count = sample.output.split(separator: "\n").count
                peak.withLock { $0 = max($0, count) }
            }
            usleep(10_000)
        }
        finished.signal()
    }.start()
    return {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            Thread {
                finished.wait()
                continuation.resume(returning: peak.withLock { $0 })
            }.start()
        }
    }
}

/// A TCP socket on 127.0.0.1 bound to a free port, listening (the kernel completes handshakes, nobody answers)
/// or not (a connect is refused); closed by the caller.
private func loopbackSocket(listening: Bool) throws -> (descriptor: Int32, port: Int) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    try #require(descriptor >= 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let isBound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
        }
    }
    try #require(isBound && (!listening || listen(descriptor, 16) == 0))
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}

/// `wsload download`'s transfer options, checked by what the server saw and by the clock (lower bounds only).
@Suite("wsload download options", .serialized, .timeLimit(.minutes(2)))
struct DownloadOptionsTests {
    @Test("--limit-rate caps the transfer: 1 MiB at 200K takes at least 3 s, and arrives intact")
    func limitRate() async throws {
        let scratch = try DownloadScratch()
        let size: Int64 = 1 << 20
        let expected = Crypto.hex(PatternContent.sha256(size: size, seed: 9))
        try await withDownloadServer { server, _ in
            let start = ContinuousClock.now
            let result = try await ChildProcess.run([wsloadExecutable,
                "download", "\(server.httpURL)/bytes/\(size)?seed=9", "-o", scratch.file("r.bin"), "--limit-rate", "200K",
                "--sha256", expected,
            ])
            let elapsed = ContinuousClock.now - start
            #expect(result.status == 0, "\(result.errors)")
            // 1 MiB at 200 KB/s is 5 s; less the limiter's 100 ms burst and a last read (up to 256 KiB) that
            // needs no wait, still more than 3.7 s. Unthrottled, loopback delivers it in milliseconds.
            // A lower bound only: a slow box only makes it longer.
            #expect(elapsed >= .seconds(3), "1 MiB at --limit-rate 200K took only \(elapsed)")
        }
        #expect(try sha256Hex(ofFile: scratch.file("r.bin")) == expected)
    }

    @Test("--connections M: at most M connections at once, and M really used, for a download split into more segments",
          arguments: [2, 3])
    func connections(count: Int) async throws {
        let scratch = try DownloadScratch()
        let size: Int64 = 3 << 20
        let expected = Crypto.hex(PatternContent.sha256(size: size, seed: 10))
        try await withDownloadServer { server, _ in
            // Each range throttled to 500 kB/s: all the connections stay open together for 2 s or more, long enough to be seen.
            let child = try ChildProcess.wsload([
                "download", "\(server.httpURL)/bytes/\(size)?seed=10&throttle=500000", "-o", scratch.file("c.bin"), "--segments", "6",
                "--connections", String(count), "--min-segment", "256k", "--sha256", expected,
            ])
            defer { child.stop() }
            let peak = peakEstablishedConnections(to: server.localAddress.port, while: child.process)
            let status = try #require(try await child.exitStatus(within: .seconds(60)), "the download did not end within 60 s")
            #expect(status == 0, "\(child.errors)")
            let observed = await peak()
            #expect(observed == count, "at most \(observed) connections were open at once, for --connections \(count)")
            #expect(child.output.contains("6 segments over "), "\(child.output)")
        }
        #expect(try sha256Hex(ofFile: scratch.file("c.bin")) == expected)
    }

    @Test("a bandwidth cap of 0 means no cap: a download and an upload complete instead of trapping")
    func zeroBandwidthLimit() async {
        await #expect(processExitsWith: .success) {
            try await transfersWithZeroBandwidthLimit()
        }
    }

    @Test("a refused connection fails with exit 1 naming refused; a server that never answers, with timeout after --timeout")
    func networkFailureCodes() async throws {
        let scratch = try DownloadScratch()
        // Bound but not listening: the SYN is answered with RST (and no other test can take the port meanwhile).
        let closed = try loopbackSocket(listening: false)
        defer { close(closed.descriptor) }
        let refused = try await ChildProcess.run([wsloadExecutable, "download", "http://127.0.0.1:\(closed.port)/x", "-o", scratch.file("x"),
                                                  "--retries", "0"])
        #expect(refused.status == 1, "\(refused.errors)")
        #expect(refused.errors.contains("Error: refused"), "\(refused.errors)")
        // Listening, never accepting: the request is sent and nothing ever comes back.
        let silent = try loopbackSocket(listening: true)
        defer { close(silent.descriptor) }
        let start = ContinuousClock.now
        let timedOut = try await ChildProcess.run([wsloadExecutable, "download", "http://127.0.0.1:\(silent.port)/x", "-o", scratch.file("x"),
                                                   "--retries", "0", "--timeout", "500ms"])
        #expect(timedOut.status == 1, "\(timedOut.errors)")
        #expect(timedOut.errors.contains("Error: timeout"), "\(timedOut.errors)")
        #expect(ContinuousClock.now - start >= .milliseconds(450), "it gave up before its --timeout")
        #expect(scratch.contents.isEmpty, "\(scratch.contents)")
    }

    @Test("--limit-rate 0 is a usage error, not a trap")
    func zeroLimitRate() async throws {
        let result = try await ChildProcess.run([wsloadExecutable, "download", "http://127.0.0.1:9/x", "-o", "/tmp/unused", "--limit-rate", "0"])
        #expect(result.status == 64, "\(result.errors)")
        #expect(result.errors.contains("--limit-rate must be more than 0"), "\(result.errors)")
    }
}

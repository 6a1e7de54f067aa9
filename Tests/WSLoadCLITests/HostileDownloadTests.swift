import Clients
import Foundation
import HTTP1
import Runtime
import TestSupport
import Testing
import WSLoadCLI


@Suite("wsload download against hostile servers: exit 1, the code named, resume data kept", .serialized, .timeLimit(.minutes(2)))
struct HostileDownloadTests {
    @Test("a TLS EOF without close_notify mid-body: exit 1 naming truncated_body, FILE never appears, resume data kept")
    func tlsEOFMidBody() async throws {
        let certificates = try TestCertificates.shared.get()
        let tls = try TLSContext(role: .server, configuration: TLSConfiguration(
            certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
        let scratch = try DownloadScratch()
        let response = Array("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n".utf8) + [UInt8](repeating: 0x41, count: 1000)
        let result = try await withCannedHTTPServer(tls: tls, response: response) { port in
            await runCLI("download", "https://localhost:\(port)/f", "-o", scratch.file("f"), "--ca-file", certificates.caFile,
                         "--retries", "0", "--quiet")
        }
        #expect(result.code == .failure, "\(result.code): \(result.error)")
        #expect(result.error.contains("truncated_body"), "\(result.error)")
        #expect(try scratch.resumeData(of: "f").bytesOnDisk == 1000)
        #expect(!scratch.contents.contains("f"), "\(scratch.contents)")
    }

    @Test("a 1xx flood and a stalled head: exit 1 naming http_protocol and timeout, before the server gives up")
    func floodAndTrickle() async throws {
        let scratch = try DownloadScratch()
        let flood = try await withCannedHTTPServer(response: Array(String(repeating: "HTTP/1.1 103 Early Hints\r\n\r\n", count: 5000).utf8),
                                                 linger: .seconds(15)) { port in
            await runCLI("download", "http://127.0.0.1:\(port)/f", "-o", scratch.file("a"), "--retries", "0", "--quiet")
        }
        #expect(flood.code == .failure && flood.error.contains("http_protocol") && flood.error.contains("interim"), "\(flood.error)")
        // A head that stops midway and is then held open for 15 s: the --timeout ends the wait (the trickle that
        // keeps the idle watchdog quiet is HostileTransferServerTests.headTrickle).
        let stalled = try await withCannedHTTPServer(response: Array(("HTTP/1.1 200 OK\r\nX-Slow: " + String(repeating: "a", count: 1000)).utf8),
                                                   linger: .seconds(15)) { port in
            await runCLI("download", "http://127.0.0.1:\(port)/f", "-o", scratch.file("b"), "--retries", "0", "--timeout", "500ms",
                         "--quiet")
        }
        #expect(stalled.code == .failure && stalled.error.contains("timeout"), "\(stalled.error)")
        #expect(scratch.contents.isEmpty, "\(scratch.contents)")
    }
}

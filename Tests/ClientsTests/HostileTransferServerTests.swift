import Clients
import Crypto
import Foundation
import HTTP1
import Lifecycle
import Runtime
import TestSupport
import Testing

/// What a scripted server does with one request on one connection (see ``HTTPServerScript``).
typealias HostileScript = HTTPServerScript

/// ``withScriptedHTTPServer(on:tls:script:_:)``, recording every request in `log`.
private func withHostileServer<T: Sendable>(
    on loop: EventLoop, tls: TLSContext? = nil, log: RequestLog = RequestLog(), script: @escaping HostileScript,
    _ body: @Sendable (_ port: Int) async throws -> T
) async throws -> T {
    try await withScriptedHTTPServer(on: loop, tls: tls, script: { request, stream, loop in
        log.append(request)
        try await script(request, stream, loop)
    }, body)
}

/// A download expected to fail, with retries off: its error.
private func failingDownload(
    _ url: String, to destination: String, configuration: TransferConfiguration, loop: EventLoop
) async throws -> TransferError {
    var adjusted = configuration
    adjusted.retry = ReconnectPolicy(maximumAttempts: 0)
    let configuration = adjusted
    let request = DownloadRequest(url: try HTTPURL(url), destination: destination)
    do {
        let result = try await onLoop(loop) {
            try await DownloadTask(request: request, configuration: configuration, loop: loop).run()
        }
        Issue.record("the download succeeded: \(result.length) bytes")
        return TransferError(.network, "succeeded")
    } catch let error as TransferError {
        return error
    }
}

private func respond(_ text: String) -> HostileScript {
    { _, stream, _ in try await stream.write(Array(text.utf8)) }
}

@Suite("Hostile HTTP servers: floods, trickles, cut TLS, cross-origin redirects", .serialized, .timeLimit(.minutes(3)))
struct HostileTransferServerTests {
    @Test("a redirect to another origin drops Authorization, Cookie, X-Api-Key and the profile's credential header")
    func crossOriginRedirectDropsCredentials() async throws {
        let scratch = try TransferScratch()
        let first = RequestLog()
        let second = RequestLog()
        var built = TransferConfiguration(bearerToken: "s3cret")
        built.headers.add(name: "Cookie", value: "session=1")
        built.headers.add(name: "X-Api-Key", value: "k")
        built.headers.add(name: "X-Tenant", value: "t-secret")
        built.credentialHeaderNames = ["x-tenant"]
        built.headers.add(name: "X-Trace", value: "plain")
        let configuration = built
        let result = try await withLoopGroup { group in
            let loop = group.loops[0]
            return try await withHostileServer(on: loop, log: second, script: respond(
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"x\"\r\n\r\nhello")) { target in
                try await withHostileServer(on: loop, log: first, script: respond(
                    "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:\(target)/file\r\nContent-Length: 0\r\n\r\n")) { start in
                    let request = DownloadRequest(url: try HTTPURL("http://127.0.0.1:\(start)/start"), destination: scratch.file("f"))
                    return try await onLoop(loop) {
                        try await DownloadTask(request: request, configuration: configuration, loop: loop).run()
                    }
                }
            }
        }
        #expect(result.length == 5)
        #expect(first.authorization == ["Bearer s3cret"])
        #expect(first.header("Cookie") == ["session=1"] && first.header("X-Tenant") == ["t-secret"])
        #expect(second.targets == ["/file"])
        #expect(second.authorization.isEmpty, "the token crossed origins")
        #expect(second.header("Cookie").isEmpty && second.header("X-Api-Key").isEmpty && second.header("X-Tenant").isEmpty)
        #expect(second.header("X-Trace") == ["plain"])
    }

    @Test("a redirect from https to http is refused with insecure_redirect; the http server gets no request")
    func httpsToHTTPRefused() async throws {
        let certificates = try TestCertificates.shared.get()
        let serverTLS = try TLSContext(role: .server, configuration: TLSConfiguration(
            certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
        let scratch = try TransferScratch()
        let plain = RequestLog()
        let configuration = TransferConfiguration(
            tls: try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile)), bearerToken: "s3cret")
        let failure = try await withLoopGroup { group in
            let loop = group.loops[0]
            return try await withHostileServer(on: loop, log: plain, script: respond("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) { http in
                try await withHostileServer(on: loop, tls: serverTLS, script: respond(
                    "HTTP/1.1 301 Moved\r\nLocation: http://127.0.0.1:\(http)/f?sig=abc\r\nContent-Length: 0\r\n\r\n")) { https in
                    try await failingDownload("https://localhost:\(https)/f", to: scratch.file("f"), configuration: configuration, loop: loop)
                }
            }
        }
        #expect(failure.metricCode == "insecure_redirect", "\(failure)")
        #expect(!failure.detail.contains("sig=abc"), "a signed query reached the message: \(failure.detail)")
        #expect(plain.targets.isEmpty)
        #expect(scratch.contents.isEmpty)
    }

    @Test("tls.serverName is the original origin's: a redirect to another https host is verified against its own name")
    func serverNameStaysWithItsOrigin() async throws {
        let certificates = try TestCertificates.shared.get()
        let serverTLS = try TLSContext(role: .server, configuration: TLSConfiguration(
            certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
        let scratch = try TransferScratch()
        // The certificate names localhost; the configured name is another host's. Applied to the redirect
        // target, it fails verification (tls_verify); kept to the original origin, the download succeeds.
        let configuration = TransferConfiguration(
            tls: try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile)),
            serverName: "origin.example")
        let result = try await withLoopGroup { group in
            let loop = group.loops[0]
            return try await withHostileServer(on: loop, tls: serverTLS, script: respond(
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) { https in
                try await withHostileServer(on: loop, script: respond(
                    "HTTP/1.1 302 Found\r\nLocation: https://localhost:\(https)/f\r\nContent-Length: 0\r\n\r\n")) { http in
                    let request = DownloadRequest(url: try HTTPURL("http://127.0.0.1:\(http)/start"), destination: scratch.file("f"))
                    return try await onLoop(loop) {
                        try await DownloadTask(request: request, configuration: configuration, loop: loop).run()
                    }
                }
            }
        }
        #expect(result.length == 2)
    }

    @Test("a flood of 1xx interim responses fails with http_protocol, not a wait for the request timeout")
    func interimFlood() async throws {
        let scratch = try TransferScratch()
        let failure = try await withLoopGroup { group in
            let loop = group.loops[0]
            return try await withHostileServer(on: loop, script: { _, stream, loop in
                try await stream.write(Array(String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 2000).utf8))
                try await loop.sleep(for: .seconds(10))
            }) { port in
                try await failingDownload("http://127.0.0.1:\(port)/f", to: scratch.file("f"),
                                          configuration: TransferConfiguration(requestTimeout: .seconds(5)), loop: loop)
            }
        }
        #expect(failure.metricCode == "http_protocol", "\(failure)")
        #expect(failure.detail.contains("interim"), "\(failure)")
        #expect(scratch.contents.isEmpty)
    }

    @Test("a head trickled a byte at a time fails with timeout at the head deadline, though bytes keep coming")
    func headTrickle() async throws {
        let scratch = try TransferScratch()
        let failure = try await withLoopGroup { group in
            let loop = group.loops[0]
            return try await withHostileServer(on: loop, script: { _, stream, loop in
                try await stream.write(Array("HTTP/1.1 200 OK\r\nX-Slow: ".utf8))
                // 6 s of one byte every 50 ms: never idle for the 400 ms request timeout, never a complete head.
                for _ in 0..<120 {
                    try await stream.write([UInt8(ascii: "a")])
                    try await loop.sleep(for: .milliseconds(50))
                }
            }) { port in
                try await failingDownload("http://127.0.0.1:\(port)/f", to: scratch.file("f"),
                                          configuration: TransferConfiguration(requestTimeout: .milliseconds(400)), loop: loop)
            }
        }
        #expect(failure.metricCode == "timed_out" || failure.code == .requestTimeout, "\(failure)")
        #expect(failure.detail.contains("no complete response head"), "\(failure)")
        #expect(scratch.contents.isEmpty)
    }

    @Test("endless header lines and random bytes (more than a head may hold) fail with http_protocol and leave nothing")
    func endlessHeadersAndNoise() async throws {
        let scratch = try TransferScratch()
        var generator = SeededRandomNumberGenerator(seed: 13)
        let noise = (0..<100_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let scripts: [HostileScript] = [
            { _, stream, _ in
                try await stream.write(Array("HTTP/1.1 200 OK\r\n".utf8))
                for index in 0..<10_000 { try await stream.write(Array("X-Header-\(index): value\r\n".utf8)) }
            },
            { _, stream, _ in try await stream.write(noise) },
        ]
        for script in scripts {
            let failure = try await withLoopGroup { group in
                let loop = group.loops[0]
                return try await withHostileServer(on: loop, script: script) { port in
                    try await failingDownload("http://127.0.0.1:\(port)/f", to: scratch.file("f"),
                                              configuration: TransferConfiguration(requestTimeout: .seconds(5)), loop: loop)
                }
            }
            #expect(failure.metricCode == "http_protocol", "\(failure)")
        }
        #expect(scratch.contents.isEmpty)
    }

    @Test("a TLS EOF without close_notify inside a body without a length: truncated_body, resume data, nothing renamed")
    func tlsEOFMidBody() async throws {
        let certificates = try TestCertificates.shared.get()
        let serverTLS = try TLSContext(role: .server, configuration: TLSConfiguration(
            certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
        let scratch = try TransferScratch()
        let configuration = TransferConfiguration(
            tls: try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile)))
        let failure = try await withLoopGroup { group in
            let loop = group.loops[0]
            // No Content-Length, no chunking: only the close ends this body. The script returns and TCP closes
            // without close_notify, as an attacker resetting the connection would.
            return try await withHostileServer(on: loop, tls: serverTLS, script: { _, stream, _ in
                try await stream.write(Array("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n".utf8)
                    + [UInt8](repeating: 0x41, count: 1000))
            }) { port in
                try await failingDownload("https://localhost:\(port)/f", to: scratch.file("f"), configuration: configuration, loop: loop)
            }
        }
        #expect(failure.metricCode == "truncated_body", "\(failure)")
        #expect(failure.resumeData?.bytesOnDisk == 1000, "\(String(describing: failure.resumeData))")
        #expect(scratch.contents == ["f.wsload-part"], "\(scratch.contents)")
    }
}

extension RequestLog {
    /// The values of header `name` in every request, in order.
    func header(_ name: String) -> [String] { requestHeads.compactMap { $0.headers[name] } }
}

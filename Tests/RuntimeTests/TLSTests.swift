import Foundation
import Runtime
import TestSupport
import Testing

/// `openssl s_server -www` on an ephemeral loopback port.
private struct OpenSSLServer {
    let process: BackgroundProcess
    let port: Int

    init(certificate: String, key: String, extra: [String] = []) throws {
        process = try BackgroundProcess(
            ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", certificate, "-key", key, "-www"] + extra)
        guard let line = process.waitForLine(containing: "ACCEPT"), let port = line.split(separator: ":").last.flatMap({ Int($0) })
        else {
            process.stop()
            throw TestProcess.Failure(description: "openssl s_server did not report its port")
        }
        self.port = port
    }
}

/// Connects over TCP, then TLS, to 127.0.0.1:`port` on `loop`, sends an HTTP GET, returns the answer.
private func fetchStatusPage(
    port: Int, loop: EventLoop, context: TLSContext, serverName: String?
) async throws -> (response: String, version: String) {
    try await onLoop(loop) {
        let tcp = try await TCPConnection.connect(to: try SocketAddress(ip: "127.0.0.1", port: port), on: loop)
        let tls = try await TLSConnection.connect(over: tcp, context: context, serverName: serverName)
        try await tls.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
        let response = String(decoding: try await tls.readAll(), as: UTF8.self)
        let version = tls.protocolVersion
        tls.close()
        return (response, version)
    }
}

@Suite("TLS over memory BIOs", .serialized, .timeLimit(.minutes(2)))
struct TLSTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates.shared.get()
    }

    @Test("our client verifies openssl s_server's chain and hostname, TLS 1.3 and TLS 1.2")
    func clientAgainstOpenSSLServer() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let context = try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile))
            for (extra, expectedVersion) in [([String](), "TLSv1.3"), (["-tls1_2"], "TLSv1.2")] {
                let server = try OpenSSLServer(certificate: certificates.leafCertificate, key: certificates.leafKey, extra: extra)
                defer { server.process.stop() }
                let (response, version) = try await fetchStatusPage(
                    port: server.port, loop: group.loops[0], context: context, serverName: "localhost")
                #expect(response.hasPrefix("HTTP/1.0 200 ok"))
                #expect(version == expectedVersion)
                // By IP address: the certificate's IP SAN must match.
                let (byIP, _) = try await fetchStatusPage(
                    port: server.port, loop: group.loops[0], context: context, serverName: "127.0.0.1")
                #expect(byIP.hasPrefix("HTTP/1.0 200 ok"))
            }
        }
    }

    @Test("a wrong hostname fails with code tls_verify")
    func wrongHostname() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let server = try OpenSSLServer(certificate: certificates.leafCertificate, key: certificates.leafKey)
            defer { server.process.stop() }
            let context = try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile))
            let error = await #expect(throws: RuntimeError.self) {
                _ = try await fetchStatusPage(port: server.port, loop: group.loops[0], context: context, serverName: "wrong.example")
            }
            #expect(error?.code == .tlsVerificationFailed)
            #expect(error?.detail.contains("hostname mismatch") == true)
        }
    }

    @Test("an untrusted chain fails with code tls_verify, with a CA file and with the system store")
    func untrustedCA() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let server = try OpenSSLServer(certificate: certificates.rogueCertificate, key: certificates.rogueKey)
            defer { server.process.stop() }
            for configuration in [TLSConfiguration(caFile: certificates.caFile), TLSConfiguration()] {
                let context = try TLSContext(role: .client, configuration: configuration)
                let error = await #expect(throws: RuntimeError.self) {
                    _ = try await fetchStatusPage(port: server.port, loop: group.loops[0], context: context, serverName: "localhost")
                }
                #expect(error?.code == .tlsVerificationFailed)
                #expect(error?.detail.contains("self-signed") == true)
            }
        }
    }

    @Test("the explicit insecure switch accepts an untrusted certificate")
    func insecureSwitch() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let server = try OpenSSLServer(certificate: certificates.rogueCertificate, key: certificates.rogueKey)
            defer { server.process.stop() }
            let context = try TLSContext(role: .client, configuration: TLSConfiguration(isInsecure: true))
            let (response, _) = try await fetchStatusPage(
                port: server.port, loop: group.loops[0], context: context, serverName: "wrong.example")
            #expect(response.hasPrefix("HTTP/1.0 200 ok"))
        }
    }

    @Test("our server is verified by openssl s_client and answers it")
    func serverAgainstOpenSSLClient() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let context = try TLSContext(role: .server, configuration: TLSConfiguration(
                certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
            let listener = try await loop.submit { try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop) }
            let serverTask = Task(executorPreference: loop.taskExecutor) { () async throws -> String in
                let tls = try await TLSConnection.accept(over: try await listener.accept(), context: context)
                var line: [UInt8] = []
                while !line.contains(UInt8(ascii: "\n")) {
                    if try await tls.read(into: &line) == 0 { break }
                }
                try await tls.write(Array("echo: ".utf8) + line)
                try await tls.shutdownWrite()
                return tls.protocolVersion
            }
            let client = try BackgroundProcess([
                "openssl", "s_client", "-connect", "127.0.0.1:\(listener.localAddress.port)", "-CAfile", certificates.caFile,
                "-verify_hostname", "localhost", "-verify_return_error", "-quiet",
            ])
            client.input.fileHandleForWriting.write(Data("hello over tls\n".utf8))
            let echoed = client.waitForLine(containing: "echo:")
            // The server half-closes after answering; only then may the client go away.
            let version = try await serverTask.value
            try client.input.fileHandleForWriting.close()
            client.stop()
            #expect(echoed == "echo: hello over tls")
            #expect(version == "TLSv1.3")
            listener.close()
        }
    }

    @Test("client and server: ALPN, session resumption on reconnect, 4 MiB each way")
    func ownClientAndServer() async throws {
        try await withLoopGroup(loopCount: 2) { group in
            let serverLoop = group.loops[0]
            let clientLoop = group.loops[1]
            let serverContext = try TLSContext(role: .server, configuration: TLSConfiguration(
                certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey,
                applicationProtocols: ["wsload/1", "http/1.1"]))
            let clientContext = try TLSContext(role: .client, configuration: TLSConfiguration(
                caFile: certificates.caFile, applicationProtocols: ["http/1.1"]))
            let listener = try await serverLoop.submit {
                try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: serverLoop)
            }
            let server = Task(executorPreference: serverLoop.taskExecutor) {
                await withDiscardingTaskGroup { connections in
                    while let tcp = try? await listener.accept() {
                        connections.addTask(executorPreference: serverLoop.taskExecutor) {
                            guard let tls = try? await TLSConnection.accept(over: tcp, context: serverContext) else { return }
                            var buffer: [UInt8] = []
                            while let count = try? await tls.read(into: &buffer), count > 0 {
                                guard (try? await tls.write(buffer)) != nil else { break }
                                buffer.removeAll(keepingCapacity: true)
                            }
                            tls.close()
                        }
                    }
                }
            }
            let target = listener.localAddress
            let payload = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 >> 3) }
            var reused: [Bool] = []
            for round in 0..<3 {
                let (isReused, alpn, echoed) = try await onLoop(clientLoop) { () async throws -> (Bool, String?, Bool) in
                    let tcp = try await TCPConnection.connect(to: target, on: clientLoop)
                    let tls = try await TLSConnection.connect(over: tcp, context: clientContext, serverName: "localhost")
                    let size = round == 0 ? payload.count : 1024
                    async let reply = tls.read(exactly: size)
                    try await tls.write(Array(payload[0..<size]))
                    let isEqual = try await reply == Array(payload[0..<size])
                    // Read the session ticket before closing so the next connection can resume.
                    try await tls.write([1])
                    _ = try await tls.read(exactly: 1)
                    tls.close()
                    return (tls.isSessionReused, tls.negotiatedApplicationProtocol, isEqual)
                }
                reused.append(isReused)
                #expect(alpn == "http/1.1")
                #expect(echoed)
            }
            #expect(reused == [false, true, true])
            #expect(clientContext.savedSessionCount == 1)
            listener.close()
            await server.value
        }
    }

    @Test("bad TLS configuration fails with code tls_config naming the file")
    func badConfiguration() throws {
        let missing = "/nonexistent/wsload-ca.pem"
        let error = #expect(throws: RuntimeError.self) {
            _ = try TLSContext(role: .client, configuration: TLSConfiguration(caFile: missing))
        }
        #expect(error?.code == .tlsConfiguration)
        #expect(error?.detail.contains(missing) == true)
        let serverError = #expect(throws: RuntimeError.self) { _ = try TLSContext(role: .server) }
        #expect(serverError?.detail.contains("certificate") == true)
        let mismatch = #expect(throws: RuntimeError.self) {
            _ = try TLSContext(role: .server, configuration: TLSConfiguration(
                certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.rogueKey))
        }
        #expect(mismatch?.code == .tlsConfiguration)
    }
}

import Foundation
import Runtime
import TestSupport
import Testing

/// The TLS read path: an idle reader waits for ciphertext before it asks OpenSSL for plaintext (so it holds no
/// record buffer while idle), and must still decrypt at once whatever OpenSSL or its input BIO already holds.
@Suite("TLS reads: idle, buffered records, partial records", .serialized, .timeLimit(.minutes(2)))
struct TLSReadTests {
    let certificates: TestCertificates

    init() throws {
        certificates = try TestCertificates.shared.get()
    }

    /// A TLS server on `loop` that runs `script` on its one connection.
    private func withServer<T: Sendable>(
        on group: EventLoopGroup,
        _ script: @escaping @Sendable (TLSConnection) async throws -> Void,
        client: @escaping @Sendable (TLSConnection) async throws -> T
    ) async throws -> T {
        let serverLoop = group.loops[0]
        let clientLoop = group.loops[1]
        let serverContext = try TLSContext(role: .server, configuration: TLSConfiguration(
            certificateChainFile: certificates.leafCertificate, privateKeyFile: certificates.leafKey))
        let clientContext = try TLSContext(role: .client, configuration: TLSConfiguration(caFile: certificates.caFile))
        let listener = try await serverLoop.submit {
            try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: serverLoop)
        }
        let server = Task(executorPreference: serverLoop.taskExecutor) { () async throws -> Void in
            let tcp = try await listener.accept()
            let tls = try await TLSConnection.accept(over: tcp, context: serverContext)
            try await script(tls)
        }
        let target = listener.localAddress
        let result = try await onLoop(clientLoop) { () async throws -> T in
            let tcp = try await TCPConnection.connect(to: target, on: clientLoop)
            let tls = try await TLSConnection.connect(over: tcp, context: clientContext, serverName: "localhost")
            defer { tls.close() }
            // Every read below either has its bytes or gets them soon: a read that waits for ciphertext that
            // never comes is closed after 20 s, so the test fails with a message instead of hanging.
            let guardTimer = ScheduledTimer(on: clientLoop, after: .seconds(20)) { tls.close() }
            defer { guardTimer.cancel() }
            return try await client(tls)
        }
        try await server.value
        listener.close()
        return result
    }

    @Test("a record read in small pieces: the rest comes from OpenSSL's buffer, with no TCP read")
    func partialRecordReads() async throws {
        let message = (0..<100).map { UInt8($0) }
        let pieces = try await withLoopGroup(loopCount: 2) { group in
            try await withServer(on: group, { tls in
                try await tls.write(message)
                // Nothing more until the client has every byte: a read that waited for TCP would starve.
                _ = try await tls.read(exactly: 1)
                tls.close()
            }, client: { tls in
                var received: [UInt8] = []
                var reads = 0
                while received.count < message.count {
                    do {
                        _ = try await tls.read(into: &received, maxBytes: 10)
                    } catch {
                        Issue.record("read \(reads + 1) (after \(received.count) of 100 bytes) waited for TCP: \(error)")
                        return [UInt8]()
                    }
                    reads += 1
                }
                try await tls.write([1])
                return received
            })
        }
        #expect(pieces == message)
    }

    @Test("records already in the input BIO are decrypted without waiting for another TCP read")
    func bufferedRecords() async throws {
        // 40 KiB: three records (16 + 16 + 8 KiB) written back to back; the client reads after they arrived,
        // so one TCP read takes them all and each TLS read returns at most one record.
        let message = (0..<(40 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let received = try await withLoopGroup(loopCount: 2) { group in
            try await withServer(on: group, { tls in
                try await tls.write(message)
                _ = try await tls.read(exactly: 1)
                tls.close()
            }, client: { tls in
                try await tls.loop.sleep(for: .milliseconds(300))
                var received: [UInt8] = []
                do {
                    while received.count < message.count {
                        _ = try await tls.read(into: &received, maxBytes: 64 * 1024)
                    }
                } catch {
                    Issue.record("waited for TCP after \(received.count) of \(message.count) bytes: \(error)")
                }
                try? await tls.write([1])
                return received
            })
        }
        #expect(received == message)
    }

    @Test("idle, then a 1 MiB message, idle again, a small one, then close_notify reads as EOF")
    func idleThenBigThenSmall() async throws {
        let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13 >> 2) }
        let result = try await withLoopGroup(loopCount: 2) { group in
            try await withServer(on: group, { tls in
                // The client is parked in a read meanwhile (idle: no record buffer held).
                try await tls.loop.sleep(for: .milliseconds(300))
                try await tls.write(big)
                _ = try await tls.read(exactly: 1)
                try await tls.loop.sleep(for: .milliseconds(300))
                try await tls.write(Array("after idle".utf8))
                try await tls.shutdownWrite()
                _ = try? await tls.read(exactly: 1)
                tls.close()
            }, client: { tls in
                let first = try await tls.read(exactly: big.count)
                try await tls.write([1])
                let second = try await tls.read(exactly: 10)
                var rest: [UInt8] = []
                let end = try await tls.read(into: &rest)
                try? await tls.write([2])
                return (first == big, String(decoding: second, as: UTF8.self), end, tls.isEndedWithoutCloseNotify)
            })
        }
        #expect(result.0, "the 1 MiB message after an idle read arrived intact")
        #expect(result.1 == "after idle")
        #expect(result.2 == 0, "close_notify reads as EOF")
        #expect(result.3 == false, "the server sent close_notify")
    }
}

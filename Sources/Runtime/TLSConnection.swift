import COpenSSL

/// TLS over a ``TCPConnection``, with OpenSSL driven through memory BIOs: ciphertext moves between
/// the BIOs and the TCP stream on the loop thread, so TLS adds no threads and no blocking calls.
///
/// Create it with ``connect(over:context:serverName:)`` (client) or ``accept(over:context:)`` (server);
/// both return after the handshake, with the peer verified unless the context is insecure.
public final class TLSConnection: ByteStream {
    public let loop: EventLoop
    private let tcp: TCPConnection
    nonisolated(unsafe) private let ssl: OpaquePointer
    nonisolated(unsafe) private var input: OpaquePointer
    nonisolated(unsafe) private var output: OpaquePointer
    nonisolated(unsafe) private var sessionKey: Unmanaged<TLSSessionKey>?
    nonisolated(unsafe) private var ciphertext: [UInt8] = []
    nonisolated(unsafe) private var isShutdownSent = false
    nonisolated(unsafe) private var readFailure: RuntimeError?
    /// True once a read ended because the peer closed TCP without sending close_notify first. Such an end
    /// is reported as EOF (many servers end so), but it is not authenticated: whoever can reset the TCP
    /// connection can cut a body whose end only the close marks (RFC 8446 §6.1), so such a body is truncated.
    nonisolated(unsafe) public private(set) var isEndedWithoutCloseNotify = false
    /// True while a ``write(_:)`` (or ``shutdownWrite()``) owns the stream: it hands OpenSSL one record at a time and
    /// may wait for TCP between records, and another writer's records must not land between them.
    nonisolated(unsafe) private var isWriting = false
    /// Writers waiting for their turn, in call order; the first gets the turn when the current writer ends.
    nonisolated(unsafe) private var writeWaiters: [WriteTurn] = []
    nonisolated(unsafe) private var lastWriterID: UInt64 = 0

    private init(tcp: TCPConnection, context: TLSContext) throws(RuntimeError) {
        loop = tcp.loop
        self.tcp = tcp
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { throw tlsError(.tlsConfiguration, "SSL_new") }
        guard let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw tlsError(.tlsConfiguration, "BIO_new")
        }
        // An empty input BIO means "wait for more", not EOF, until the TCP stream ends.
        _ = wsload_BIO_set_mem_eof_return(input, -1)
        SSL_set_bio(ssl, input, output)
        self.ssl = ssl
        self.input = input
        self.output = output
    }

    deinit {
        // SSL_free on a connection that never sent close_notify marks its session not resumable
        // (ssl_clear_bad_session). Closing TCP without close_notify is how load clients end, and TLS 1.3
        // does not require it, so keep the session unless the connection failed (fatal alerts already
        // invalidate it).
        if readFailure == nil { SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN) }
        SSL_free(ssl)  // Frees both BIOs.
        sessionKey?.release()
    }

    /// Connects TLS as a client over `tcp` and completes the handshake. Call on `tcp.loop`'s thread.
    /// - Parameter serverName: the name to send as SNI and verify the certificate against (a DNS name
    ///   or an IP address); defaults to the peer's IP.
    /// - Throws: `RuntimeError` with code `tls_verify` (untrusted chain, name mismatch), `tls_handshake`,
    ///   or the TCP error; `CancellationError`. The TCP connection is closed on failure.
    public static func connect(
        over tcp: TCPConnection, context: TLSContext, serverName: String? = nil
    ) async throws -> TLSConnection {
        precondition(context.role == .client, "TLSConnection.connect needs a client context")
        let connection = try TLSConnection(tcp: tcp, context: context)
        let name = serverName ?? tcp.remoteAddress?.ip ?? ""
        SSL_set_connect_state(connection.ssl)
        // Whether the name parses as an IP literal (then it is verified as an IP, not a host name).
        let isIPAddress = (try? SocketAddress(ip: name, port: 0)) != nil
        if !name.isEmpty && !isIPAddress {
            _ = wsload_SSL_set_tlsext_host_name(connection.ssl, name)
        }
        if !context.configuration.isInsecure && !name.isEmpty {
            let status = isIPAddress
                ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(connection.ssl), name)
                : SSL_set1_host(connection.ssl, name)
            guard status == 1 else {
                tcp.close()
                throw tlsError(.tlsConfiguration, "SSL_set1_host", about: name)
            }
        }
        if context.configuration.isSessionResumptionEnabled {
            let key = "\(name)|\(tcp.remoteAddress?.description ?? "")"
            let box = Unmanaged.passRetained(TLSSessionKey(context: context, key: key))
            connection.sessionKey = box
            _ = wsload_SSL_set_app_data(connection.ssl, box.toOpaque())
            _ = context.applySavedSession(to: connection.ssl, key: key)
        }
        try await connection.handshake()
        return connection
    }

    /// Accepts TLS as a server over `tcp` and completes the handshake. Call on `tcp.loop`'s thread.
    public static func accept(over tcp: TCPConnection, context: TLSContext) async throws -> TLSConnection {
        precondition(context.role == .server, "TLSConnection.accept needs a server context")
        let connection = try TLSConnection(tcp: tcp, context: context)
        SSL_set_accept_state(connection.ssl)
        try await connection.handshake()
        return connection
    }

    private func handshake() async throws {
        do {
            while true {
                ERR_clear_error()
                let status = SSL_do_handshake(ssl)
                try await flushOutput()
                if status == 1 {
                    releaseHandshakeBuffers()
                    return
                }
                switch SSL_get_error(ssl, status) {
                case SSL_ERROR_WANT_READ:
                    guard try await receiveCiphertext() else {
                        throw RuntimeError(.tlsHandshakeFailed, function: "SSL_do_handshake",
                                           detail: "the peer closed the connection during the handshake")
                    }
                default:
                    let verifyResult = SSL_get_verify_result(ssl)
                    if verifyResult != X509_V_OK {
                        throw RuntimeError(.tlsVerificationFailed, function: "SSL_do_handshake",
                                           detail: String(cString: X509_verify_cert_error_string(verifyResult)))
                    }
                    throw tlsError(.tlsHandshakeFailed, "SSL_do_handshake")
                }
            }
        } catch {
            tcp.close()
            throw error
        }
    }

    /// A memory BIO keeps the capacity of the most it ever held, and the handshake's flights (the server's certificate
    /// chain) are the most an idle connection ever holds: once they are consumed, fresh BIOs take their place, and an
    /// empty ciphertext buffer takes the read buffer's (idle wss at 5,000 connections, Benchmarks/idle-memory.sh:
    /// 0.55 KiB less per connection, client and server).
    private func releaseHandshakeBuffers() {
        ciphertext = []
        // Bytes past the handshake stay where they are (and, out of memory, the old BIOs do).
        guard wsload_BIO_pending(input) == 0, wsload_BIO_pending(output) == 0,
              let freshInput = BIO_new(BIO_s_mem()) else { return }
        guard let freshOutput = BIO_new(BIO_s_mem()) else {
            BIO_free(freshInput)
            return
        }
        _ = wsload_BIO_set_mem_eof_return(freshInput, -1)
        SSL_set_bio(ssl, freshInput, freshOutput)  // frees the old pair
        input = freshInput
        output = freshOutput
    }

    /// Moves everything OpenSSL wrote into the output BIO to the TCP stream, in order.
    private func flushOutput() async throws {
        guard let records = takeRecords() else { return }
        // tcp.write queues synchronously before it may suspend, so concurrent flushes keep their order.
        try await tcp.write(records)
    }

    /// Everything OpenSSL wrote into the output BIO, taken out of it; nil when there is nothing.
    private func takeRecords() -> [UInt8]? {
        let pending = wsload_BIO_pending(output)
        guard pending > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: pending)
        let count = bytes.withUnsafeMutableBytes { BIO_read(output, $0.baseAddress, Int32($0.count)) }
        if count <= 0 { return nil }
        if Int(count) < bytes.count { bytes.removeSubrange(Int(count)...) }
        return bytes
    }

    /// Reads ciphertext from TCP into the input BIO. Returns false at EOF.
    private func receiveCiphertext() async throws -> Bool {
        ciphertext.removeAll(keepingCapacity: true)
        let count = try await tcp.read(into: &ciphertext, maxBytes: 64 * 1024)
        if count == 0 {
            _ = wsload_BIO_set_mem_eof_return(input, 0)
            return false
        }
        _ = ciphertext.withUnsafeBytes { BIO_write(input, $0.baseAddress, Int32($0.count)) }
        // A bulk read may have handed over TCP's whole receive buffer: give a big one back, so a connection that
        // goes idle after a burst stays small.
        if ciphertext.capacity > Self.keptCiphertextCapacity { ciphertext = [] }
        return true
    }

    /// The most ciphertext buffer a connection keeps between reads.
    private static let keptCiphertextCapacity = 16 * 1024

    /// Whether OpenSSL has bytes to work on without another TCP read: a record (or part of one) in its buffer, or
    /// ciphertext in the input BIO.
    private var hasBufferedInput: Bool { SSL_has_pending(ssl) == 1 || wsload_BIO_pending(input) > 0 }

    /// Decrypts at most 16 KiB (one record) into `buffer`. Plaintext lands in the loop's scratch buffer and only
    /// what was read is appended: growing `buffer` by 16 KiB for the call kept that much per parked reader (every
    /// idle wss connection; heaptrack). With nothing buffered in OpenSSL or the input BIO, a read waits for
    /// ciphertext first instead of making an `SSL_read` call that can only answer "want read".
    public func read(into buffer: inout [UInt8], maxBytes: Int) async throws -> Int {
        precondition(loop.inLoopThread, "TLSConnection.read must be called on \(loop)'s thread")
        if let readFailure { throw readFailure }
        let limit = min(maxBytes, 16 * 1024)
        var needsCiphertext = !hasBufferedInput
        while true {
            if needsCiphertext {
                // A read that ends on records without data (TLS 1.3 session tickets after the handshake, a key
                // update) keeps OpenSSL's 16.6 KB record buffer: SSL_MODE_RELEASE_BUFFERS frees it only after data.
                // Nothing is buffered now, so free it before a wait that may last the connection's idle life.
                _ = SSL_free_buffers(ssl)
                // TLS 1.3 tickets and key updates may need an answer before more data comes.
                try await flushOutput()
                // At EOF OpenSSL reports the end (close_notify or not) on the SSL_read below.
                _ = try await receiveCiphertext()
                needsCiphertext = false
            }
            ERR_clear_error()
            let scratch = loop.readScratch
            let count = SSL_read(ssl, scratch.baseAddress, Int32(min(limit, scratch.count)))
            if count > 0 {
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<Int(count)]))
                return Int(count)
            }
            let error = SSL_get_error(ssl, count)
            switch error {
            case SSL_ERROR_WANT_READ:
                needsCiphertext = true
            case SSL_ERROR_ZERO_RETURN:
                return 0
            case SSL_ERROR_SYSCALL where ERR_peek_error() == 0,
                 SSL_ERROR_SSL where isUnexpectedEOF():
                // The peer closed TCP without close_notify: many servers do; treat as end of stream, and remember
                // it for callers whose framing depends on the close being the peer's own.
                isEndedWithoutCloseNotify = true
                return 0
            default:
                let failure = tlsError(.tlsProtocolError, "SSL_read")
                readFailure = failure
                throw failure
            }
        }
    }

    private func isUnexpectedEOF() -> Bool {
        let error = ERR_peek_error()
        return ERR_GET_LIB(error) == ERR_LIB_SSL && ERR_GET_REASON(error) == SSL_R_UNEXPECTED_EOF_WHILE_READING
    }

    /// Sends `bytes` as TLS records. Concurrent writers take turns in call order, each message whole: OpenSSL takes
    /// one record at a time (partial writes) and a writer may wait for TCP between records. A writer cancelled while
    /// it waits for its turn leaves the queue (nothing of it was sent; the stream stays open); one cancelled while it
    /// sends closes the stream, as ``ByteStream`` says.
    public func write(_ bytes: [UInt8]) async throws {
        precondition(loop.inLoopThread, "TLSConnection.write must be called on \(loop)'s thread")
        guard !bytes.isEmpty else { return }
        if isWriting { try await waitForWriteTurn() } else { isWriting = true }
        defer { passWriteTurn() }
        var offset = 0
        while offset < bytes.count {
            ERR_clear_error()
            let count = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + offset, Int32($0.count - offset)) }
            guard count > 0 else { throw tlsError(.tlsProtocolError, "SSL_write") }
            offset += Int(count)
            try await flushOutput()
        }
    }

    /// ``ByteStream/writeIfReady(_:)``: a message of at most one record, while no other writer owns the stream and TCP
    /// can take its record below the high-water mark, is encrypted and handed over as a plain call.
    public func writeIfReady(_ bytes: [UInt8]) throws -> Bool {
        precondition(loop.inLoopThread, "TLSConnection.writeIfReady must be called on \(loop)'s thread")
        guard !bytes.isEmpty else { return true }
        // A record's header, tag and padding add well under 256 bytes to at most 16 KiB of plaintext.
        guard !isWriting, bytes.count <= Self.recordSize,
              bytes.count + 256 <= tcp.stream.options.writeHighWaterMark - tcp.pendingWriteBytes
        else { return false }
        try encrypt(bytes)  // one record, unless the peer asked for smaller ones (RFC 8449)
        guard let records = takeRecords() else { return true }
        // Records smaller than asked for carry more overhead than allowed for: those few bytes may pass the mark.
        if try !tcp.writeIfReady(records) { tcp.writeWithoutWaiting(records) }
        return true
    }

    /// The most plaintext one TLS record carries (RFC 8446 §5.1).
    private static let recordSize = 16 * 1024

    /// Encrypts `bytes` and hands the records to TCP without waiting (``ByteStream/writeWithoutWaiting(_:)``). While
    /// another writer owns the stream (it may wait for TCP between records) the bytes take their turn behind it and
    /// the writers already waiting, and go out when it comes, still without a task waiting.
    public func writeWithoutWaiting(_ bytes: [UInt8]) {
        precondition(loop.inLoopThread, "TLSConnection.writeWithoutWaiting must be called on \(loop)'s thread")
        guard !bytes.isEmpty else { return }
        if isWriting {
            writeWaiters.append(.deferred(bytes))
        } else {
            send(bytes)
        }
    }

    /// Encrypts all of `bytes` into the output BIO (a memory BIO takes every record at once) and hands the records to
    /// TCP without waiting. A failure closes the stream; reads report it.
    private func send(_ bytes: [UInt8]) {
        do throws(RuntimeError) {
            try encrypt(bytes)
        } catch {
            if readFailure == nil { readFailure = error }
            tcp.close()
            return
        }
        if let records = takeRecords() { tcp.writeWithoutWaiting(records) }
    }

    /// Encrypts all of `bytes` into the output BIO (a memory BIO takes every record at once).
    private func encrypt(_ bytes: [UInt8]) throws(RuntimeError) {
        var offset = 0
        while offset < bytes.count {
            ERR_clear_error()
            let count = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + offset, Int32($0.count - offset)) }
            guard count > 0 else { throw tlsError(.tlsProtocolError, "SSL_write") }
            offset += Int(count)
        }
    }

    /// Sends close_notify, then half-closes TCP, after the writes already under way or waiting.
    public func shutdownWrite() async throws {
        precondition(loop.inLoopThread, "TLSConnection.shutdownWrite must be called on \(loop)'s thread")
        if !isShutdownSent {
            if isWriting { try await waitForWriteTurn() } else { isWriting = true }
            defer { passWriteTurn() }
            if !isShutdownSent {
                isShutdownSent = true
                ERR_clear_error()
                _ = SSL_shutdown(ssl)
                try await flushOutput()
            }
        }
        try await tcp.shutdownWrite()
    }

    /// Waits behind the writers already waiting until the current writer passes the turn on; then owns it.
    private func waitForWriteTurn() async throws {
        lastWriterID &+= 1
        let id = lastWriterID
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Cancelled already: the handler ran (or will run) before this waiter was queued.
                if Task.isCancelled { return continuation.resume(throwing: CancellationError()) }
                writeWaiters.append(.waiting(id: id, continuation))
                loop.operationStarted()
            }
        } onCancel: {
            loop.perform { self.removeWriteWaiter(id) }
        }
        // Cancelled as the turn arrived: nothing of this write was sent, so pass the turn on and leave.
        if Task.isCancelled {
            passWriteTurn()
            throw CancellationError()
        }
    }

    /// A turn in the write queue: a writer waiting for the stream, or bytes handed over by one that cannot wait.
    private enum WriteTurn {
        case waiting(id: UInt64, CheckedContinuation<Void, any Error>)
        case deferred([UInt8])
    }

    /// The current writer is done: deferred bytes at the head of the queue go out now, then the first waiting writer
    /// owns the stream (`isWriting` stays set); with nobody left, the stream is free.
    private func passWriteTurn() {
        while !writeWaiters.isEmpty {
            switch writeWaiters.removeFirst() {
            case .deferred(let bytes):
                send(bytes)
            case .waiting(_, let continuation):
                loop.operationEnded()
                continuation.resume()
                return
            }
        }
        isWriting = false
    }

    /// A waiting writer was cancelled: it leaves the queue. Nothing to do if it already got its turn.
    private func removeWriteWaiter(_ id: UInt64) {
        let index = writeWaiters.firstIndex {
            if case .waiting(id, _) = $0 { true } else { false }
        }
        guard let index, case .waiting(_, let continuation) = writeWaiters.remove(at: index) else { return }
        loop.operationEnded()
        continuation.resume(throwing: CancellationError())
    }

    public func close() { tcp.close() }

    /// A TLS read waits in its TCP read, which is what registers for cancellation.
    public func setReadsCancelledByCaller(_ isOn: Bool) -> Bool { tcp.setReadsCancelledByCaller(isOn) }
    public func cancelReads() { tcp.cancelReads() }

    /// The ALPN protocol the server chose, if any.
    public var negotiatedApplicationProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// True when the handshake resumed a saved session instead of a full handshake.
    public var isSessionReused: Bool { SSL_session_reused(ssl) == 1 }

    /// `TLSv1.3` or `TLSv1.2`.
    public var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// The underlying TCP connection's addresses.
    public var localAddress: SocketAddress? { tcp.localAddress }
    public var remoteAddress: SocketAddress? { tcp.remoteAddress }
}

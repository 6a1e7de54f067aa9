import COpenSSL
import FileInput
import Glibc
import Synchronization

/// A configured OpenSSL context (`SSL_CTX`) shared by many connections on any loop.
///
/// Client contexts keep a session cache keyed by server (host, port, SNI): the next connection to the
/// same server offers the saved session and skips the full handshake when the server accepts it.
public final class TLSContext: Sendable {
    /// Whether this context connects out or accepts.
    public enum Role: Sendable { case client, server }

    public let role: Role
    public let configuration: TLSConfiguration
    nonisolated(unsafe) let context: OpaquePointer
    private let sessions = Lock<[String: SessionBox]>([:])
    /// Our ALPN list in wire format, kept alive for the server's select callback.
    private let encodedProtocols: [UInt8]

    /// Creates a context. Files are read now, so a bad path fails here, naming the file.
    /// - Throws: `RuntimeError` with code `tls_config`.
    public init(role: Role, configuration: TLSConfiguration = TLSConfiguration()) throws(RuntimeError) {
        self.role = role
        self.configuration = configuration
        guard let context = SSL_CTX_new(role == .client ? TLS_client_method() : TLS_server_method()) else {
            throw tlsError(.tlsConfiguration, "SSL_CTX_new")
        }
        self.context = context
        // RFC 7301 §3.1: each protocol name is 1–255 bytes, length-prefixed in one byte.
        if let bad = configuration.applicationProtocols.first(where: { $0.utf8.isEmpty || $0.utf8.count > 255 }) {
            SSL_CTX_free(context)
            throw RuntimeError(.tlsConfiguration, function: "TLSContext",
                               detail: "ALPN protocol name of \(bad.utf8.count) bytes (1-255 allowed)")
        }
        encodedProtocols = configuration.applicationProtocols.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
        // On failure the (fully initialised) instance is released and deinit frees the context.
        try configure()
    }

    deinit {
        sessions.withLock { sessions in
            for box in sessions.values { SSL_SESSION_free(box.session) }
        }
        SSL_CTX_free(context)
    }

    private func configure() throws(RuntimeError) {
        let versions: (TLSConfiguration.Version) -> Int32 = { $0 == .tls12 ? wsload_TLS1_2_VERSION() : wsload_TLS1_3_VERSION() }
        _ = wsload_SSL_CTX_set_min_proto_version(context, versions(configuration.minimumVersion))
        _ = wsload_SSL_CTX_set_max_proto_version(context, versions(configuration.maximumVersion))
        // No compression (CRIME), no renegotiation (a writer must never need to read).
        SSL_CTX_set_options(context, wsload_SSL_OP_NO_COMPRESSION() | wsload_SSL_OP_NO_RENEGOTIATION())
        _ = wsload_SSL_CTX_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS))

        if let chain = configuration.certificateChainFile {
            guard try Self.withCheckedFile(chain, { SSL_CTX_use_certificate_chain_file(context, $0) }) == 1 else {
                throw tlsError(.tlsConfiguration, "SSL_CTX_use_certificate_chain_file", about: chain)
            }
            guard let key = configuration.privateKeyFile else {
                throw RuntimeError(.tlsConfiguration, function: "TLSContext", detail: "certificate \(chain) has no private key file")
            }
            guard try Self.withCheckedFile(key, { SSL_CTX_use_PrivateKey_file(context, $0, SSL_FILETYPE_PEM) }) == 1 else {
                throw tlsError(.tlsConfiguration, "SSL_CTX_use_PrivateKey_file", about: key)
            }
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw tlsError(.tlsConfiguration, "SSL_CTX_check_private_key", about: "\(key) does not match \(chain)")
            }
        } else if let pair = configuration.certificateAndKey {
            try useInMemory(pair)
        } else if role == .server {
            throw RuntimeError(.tlsConfiguration, function: "TLSContext", detail: "a TLS server needs a certificate and key")
        }

        switch role {
        case .client:
            if configuration.isInsecure {
                SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
            } else {
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
                if let caFile = configuration.caFile {
                    guard try Self.withCheckedFile(caFile, { SSL_CTX_load_verify_locations(context, $0, nil) }) == 1 else {
                        throw tlsError(.tlsConfiguration, "SSL_CTX_load_verify_locations", about: caFile)
                    }
                } else if SSL_CTX_set_default_verify_paths(context) != 1 {
                    throw tlsError(.tlsConfiguration, "SSL_CTX_set_default_verify_paths")
                }
            }
            if !encodedProtocols.isEmpty {
                let status = encodedProtocols.withUnsafeBufferPointer {
                    SSL_CTX_set_alpn_protos(context, $0.baseAddress, UInt32($0.count))
                }
                guard status == 0 else { throw tlsError(.tlsConfiguration, "SSL_CTX_set_alpn_protos") }
            }
            if configuration.isSessionResumptionEnabled {
                _ = wsload_SSL_CTX_set_session_cache_mode(
                    context, Int(SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE))
                SSL_CTX_sess_set_new_cb(context) { ssl, session in
                    // Runs inside SSL_read/SSL_do_handshake on the connection's loop thread.
                    guard let ssl, let session, let raw = wsload_SSL_get_app_data(ssl) else { return 0 }
                    let connection = Unmanaged<TLSSessionKey>.fromOpaque(raw).takeUnretainedValue()
                    connection.context?.store(session: session, for: connection.key)
                    return 1  // We keep the reference.
                }
            }
        case .server:
            if let caFile = configuration.caFile {
                // A CA file on a server means: ask for and verify client certificates.
                guard try Self.withCheckedFile(caFile, { SSL_CTX_load_verify_locations(context, $0, nil) }) == 1 else {
                    throw tlsError(.tlsConfiguration, "SSL_CTX_load_verify_locations", about: caFile)
                }
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
            }
            if !encodedProtocols.isEmpty {
                SSL_CTX_set_alpn_select_cb(context, { _, out, outLength, offered, offeredLength, argument in
                    let ours = Unmanaged<TLSContext>.fromOpaque(argument!).takeUnretainedValue().encodedProtocols
                    return ours.withUnsafeBufferPointer { ours -> Int32 in
                        var selected: UnsafeMutablePointer<UInt8>?
                        let result = SSL_select_next_proto(
                            &selected, outLength, ours.baseAddress, UInt32(ours.count), offered, offeredLength)
                        guard result == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_ALERT_FATAL }
                        // `selected` points into `ours` (kept alive by the context) or into `offered`.
                        out!.pointee = UnsafePointer(selected)
                        return SSL_TLSEXT_ERR_OK
                    }
                }, Unmanaged.passUnretained(self).toOpaque())
            }
        }
    }

    /// The largest certificate, key or CA file read (a system CA bundle is a few hundred KiB).
    static let maximumFileSize = 16 << 20

    /// Runs `body` with a name for the file at `path` that OpenSSL can open: the file is first opened and checked
    /// (``UntrustedFile``: a regular file of at most ``maximumFileSize``; a FIFO would block OpenSSL's read forever,
    /// /dev/zero would never end), then handed over as `/proc/self/fd/N`, so OpenSSL reads what was checked.
    private static func withCheckedFile(_ path: String, _ body: (String) -> Int32) throws(RuntimeError) -> Int32 {
        let opened: (descriptor: Int32, size: Int)
        do throws(UntrustedFile.Failure) {
            opened = try UntrustedFile.open(path)
        } catch {
            throw RuntimeError(.tlsConfiguration, function: "open", detail: error.description)
        }
        defer { Glibc.close(opened.descriptor) }
        guard opened.size <= maximumFileSize else {
            throw RuntimeError(.tlsConfiguration, function: "open",
                               detail: UntrustedFile.Failure(path: path, kind: .tooLarge(cap: maximumFileSize)).description)
        }
        return body("/proc/self/fd/\(opened.descriptor)")
    }

    private func useInMemory(_ pair: CertificateAndKey) throws(RuntimeError) {
        func readPEM<T>(_ text: String, _ read: (OpaquePointer) -> T?) -> T? {
            let bytes = Array(text.utf8)
            return bytes.withUnsafeBytes { raw -> T? in
                guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
                defer { BIO_free(bio) }
                return read(bio)
            }
        }
        guard let certificate = readPEM(pair.certificatePEM, { PEM_read_bio_X509($0, nil, nil, nil) }) else {
            throw tlsError(.tlsConfiguration, "PEM_read_bio_X509", about: "in-memory certificate")
        }
        defer { X509_free(certificate) }
        guard let key = readPEM(pair.privateKeyPEM, { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else {
            throw tlsError(.tlsConfiguration, "PEM_read_bio_PrivateKey", about: "in-memory key")
        }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_certificate(context, certificate) == 1, SSL_CTX_use_PrivateKey(context, key) == 1,
            SSL_CTX_check_private_key(context) == 1
        else { throw tlsError(.tlsConfiguration, "SSL_CTX_use_certificate", about: "in-memory certificate and key") }
    }

    // MARK: Session cache

    private final class SessionBox: @unchecked Sendable {
        let session: OpaquePointer
        init(_ session: OpaquePointer) { self.session = session }
    }

    func store(session: OpaquePointer, for key: String) {
        let replaced = sessions.withLock { sessions in
            sessions.updateValue(SessionBox(session), forKey: key)
        }
        if let replaced { SSL_SESSION_free(replaced.session) }
    }

    /// Applies the saved session for `key` to `ssl`, if any. Returns whether one was offered.
    func applySavedSession(to ssl: OpaquePointer, key: String) -> Bool {
        sessions.withLock { sessions in
            guard let box = sessions[key] else { return false }
            return SSL_set_session(ssl, box.session) == 1
        }
    }

    /// The number of servers with a saved session.
    public var savedSessionCount: Int { sessions.withLock { $0.count } }
}

/// Ties an `SSL` back to its context's cache entry in the new-session callback.
final class TLSSessionKey {
    weak var context: TLSContext?
    let key: String
    init(context: TLSContext, key: String) {
        self.context = context
        self.key = key
    }
}

/// Drains OpenSSL's error queue into a `RuntimeError` for `function`.
func tlsError(_ code: RuntimeError.Code, _ function: String, about subject: String? = nil) -> RuntimeError {
    var messages: [String] = []
    while true {
        let error = ERR_get_error()
        if error == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(error, &buffer, buffer.count)
        messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    let detail = ([subject].compactMap { $0 } + messages).joined(separator: ": ")
    return RuntimeError(code, function: function, detail: detail)
}

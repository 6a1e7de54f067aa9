import COpenSSL

/// A certificate and its private key in PEM.
public struct CertificateAndKey: Sendable, Hashable {
    public var certificatePEM: String
    public var privateKeyPEM: String
    /// SHA-256 of the certificate's DER form, `AA:BB:…`, for pinning or eyeballing.
    public var fingerprint: String
}

/// Generates throwaway self-signed certificates (ECDSA P-256, SHA-256) for `wsload serve --tls`.
public enum SelfSignedCertificate {
    /// - Parameters:
    ///   - commonName: the subject CN.
    ///   - subjectAlternativeNames: e.g. `["DNS:localhost", "IP:127.0.0.1", "IP:::1"]`.
    ///   - validDays: validity from now.
    public static func generate(
        commonName: String = "localhost",
        subjectAlternativeNames: [String] = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"],
        validDays: Int = 30
    ) throws(RuntimeError) -> CertificateAndKey {
        ERR_clear_error()
        guard let keyContext = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { throw tlsError(.tlsConfiguration, "EVP_PKEY_CTX_new_id") }
        defer { EVP_PKEY_CTX_free(keyContext) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(keyContext) == 1,
            EVP_PKEY_CTX_set_ec_paramgen_curve_nid(keyContext, NID_X9_62_prime256v1) == 1,
            EVP_PKEY_keygen(keyContext, &key) == 1, let key
        else { throw tlsError(.tlsConfiguration, "EVP_PKEY_keygen") }
        defer { EVP_PKEY_free(key) }

        guard let certificate = X509_new() else { throw tlsError(.tlsConfiguration, "X509_new") }
        defer { X509_free(certificate) }
        var serial: [UInt8] = Array(repeating: 0, count: 8)
        _ = serial.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, 8) }
        let serialNumber = serial.reduce(Int(0)) { ($0 << 8 | Int($1)) & 0x3FFF_FFFF_FFFF_FFFF }
        guard X509_set_version(certificate, 2) == 1,
            ASN1_INTEGER_set(X509_get_serialNumber(certificate), serialNumber) == 1,
            X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != nil,
            X509_gmtime_adj(X509_getm_notAfter(certificate), validDays * 86400) != nil,
            X509_set_pubkey(certificate, key) == 1,
            let name = X509_get_subject_name(certificate),
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1,
            X509_set_issuer_name(certificate, name) == 1
        else { throw tlsError(.tlsConfiguration, "X509 fields") }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, certificate, certificate, nil, nil, 0)
        for (nid, value) in [(NID_subject_alt_name, subjectAlternativeNames.joined(separator: ",")),
                             (NID_basic_constraints, "critical,CA:TRUE"),
                             (NID_key_usage, "critical,digitalSignature,keyCertSign")] where !value.isEmpty {
            guard let extensionEntry = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw tlsError(.tlsConfiguration, "X509V3_EXT_conf_nid", about: value)
            }
            defer { X509_EXTENSION_free(extensionEntry) }
            guard X509_add_ext(certificate, extensionEntry, -1) == 1 else { throw tlsError(.tlsConfiguration, "X509_add_ext") }
        }
        guard X509_sign(certificate, key, EVP_sha256()) > 0 else { throw tlsError(.tlsConfiguration, "X509_sign") }

        let certificatePEM = try pem { PEM_write_bio_X509($0, certificate) }
        let keyPEM = try pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = digest.withUnsafeMutableBufferPointer { X509_digest(certificate, EVP_sha256(), $0.baseAddress, &length) }
        let hex = Array("0123456789ABCDEF")
        let fingerprint = digest.prefix(Int(length)).map { "\(hex[Int($0 >> 4)])\(hex[Int($0 & 15)])" }.joined(separator: ":")
        return CertificateAndKey(certificatePEM: certificatePEM, privateKeyPEM: keyPEM, fingerprint: fingerprint)
    }

    private static func pem(_ write: (OpaquePointer?) -> Int32) throws(RuntimeError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw tlsError(.tlsConfiguration, "BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw tlsError(.tlsConfiguration, "PEM_write_bio") }
        var bytes = [UInt8](repeating: 0, count: wsload_BIO_pending(bio))
        let count = bytes.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
        return String(decoding: bytes.prefix(Int(max(0, count))), as: UTF8.self)
    }
}

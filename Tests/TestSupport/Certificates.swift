import Foundation

/// A throwaway PKI for TLS tests: a CA, a leaf for localhost/127.0.0.1/::1 signed by it, and an
/// unrelated self-signed "rogue" leaf. Generated with the openssl command line into a temp directory.
public struct TestCertificates: Sendable {
    public let directory: URL
    public var caFile: String { directory.appendingPathComponent("ca.pem").path }
    public var leafCertificate: String { directory.appendingPathComponent("leaf.pem").path }
    public var leafKey: String { directory.appendingPathComponent("leaf.key").path }
    public var rogueCertificate: String { directory.appendingPathComponent("rogue.pem").path }
    public var rogueKey: String { directory.appendingPathComponent("rogue.key").path }

    public static let shared: Result<TestCertificates, any Error> = Result { try TestCertificates.generate() }

    private static func generate() throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-certs-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try TestProcess.run(["openssl", "req", "-x509"] + curve + [
            "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=wsload test CA", "-days", "2",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ], in: directory)
        try TestProcess.run(["openssl", "req"] + curve + ["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost"],
                            in: directory)
        try """
            subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
            basicConstraints=CA:FALSE
            keyUsage=digitalSignature
            extendedKeyUsage=serverAuth,clientAuth

            """.write(to: directory.appendingPathComponent("leaf.ext"), atomically: true, encoding: .utf8)
        try TestProcess.run([
            "openssl", "x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "leaf.pem", "-days", "2", "-extfile", "leaf.ext",
        ], in: directory)
        try TestProcess.run(["openssl", "req", "-x509"] + curve + [
            "-keyout", "rogue.key", "-out", "rogue.pem", "-subj", "/CN=localhost", "-days", "2",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ], in: directory)
        return TestCertificates(directory: directory)
    }
}

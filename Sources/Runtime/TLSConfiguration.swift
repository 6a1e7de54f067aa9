/// How a TLS endpoint authenticates and what it offers. Verification is on unless ``isInsecure`` is set.
public struct TLSConfiguration: Sendable, Hashable {
    /// A TLS protocol version bound.
    public enum Version: Sendable, Hashable { case tls12, tls13 }

    /// Trust anchors in PEM; `nil` uses the system CA store.
    public var caFile: String?
    /// Skip certificate and hostname verification: only for self-signed targets, and only when asked.
    public var isInsecure: Bool
    /// Our certificate chain (PEM): required for servers, optional client certificate for clients.
    public var certificateChainFile: String?
    /// The private key for ``certificateChainFile`` (PEM).
    public var privateKeyFile: String?
    /// A certificate and key held in memory (e.g. a generated self-signed one) instead of files.
    public var certificateAndKey: CertificateAndKey?
    /// ALPN protocols in preference order, e.g. `["http/1.1"]`.
    public var applicationProtocols: [String]
    public var minimumVersion: Version
    public var maximumVersion: Version
    /// Clients keep sessions per server and resume them, so reconnect storms skip full handshakes.
    public var isSessionResumptionEnabled: Bool

    public init(
        caFile: String? = nil,
        isInsecure: Bool = false,
        certificateChainFile: String? = nil,
        privateKeyFile: String? = nil,
        certificateAndKey: CertificateAndKey? = nil,
        applicationProtocols: [String] = [],
        minimumVersion: Version = .tls12,
        maximumVersion: Version = .tls13,
        isSessionResumptionEnabled: Bool = true
    ) {
        self.caFile = caFile
        self.isInsecure = isInsecure
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
        self.certificateAndKey = certificateAndKey
        self.applicationProtocols = applicationProtocols
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.isSessionResumptionEnabled = isSessionResumptionEnabled
    }
}

import HTTP1
import Lifecycle
import Runtime

/// How transfer tasks connect and behave: the options of a background `URLSessionConfiguration`
/// (resource and request timeouts, discretionary start, constrained networks) plus what a load tool
/// needs (retries, limits on what servers send).
package struct TransferConfiguration: Sendable {
    /// The client TLS context for `https://` (share one so sessions resume); nil uses a verifying default.
    package var tls: TLSContext?
    /// SNI and the certificate name; defaults to the URL's host.
    package var serverName: String?
    package var tcp: TCPOptions
    /// Extra request headers (never `Authorization`: use ``bearerToken``). Those that carry credentials
    /// (``TransferOrigin/isCredentialHeader(_:marked:)``) are sent only to the request's own origin.
    package var headers: HTTPHeaders
    /// More header names (lowercased) that hold credentials, such as a profile's header-auth name: like
    /// `Authorization`, they are dropped on a redirect to another origin.
    package var credentialHeaderNames: Set<String> = []
    /// Sent as `Authorization: Bearer`; never printed, journaled or written to reports.
    package var bearerToken: String?
    /// `timeoutIntervalForRequest`: a response that sends nothing for this long fails with `timeout`.
    package var requestTimeout: Duration
    /// `timeoutIntervalForResource`: the whole transfer, retries included, must end within this.
    package var resourceTimeout: Duration
    /// Redirects followed before failing with `too_many_redirects`.
    package var maximumRedirects: Int
    /// Response heads larger than this fail with `http_protocol`; it also caps the interim (1xx) heads before
    /// a final one, together.
    package var maximumHeadSize: Int
    /// Interim (1xx) responses skipped before a final one; more fail with `http_protocol` (a 1xx flood).
    package var maximumInterimResponses: Int = 16
    /// The whole response head (interim responses included) must arrive within this after the request was
    /// sent, however slowly its bytes trickle in (nil: ``requestTimeout``); a late head fails with `timeout`.
    package var responseHeadTimeout: Duration?
    /// Bodies read into memory (upload answers, error pages) are cut here.
    package var maximumInMemoryBody: Int
    /// Backoff between retries of a failed request or segment.
    package var retry: ReconnectPolicy
    /// `isDiscretionary`: start after a random delay of up to this (spreads a fleet's starts).
    package var discretionaryDelay: Duration?
    /// `allowsConstrainedNetworkAccess = false` as a load tool means it: cap each task at this many
    /// bytes per second (nil or 0: no cap).
    package var bandwidthLimit: Int64?
    /// fdatasync the file before it is moved into place (and the journal after each checkpoint).
    package var isDurable: Bool

    package init(
        tls: TLSContext? = nil, serverName: String? = nil, tcp: TCPOptions = TCPOptions(), headers: HTTPHeaders = HTTPHeaders(),
        bearerToken: String? = nil, requestTimeout: Duration = .seconds(60), resourceTimeout: Duration = .seconds(7 * 24 * 3600),
        maximumRedirects: Int = 5, maximumHeadSize: Int = 64 * 1024, maximumInMemoryBody: Int = 1024 * 1024,
        retry: ReconnectPolicy = ReconnectPolicy(initialDelay: .milliseconds(200), maximumDelay: .seconds(10), jitter: .full,
                                                 maximumAttempts: 5),
        discretionaryDelay: Duration? = nil, bandwidthLimit: Int64? = nil, isDurable: Bool = false
    ) {
        self.tls = tls
        self.serverName = serverName
        self.tcp = tcp
        self.headers = headers
        self.bearerToken = bearerToken
        self.requestTimeout = requestTimeout
        self.resourceTimeout = resourceTimeout
        self.maximumRedirects = maximumRedirects
        self.maximumHeadSize = maximumHeadSize
        self.maximumInMemoryBody = maximumInMemoryBody
        self.retry = retry
        self.discretionaryDelay = discretionaryDelay
        self.bandwidthLimit = bandwidthLimit
        self.isDurable = isDurable
    }
}

/// Why a transfer failed, with a stable code for metrics, and what it takes to resume it.
package struct TransferError: Error, Sendable, CustomStringConvertible {
    /// Stable codes: the runtime's (`refused`, `reset`, `timeout`, `no_space`, `file_too_large`, `tls_verify`,
    /// …) and the transfer's own.
    package enum Code: String, Sendable, Hashable, CaseIterable {
        case httpStatus = "http_status"
        case httpProtocol = "http_protocol"
        case contentRangeMismatch = "content_range_mismatch"
        case validatorChanged = "validator_changed"
        case lengthMismatch = "length_mismatch"
        case digestMismatch = "digest_mismatch"
        case tooManyRedirects = "too_many_redirects"
        case requestTimeout = "timeout"
        case resourceTimeout = "resource_timeout"
        case cancelled
        case invalidRequest = "invalid_request"
        case file
        case network
        /// A redirect from https to http: refused, it would send the request (and what it reveals) in clear.
        case insecureRedirect = "insecure_redirect"
        /// A body without a length ended by a TLS EOF without close_notify: it may be cut short (RFC 8446 §6.1).
        case truncatedBody = "truncated_body"
    }

    package var code: Code
    /// The runtime's code name when the cause was an I/O error (`no_space`, `refused`, …).
    package var runtimeCode: String?
    package var detail: String
    /// The HTTP status, for `http_status`.
    package var status: Int?
    /// How to continue a download later (nil for uploads and when nothing can be resumed).
    package var resumeData: ResumeData?

    package init(_ code: Code, _ detail: String, status: Int? = nil, runtimeCode: String? = nil, resumeData: ResumeData? = nil) {
        self.code = code
        self.detail = detail
        self.status = status
        self.runtimeCode = runtimeCode
        self.resumeData = resumeData
    }

    /// The code metrics count by: the runtime's for I/O failures, else the transfer's.
    package var metricCode: String { runtimeCode ?? code.rawValue }

    package var description: String { "\(metricCode): \(detail)" }

    /// Whether trying again can help (network trouble, 5xx, 408/429, timeouts), as opposed to a
    /// client-side or permanent failure.
    package var isRetryable: Bool {
        switch code {
        case .network, .requestTimeout, .truncatedBody: true
        case .httpStatus: status.map { $0 >= 500 || $0 == 408 || $0 == 429 } ?? false
        case .httpProtocol: true  // a connection cut inside a body surfaces as a framing error
        default: false
        }
    }

    /// Classifies any error thrown below a transfer.
    package static func from(_ error: any Error, doing what: String) -> TransferError {
        switch error {
        case let error as TransferError: return error
        case is CancellationError: return TransferError(.cancelled, "\(what) was cancelled")
        case let error as RuntimeError:
            switch error.code {
            case .noSpace, .fileTooLarge, .notFound, .permissionDenied:
                return TransferError(.file, "\(what): \(error)", runtimeCode: error.code.name)
            case .timedOut:
                return TransferError(.requestTimeout, "\(what): \(error)", runtimeCode: error.code.name)
            default:
                return TransferError(.network, "\(what): \(error)", runtimeCode: error.code.name)
            }
        case let error as HTTPParseError: return TransferError(.httpProtocol, "\(what): \(error)")
        default: return TransferError(.network, "\(what): \(error)")
        }
    }
}

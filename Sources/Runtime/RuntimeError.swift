import CLibUV

/// A failure of the runtime's I/O, with a stable code that reports aggregate by.
///
/// `code` is part of the report schema: its `name` and `number` never change meaning once released.
/// `function` names the libuv or OpenSSL call that failed, `detail` says what the library said.
public struct RuntimeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A closed set of failure kinds; the raw value is the stable number used as a metric tag.
    public enum Code: Int, Sendable, CaseIterable, Comparable {
        case connectionRefused = 1001
        case timedOut = 1002
        case connectionReset = 1003
        case dnsFailure = 1004
        case hostUnreachable = 1005
        case addressInUse = 1006
        case addressNotAvailable = 1007
        case brokenPipe = 1008
        case closed = 1009
        case tooManyOpenFiles = 1010
        case invalidArgument = 1011
        case endOfStream = 1012
        case noSpace = 1013
        case fileTooLarge = 1014
        case notFound = 1015
        case permissionDenied = 1016
        case tlsHandshakeFailed = 1101
        case tlsVerificationFailed = 1102
        case tlsProtocolError = 1103
        case tlsConfiguration = 1104
        case io = 1999

        /// The short, stable name used in reports (`errors{code}`).
        public var name: String {
            switch self {
            case .connectionRefused: "refused"
            case .timedOut: "timeout"
            case .connectionReset: "reset"
            case .dnsFailure: "dns"
            case .hostUnreachable: "unreachable"
            case .addressInUse: "address_in_use"
            case .addressNotAvailable: "address_not_available"
            case .brokenPipe: "broken_pipe"
            case .closed: "closed"
            case .tooManyOpenFiles: "too_many_open_files"
            case .invalidArgument: "invalid_argument"
            case .endOfStream: "eof"
            case .noSpace: "no_space"
            case .fileTooLarge: "file_too_large"
            case .notFound: "not_found"
            case .permissionDenied: "permission_denied"
            case .tlsHandshakeFailed: "tls_handshake"
            case .tlsVerificationFailed: "tls_verify"
            case .tlsProtocolError: "tls_protocol"
            case .tlsConfiguration: "tls_config"
            case .io: "io"
            }
        }

        public static func < (lhs: Code, rhs: Code) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public var code: Code
    /// The C function (or runtime operation) that reported the failure.
    public var function: String
    /// What the library said, e.g. libuv's `strerror` or OpenSSL's verify string.
    public var detail: String

    public init(_ code: Code, function: String, detail: String = "") {
        self.code = code
        self.function = function
        self.detail = detail
    }

    public var description: String {
        detail.isEmpty ? "\(code.name) (\(function))" : "\(code.name) (\(function)): \(detail)"
    }

    /// Maps a negative libuv status to a runtime error, keeping libuv's message.
    init(uvStatus status: Int32, function: String) {
        self.init(Self.code(forUVStatus: status), function: function, detail: String(cString: uv_strerror(status)))
    }

    static func code(forUVStatus status: Int32) -> Code {
        switch status {
        case UV_ECONNREFUSED.rawValue: .connectionRefused
        case UV_ETIMEDOUT.rawValue: .timedOut
        case UV_ECONNRESET.rawValue, UV_ECONNABORTED.rawValue: .connectionReset
        case UV_EAI_NONAME.rawValue, UV_EAI_AGAIN.rawValue, UV_EAI_FAIL.rawValue, UV_EAI_NODATA.rawValue,
            UV_EAI_FAMILY.rawValue, UV_EAI_SERVICE.rawValue:
            .dnsFailure
        case UV_EHOSTUNREACH.rawValue, UV_ENETUNREACH.rawValue, UV_ENETDOWN.rawValue: .hostUnreachable
        case UV_EADDRINUSE.rawValue: .addressInUse
        case UV_EADDRNOTAVAIL.rawValue: .addressNotAvailable
        case UV_EPIPE.rawValue: .brokenPipe
        case UV_EMFILE.rawValue, UV_ENFILE.rawValue: .tooManyOpenFiles
        case UV_EINVAL.rawValue: .invalidArgument
        case UV_EOF.rawValue: .endOfStream
        case UV_ECANCELED.rawValue, UV_EBADF.rawValue: .closed
        case UV_ENOSPC.rawValue, -122 /* EDQUOT on Linux; libuv 1.44 has no UV_EDQUOT */: .noSpace
        case UV_EFBIG.rawValue: .fileTooLarge
        case UV_ENOENT.rawValue: .notFound
        case UV_EACCES.rawValue, UV_EPERM.rawValue, UV_EROFS.rawValue: .permissionDenied
        default: .io
        }
    }
}

/// The one place libuv return values are checked: a negative status becomes a thrown `RuntimeError`.
@inline(__always)
func uvCheck(_ status: Int32, _ function: StaticString) throws(RuntimeError) {
    if status < 0 { throw RuntimeError(uvStatus: status, function: "\(function)") }
}

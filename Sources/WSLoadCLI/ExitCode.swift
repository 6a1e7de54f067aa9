/// The process exit codes of `wsload`; a stable contract documented in the README.
public struct ExitCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Everything held: the command did what was asked.
    public static let success = ExitCode(rawValue: 0)
    /// The command could not do its work (e.g. the target refused every connection).
    public static let failure = ExitCode(rawValue: 1)
    /// A run finished but one or more thresholds failed.
    public static let thresholdsFailed = ExitCode(rawValue: 3)
    /// A run finished but the correctness oracle found invariant violations.
    public static let invariantViolated = ExitCode(rawValue: 4)
    /// `compare` found a regression beyond the allowed budget.
    public static let regression = ExitCode(rawValue: 5)
    /// The command line is wrong (sysexits `EX_USAGE`).
    public static let usage = ExitCode(rawValue: 64)
    /// An input file (profile, report) is invalid (sysexits `EX_DATAERR`).
    public static let invalidInput = ExitCode(rawValue: 65)
    /// An input file does not exist or cannot be read (sysexits `EX_NOINPUT`).
    public static let noInput = ExitCode(rawValue: 66)
    /// An internal error: a bug in wsload (sysexits `EX_SOFTWARE`).
    public static let internalError = ExitCode(rawValue: 70)
    /// An output file could not be written (sysexits `EX_IOERR`).
    public static let ioError = ExitCode(rawValue: 74)
    /// Stopped by SIGINT/SIGTERM after writing what was collected (128 + SIGINT).
    public static let interrupted = ExitCode(rawValue: 130)

    public var description: String { String(rawValue) }
}

/// The process exit codes of `wsload`; a stable contract documented in the README.
package struct ExitCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package var rawValue: Int32
    package init(rawValue: Int32) { self.rawValue = rawValue }

    /// Everything held: the command did what was asked.
    package static let success = ExitCode(rawValue: 0)
    /// The command could not do its work (e.g. the target refused every connection).
    package static let failure = ExitCode(rawValue: 1)
    /// A run finished but one or more thresholds failed.
    package static let thresholdsFailed = ExitCode(rawValue: 3)
    /// A run finished but the correctness oracle found invariant violations.
    package static let invariantViolated = ExitCode(rawValue: 4)
    /// `compare` found a regression beyond the allowed budget.
    package static let regression = ExitCode(rawValue: 5)
    /// A shard is missing: the merge is incomplete (`merge DIR` names the shards it did not find).
    package static let shardMissing = ExitCode(rawValue: 6)
    /// The command line is wrong (sysexits `EX_USAGE`).
    package static let usage = ExitCode(rawValue: 64)
    /// An input file (profile, report) is invalid (sysexits `EX_DATAERR`).
    package static let invalidInput = ExitCode(rawValue: 65)
    /// An input file does not exist or cannot be read (sysexits `EX_NOINPUT`).
    package static let noInput = ExitCode(rawValue: 66)
    /// An internal error: a bug in wsload (sysexits `EX_SOFTWARE`).
    package static let internalError = ExitCode(rawValue: 70)
    /// An output file could not be written (sysexits `EX_IOERR`).
    package static let ioError = ExitCode(rawValue: 74)
    /// Stopped by SIGINT/SIGTERM after writing what was collected (128 + SIGINT).
    package static let interrupted = ExitCode(rawValue: 130)

    package var description: String { String(rawValue) }
}

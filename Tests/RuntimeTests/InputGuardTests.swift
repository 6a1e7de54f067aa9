import Foundation
import Glibc
import Runtime
import TestSupport
import Testing

/// The probe executable built beside this test bundle (`.build/<config>/wsload-runtime-probe`).
private let probePath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("wsload-runtime-probe").path

/// Runs one input check of the probe (Tests/RuntimeProbe/InputChecks.swift) in a child process, so a trap
/// shows as the child's signal instead of killing the suite; returns its output line.
private func probe(_ arguments: String...) async throws -> String {
    let result = try await TestProcess.runWithStatusOffPool([probePath] + arguments)
    guard result.status == 0 else {
        throw TestProcess.Failure(description: "probe \(arguments) exited \(result.status) (a trap shows as signal 4 or 5): \(result.errors)")
    }
    return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
}

private func scratchFile(_ name: String) throws -> String {
    let path = NSTemporaryDirectory() + "wsload-input-guard-\(getpid())-\(name)"
    try Data("0123456789".utf8).write(to: URL(fileURLWithPath: path))
    return path
}

/// Values from profiles, files and the file system reach the runtime's conversions; none may trap.
@Suite("Runtime input guards", .timeLimit(.minutes(2)))
struct InputGuardTests {
    @Test func aSleepAndATimerOfTwoToTheSixtyThreeSecondsNeverFireInsteadOfTrapping() async throws {
        #expect(try await probe("huge-timer") == "sleep cancelled")
    }

    @Test func aFileModifiedInTheYear2286SaturatesItsNanosecondTime() async throws {
        let path = try scratchFile("future")
        defer { unlink(path) }
        // 10^10 s after 1970: 10^19 ns, past Int64.max (9.22 * 10^18).
        try TestProcess.run(["touch", "-d", "@10000000000", path])
        #expect(try await probe("file-time", path) == "modified \(Int64.max)")
    }

    @Test func aFileModifiedBefore1970KeepsItsNegativeTime() async throws {
        let path = try scratchFile("past")
        defer { unlink(path) }
        try TestProcess.run(["touch", "-d", "@-5", path])
        #expect(try await probe("file-time", path) == "modified -5000000000")
    }

    @Test func aNegativeReadCountIsRefusedAsAnInvalidArgument() async throws {
        let path = try scratchFile("read")
        defer { unlink(path) }
        #expect(try await probe("negative-read", path) == "refused invalid_argument")
    }

    /// Thousands of short names fill readdir's 32 KiB buffer to within one short record of its end, so
    /// copying a whole 256-byte `d_name` reads past it; only AddressSanitizer sees that (scripts/sanitize.sh).
    @Test func aDirectoryOfThreeThousandShortNamesIsListedWithoutReadingPastReaddirsBuffer() async throws {
        let directory = NSTemporaryDirectory() + "wsload-input-guard-\(getpid())-names"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }  // a scratch directory; a leftover is harmless
        for index in 0..<3000 {
            guard FileManager.default.createFile(atPath: directory + "/f\(index)", contents: nil) else {
                throw TestProcess.Failure(description: "cannot create \(directory)/f\(index)")
            }
        }
        #expect(try await probe("list-directory", directory) == "listed 3000, first f0")
    }

    @Test func anALPNNameOverTwoHundredFiftyFiveBytesIsATLSConfigurationError() async throws {
        #expect(try await probe("long-alpn") == "refused tls_config")
    }
}

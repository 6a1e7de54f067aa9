import FileInput
import Foundation
import LoadEngine
import Profile
import Reporting

/// `wsload validate PROFILE`: every problem of a profile, each with its JSON path.
enum ValidateCommand: Subcommand {
    static let name = "validate"
    static let summary = "Check a profile and list every problem with its JSON path."
    static let helpText = """
        OVERVIEW: Check a profile and list every problem with its JSON path.

        Checks everything a run would: unknown keys, kinds, ranges, durations, URLs, thresholds and
        references between them, and reads the feeders' data files. Prints one line per problem and exits
        65 if there is any (66 if a data file cannot be read).

        USAGE: wsload validate <profile.json> [options]

        ARGUMENTS:
          <profile.json>          The profile to check.

        OPTIONS:
          --target <url>          Check it as run against this ws:// or wss:// URL (or "embedded").
          --duration <duration>   Check it as run this long.
          --seed <n>              Check it as run with this seed.
          --loops <n>             Check it as run on this many event loops.
          -h, --help              Show help information.

        The options mean what they mean to 'wsload run': validate checks the profile such a run would run.

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        guard let path = arguments.first, !path.hasPrefix("--") else {
            output.printError("Error: validate takes exactly one profile path. See 'wsload validate --help'.")
            return .usage
        }
        let overrides: ProfileOverrides
        do {
            overrides = try Arguments(
                Array(arguments.dropFirst()), valueOptions: Arguments.profileOverrideOptions, flagOptions: []
            ).profileOverrides()
        } catch {
            output.printError("Error: \(error). See 'wsload validate --help'.")
            return .usage
        }
        switch loadProfile(path, overrides: overrides) {
        case .failure(let failure):
            failure.print(to: output, path: path)
            return failure.exitCode
        case .success(var profile):
            if let failure = loadFeeders(into: &profile, path: path, output: output) { return failure }
            let connections = profile.scenarios.reduce(0) { $0 + $1.websocket.connections }
            output.print("\(path): valid — \(profile.scenarios.count) scenario\(profile.scenarios.count == 1 ? "" : "s"), "
                + "\(connections) connection\(connections == 1 ? "" : "s"), \(formatDuration(profile.duration))")
            return .success
        }
    }
}

/// Why a profile could not be used.
enum ProfileLoadFailure: Error {
    case unreadable(String)
    /// Over ``ProfileDecoder/maximumSize``: refused after reading one byte past it (bad content: 65).
    case tooLarge
    case invalid(ProfileError)

    var exitCode: ExitCode {
        switch self {
        case .unreadable: .noInput
        case .tooLarge, .invalid: .invalidInput
        }
    }

    func print(to output: CommandOutput, path: String) {
        switch self {
        case .unreadable(let reason):
            output.printError("Error: cannot read \(path): \(reason)")
        case .tooLarge:
            output.printError("\(path): the profile is larger than \(ProfileDecoder.maximumSize) bytes, the limit")
        case .invalid(let error):
            output.printError("\(path): \(error.problems.count) problem\(error.problems.count == 1 ? "" : "s"):")
            for problem in error.problems { output.printError("  " + problem.description) }
        }
    }
}

/// Reads and decodes a profile file (bounded: a profile is configuration), with the command line's overrides
/// written into it before it is validated. A FIFO, device or directory is refused (66) before anything waits on it.
func loadProfile(_ path: String, overrides: ProfileOverrides = ProfileOverrides()) -> Result<Profile, ProfileLoadFailure> {
    let bytes: [UInt8]
    do throws(UntrustedFile.Failure) {
        bytes = try UntrustedFile.read(path, cap: ProfileDecoder.maximumSize)
    } catch where error.isTooLarge {
        return .failure(.tooLarge)
    } catch {
        return .failure(.unreadable(error.reason))
    }
    do {
        return .success(try ProfileDecoder.decode(bytes, overrides: overrides))
    } catch {
        return .failure(.invalid(error))
    }
}

/// Reads and checks the profile's feeders (`data`) into `profile.feederTables`; on failure prints every problem
/// and returns the exit code (66 a file missing or unreadable, 65 a bad or short one). Relative paths are taken
/// from the current directory, as `tokenFile` and `caFile` are.
func loadFeeders(into profile: inout Profile, path: String, output: CommandOutput) -> ExitCode? {
    guard !profile.data.isEmpty else { return nil }
    switch FeederLoader.load(profile, read: readFeederFile) {
    case .success(let tables):
        profile.feederTables = tables
        return nil
    case .failure(let error):
        output.printError("\(path): \(error.problems.count) problem\(error.problems.count == 1 ? "" : "s") with its data:")
        for problem in error.problems { output.printError("  " + problem.description) }
        return ExitCode(rawValue: error.exitCode)
    }
}

/// A feeder file's bytes: a regular file of at most the feeder size limit (``UntrustedFile``).
private func readFeederFile(_ file: String) throws -> [UInt8] {
    struct Unreadable: Error, CustomStringConvertible { var description: String }
    do throws(UntrustedFile.Failure) {
        return try UntrustedFile.read(file, cap: FeederLoader.maximumFileSize)
    } catch where error.isTooLarge {
        throw FeederLoader.FileTooLarge()
    } catch {
        throw Unreadable(description: error.reason)
    }
}

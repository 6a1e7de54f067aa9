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
        references between them. Prints one line per problem and exits 65 if there is any.

        USAGE: wsload validate <profile.json>

        ARGUMENTS:
          <profile.json>          The profile to check.

        OPTIONS:
          -h, --help              Show help information.

        """

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        guard arguments.count == 1, let path = arguments.first, !path.hasPrefix("--") else {
            output.printError("Error: validate takes exactly one profile path. See 'wsload validate --help'.")
            return .usage
        }
        switch loadProfile(path) {
        case .failure(let failure):
            failure.print(to: output, path: path)
            return failure.exitCode
        case .success(let profile):
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
    case invalid(ProfileError)

    var exitCode: ExitCode {
        switch self {
        case .unreadable: .noInput
        case .invalid: .invalidInput
        }
    }

    func print(to output: CommandOutput, path: String) {
        switch self {
        case .unreadable(let reason):
            output.printError("Error: cannot read \(path): \(reason)")
        case .invalid(let error):
            output.printError("\(path): \(error.problems.count) problem\(error.problems.count == 1 ? "" : "s"):")
            for problem in error.problems { output.printError("  " + problem.description) }
        }
    }
}

/// Reads and decodes a profile file (bounded: a profile is configuration).
func loadProfile(_ path: String) -> Result<Profile, ProfileLoadFailure> {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        return .failure(.unreadable("no such file"))
    }
    guard !isDirectory.boolValue else { return .failure(.unreadable("it is a directory")) }
    guard let handle = FileHandle(forReadingAtPath: path) else { return .failure(.unreadable("permission denied")) }
    defer { try? handle.close() }
    let data = (try? handle.read(upToCount: ProfileDecoder.maximumSize + 1)).flatMap { $0 } ?? Data()
    do {
        return .success(try ProfileDecoder.decode(Array(data)))
    } catch {
        return .failure(.invalid(error))
    }
}

import FileInput
import Foundation
import Glibc
import Profile

/// `run --start-at TIME`: the wall-clock instant the run's coordinator starts at (the ramps' zero), so the shards of
/// one run, on any number of machines, start together.
///
/// TIME is an RFC 3339 time (``RFC3339``), or `@FILE` / `@FILE+DURATION`: the RFC 3339 time a launcher wrote in FILE
/// (one line) plus a lead (`30s`, `1.5m`), so a job script can name a start that is only known when it is submitted.
/// When FILE's own name ends in `+<duration>`, name it another way (`./launch+5s+0s`): the last `+` that is followed
/// by a duration always starts the lead.
struct StartAtOption: Sendable, Equatable {
    /// The instant asked for.
    var time: WallTime
    /// How it was given, for messages (the argument as written).
    var argument: String

    var date: Date { time.date }

    /// The furthest ahead a start may be: a later one is a typo (a wrong day or year), refused with exit 64.
    static let maximumLead: Int64 = 24 * 3600
    /// The largest FILE read: a launch time is one short line.
    static let maximumFileSize = 1024

    /// Why `--start-at` was refused, with its exit code: 64 for the argument (syntax, a time before 1970 or more
    /// than 24 h ahead), 66 for a FILE that cannot be read, 65 for one that does not hold one RFC 3339 line.
    struct Failure: Error, CustomStringConvertible, Equatable {
        var description: String
        var exitCode: ExitCode
    }

    /// Resolves `argument` against the wall clock `now` (read once by the caller).
    static func resolve(_ argument: String, now: Date) -> Result<StartAtOption, Failure> {
        let shown = quoted(argument)
        let time: WallTime
        if argument.hasPrefix("@") {
            var path = String(argument.dropFirst())
            var lead = Duration.zero
            if let plus = path.lastIndex(of: "+"), let parsed = parseDuration(String(path[path.index(after: plus)...])) {
                lead = parsed
                path = String(path[..<plus])
            }
            guard !path.isEmpty else {
                return .failure(.init(description: "--start-at: \(shown) names no file (give @FILE or @FILE+30s)", exitCode: .usage))
            }
            let line: String
            switch readLine(of: path) {
            case .failure(let failure): return .failure(failure)
            case .success(let text): line = text
            }
            switch RFC3339.parse(line) {
            case .failure(let reason):
                return .failure(.init(description: "--start-at: \(quoted(path)): \(quoted(line)) is not an RFC 3339 time "
                    + "(\(reason)); the file should hold one line such as 2026-12-01T23:30:00Z", exitCode: .invalidInput))
            case .success(let written):
                guard written.seconds >= 0 else {
                    return .failure(.init(description: "--start-at: \(quoted(path)): \(quoted(line)) is before 1970: "
                        + "not a launch time", exitCode: .invalidInput))
                }
                guard let sum = written.adding(lead) else {
                    return .failure(.init(description: "--start-at: \(shown): the lead takes the time out of range", exitCode: .usage))
                }
                time = sum
            }
        } else {
            switch RFC3339.parse(argument) {
            case .failure(let reason):
                return .failure(.init(description: "--start-at: \(shown) is not an RFC 3339 time (\(reason)); give one such as "
                    + "2026-12-01T23:30:00Z or 2026-12-01T23:30:00.250+01:00, or @FILE+30s", exitCode: .usage))
            case .success(let parsed):
                guard parsed.seconds >= 0 else {
                    return .failure(.init(description: "--start-at: \(shown) is before 1970", exitCode: .usage))
                }
                time = parsed
            }
        }
        // Whole seconds of the wall clock, compared exactly (a far-future year must not overflow anything).
        let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))
        if time.seconds > nowSeconds, time.seconds - nowSeconds > maximumLead {
            return .failure(.init(description: "--start-at: \(shown) is \(formatAhead(time.seconds - nowSeconds)) ahead; "
                + "more than 24 h is refused as a typo", exitCode: .usage))
        }
        return .success(StartAtOption(time: time, argument: argument))
    }

    /// FILE's one line: a regular file (never a FIFO or a device, which could block or never end) of at most
    /// ``maximumFileSize`` bytes, UTF-8, without the spaces and line end around it.
    private static func readLine(of path: String) -> Result<String, Failure> {
        let shown = quoted(path)
        let bytes: [UInt8]
        do throws(UntrustedFile.Failure) {
            bytes = try UntrustedFile.read(path, cap: maximumFileSize)
        } catch {
            switch error.kind {
            case .tooLarge:
                return .failure(.init(description: "--start-at: \(shown) is larger than \(maximumFileSize) bytes: not a launch "
                    + "time file (one RFC 3339 line)", exitCode: .invalidInput))
            case .notRegularFile(let what):
                return .failure(.init(description: "--start-at: \(shown) is not a regular file (it is \(what))", exitCode: .noInput))
            default:
                return .failure(.init(description: "--start-at: cannot open \(shown): \(error.reason)", exitCode: .noInput))
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(.init(description: "--start-at: \(shown) is not UTF-8 text", exitCode: .invalidInput))
        }
        let line = text.trimmingCharacters(in: CharacterSet(charactersIn: " \t\r\n"))
        guard !line.isEmpty else {
            return .failure(.init(description: "--start-at: \(shown) is empty (has the launcher written it yet?)",
                                  exitCode: .invalidInput))
        }
        guard !line.contains(where: \.isNewline) else {
            return .failure(.init(description: "--start-at: \(shown) holds more than one line; it should hold one RFC 3339 time",
                                  exitCode: .invalidInput))
        }
        return .success(line)
    }

    /// `text` in quotes, cut at 80 characters (a message quotes what a file or an argument said, not all of it).
    private static func quoted(_ text: String) -> String {
        text.count <= 80 ? "\"\(text)\"" : "\"\(text.prefix(80))…\""
    }

    private static func formatAhead(_ seconds: Int64) -> String {
        seconds >= 2 * 86_400 ? "\(seconds / 86_400) days" : "\(seconds / 3600) h"
    }
}

extension StartAtOption {
    /// Says on stderr what the start time means for this run: the wait (unless quiet; Ctrl-C ends it with no report),
    /// or, for a time already past, a warning that the run starts late (always: the report's `run.lateBy` says how late).
    func announce(now: Date, output: CommandOutput, isQuiet: Bool) {
        let shown = RFC3339Text.utc(date)
        let ahead = date.timeIntervalSince(now)
        if ahead > 0 {
            if !isQuiet {
                output.printError("waiting until \(shown) to start (\(formatDuration(.seconds(ahead)))); Ctrl-C stops "
                    + "without a report")
            }
        } else {
            output.printError("warning: --start-at \(shown) passed \(formatDuration(.seconds(-ahead))) ago; starting now "
                + "(the report's run.lateBy says how late)")
        }
    }
}

/// Times as messages show them: RFC 3339 in UTC with milliseconds, as the report writes them.
enum RFC3339Text {
    static func utc(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}

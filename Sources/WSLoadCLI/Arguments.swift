import HTTP1
import LoadEngine
import Profile
import Reporting
import WebSocket

/// A command-line mistake: reported with the option it concerns, exit code 64.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Options and flags of one subcommand, parsed from `--name value`, `--name=value` and `--flag`.
struct Arguments {
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []
    /// Arguments that are not options, in order (only when the command accepts them).
    private(set) var positional: [String] = []

    /// - Parameters:
    ///   - valueOptions: options that take a value (without the leading dashes).
    ///   - flagOptions: options that take none.
    ///   - acceptsPositional: collect other arguments in ``positional`` instead of refusing them.
    init(_ arguments: [String], valueOptions: Set<String>, flagOptions: Set<String>, acceptsPositional: Bool = false) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            guard argument.hasPrefix("--"), argument.count > 2 else {
                guard acceptsPositional, !argument.hasPrefix("-") || argument == "-" else {
                    throw UsageError("unexpected argument '\(argument)'")
                }
                positional.append(argument)
                index += 1
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if flagOptions.contains(name) {
                guard inlineValue == nil else { throw UsageError("option '--\(name)' takes no value") }
                flags.insert(name)
            } else if valueOptions.contains(name) {
                if let inlineValue {
                    values[name, default: []].append(inlineValue)
                } else {
                    index += 1
                    guard index < arguments.count else { throw UsageError("option '--\(name)' needs a value") }
                    values[name, default: []].append(arguments[index])
                }
            } else {
                throw UsageError("unknown option '--\(name)'")
            }
            index += 1
        }
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The last value given for `name`.
    func value(_ name: String) -> String? { values[name]?.last }

    /// Every value given for a repeatable option.
    func values(_ name: String) -> [String] { values[name] ?? [] }

    func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("--\(name): \"\(text)\" is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    func fraction(_ name: String) throws(UsageError) -> Double? {
        guard let text = value(name) else { return nil }
        guard let number = Double(text), (0...1).contains(number) else {
            throw UsageError("--\(name): \"\(text)\" is not a probability from 0 to 1")
        }
        return number
    }

    func byteSize(_ name: String) throws(UsageError) -> Int64? {
        guard let text = value(name) else { return nil }
        guard let size = parseByteSize(text) else {
            throw UsageError("--\(name): \"\(text)\" is not a size (use 65536, 512k, 256MiB, 1G)")
        }
        return size
    }

    func duration(_ name: String) throws(UsageError) -> Duration? {
        guard let text = value(name) else { return nil }
        guard let duration = parseDuration(text) else {
            throw UsageError("--\(name): \"\(text)\" is not a duration (use 500ms, 10s, 5m, 2h)")
        }
        return duration
    }
}

extension Arguments {
    /// A `--header "Name: value"` argument split and checked (``HTTPHeaders/validate(name:value:)``): the name a
    /// token, the value free of CR, LF, NUL and other control characters. Spaces around the name and before the value
    /// are dropped. The error never repeats the argument: a header is where a credential would be.
    static func header(_ text: String, option: String = "--header") throws(UsageError) -> (name: String, value: String) {
        guard let colon = text.utf8.firstIndex(of: UInt8(ascii: ":")) else {
            throw UsageError("\(option): an argument without \":\"; give \"Name: value\"")
        }
        let name = text[..<colon].trimmingHeaderSpaces()
        let value = String(text[text.utf8.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
        do {
            try HTTPHeaders.validate(name: name, value: value)
        } catch {
            throw UsageError("\(option): \(error)")
        }
        return (name, value)
    }

    /// The options of `run` and `validate` that replace a profile's own values.
    static let profileOverrideOptions: Set<String> = ["target", "duration", "seed", "loops"]

    /// The profile overrides given, checked as command-line syntax here (a malformed value exits 64); what they mean
    /// for the profile (chaos against an external target, events after the duration) is the decoder's to check (65).
    func profileOverrides() throws(UsageError) -> ProfileOverrides {
        if let target = value("target"), target != "embedded" {
            do {
                _ = try WebSocketURL(target)
            } catch {
                throw UsageError("--target: \(error) (give a ws:// or wss:// URL, or \"embedded\")")
            }
        }
        _ = try duration("duration")
        return ProfileOverrides(
            target: value("target"), duration: value("duration"), seed: try integer("seed", in: 0...Int.max).map { UInt64($0) },
            loops: try integer("loops", in: 1...256))
    }
}

extension Substring {
    fileprivate func trimmingHeaderSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

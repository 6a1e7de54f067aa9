import Foundation
import Glibc
import Runtime
import WebSocket

/// The hidden options and the control channel between `wsload run --processes` and the processes it starts: a
/// shard child (`run … --control-fd 3 --progress-fd 4 [--embedded-at URL]`) or a server process (`serve
/// --profile-server PROFILE … --control-fd 3`). Declared once here; `run --help` and `serve --help` do not list them
/// (they are the parent's wiring, not a user's options).
enum ProcessControl {
    /// `run`: the embedded server of the profile runs at this URL, in another process; connect there, start none.
    static let embeddedAt = "embedded-at"
    /// `run` and `serve --profile-server`: read control lines from this descriptor (see ``Message``).
    static let controlDescriptor = "control-fd"
    /// `run`: write one progress line (``ProgressLine``) per gather to this descriptor.
    static let progressDescriptor = "progress-fd"
    /// `serve`: run the embedded server of this profile (its settings, its chaos timeline), ready line on stdout.
    static let profileServer = "profile-server"

    /// The hidden value options `run` accepts.
    static let runOptions: Set<String> = [embeddedAt, controlDescriptor, progressDescriptor]

    /// The descriptor numbers the parent gives its children.
    static let controlNumber: Int32 = 3
    static let progressNumber: Int32 = 4

    /// What the parent writes on a child's control descriptor, one line each. The parent's end closing (the parent
    /// died, even by SIGKILL) reads as a stop with SIGTERM: the children's parent-death signal, from a pipe, since
    /// posix_spawn has no PR_SET_PDEATHSIG.
    enum Message: Equatable, Sendable {
        /// Stop gracefully, as if `signal` had come (a forwarded SIGINT or SIGTERM; a repeat is ignored).
        case stop(signal: Int32)
        /// The run's zero, in milliseconds since 1970 (for a server process's chaos timeline).
        case start(millisecondsSince1970: Int64)

        var line: String {
            switch self {
            case .stop(let signal): "stop \(signal)\n"
            case .start(let milliseconds): "start \(milliseconds)\n"
            }
        }

        /// Parses one line; nil for anything else (ignored: the parent is the only writer).
        init?(line: String) {
            let words = line.split(separator: " ")
            guard words.count == 2 else { return nil }
            switch words[0] {
            case "stop":
                guard let signal = Int32(words[1]), signal > 0, signal < 65 else { return nil }
                self = .stop(signal: signal)
            case "start":
                guard let milliseconds = Int64(words[1]), milliseconds >= 0 else { return nil }
                self = .start(millisecondsSince1970: milliseconds)
            default:
                return nil
            }
        }
    }

    /// A hidden descriptor option's value: a small number that is an open descriptor. - Throws: ``UsageError``.
    static func descriptor(_ arguments: Arguments, _ name: String) throws(UsageError) -> Int32? {
        guard let number = try arguments.integer(name, in: 3...1023) else { return nil }
        guard fcntl(Int32(number), F_GETFD) >= 0 else { throw UsageError("--\(name): \(number) is not an open descriptor") }
        return Int32(number)
    }

    /// Reads control lines from `descriptor` on a thread of its own until its end: each message goes to `handle`,
    /// and the end (the parent gone) arrives as `.stop(signal: SIGTERM)`.
    static func watch(_ descriptor: Int32, handle: @escaping @Sendable (Message) -> Void) {
        let thread = Thread {
            var lines = DescriptorLines(descriptor: descriptor, maximumLine: 256)
            while !lines.isAtEnd {
                for line in lines.readLines() {
                    if let message = Message(line: line) { handle(message) }
                }
            }
            handle(.stop(signal: SIGTERM))
        }
        thread.name = "wsload-control"
        thread.start()
    }
}

extension RunCommand {
    /// The hidden options of a shard child (``ProcessControl``), parsed: none in a user's run.
    struct ChildOptions {
        /// `--embedded-at`: where the profile's embedded server runs.
        var embeddedServer: WebSocketURL?
        /// `--control-fd`.
        var control: Int32?
        /// `--progress-fd`.
        var progress: Int32?

        init(_ options: Arguments) throws(UsageError) {
            if let text = options.value(ProcessControl.embeddedAt) {
                do {
                    embeddedServer = try WebSocketURL(text)
                } catch {
                    throw UsageError("--\(ProcessControl.embeddedAt): \(error)")
                }
            }
            control = try ProcessControl.descriptor(options, ProcessControl.controlDescriptor)
            progress = try ProcessControl.descriptor(options, ProcessControl.progressDescriptor)
        }

        /// Starts reading the control descriptor: a stop (or the parent's end) requests `shutdown`.
        func watchControl(_ shutdown: GracefulShutdown) {
            guard let control else { return }
            ProcessControl.watch(control) { message in
                if case .stop(let signal) = message { shutdown.request(signal: signal) }
            }
        }
    }
}

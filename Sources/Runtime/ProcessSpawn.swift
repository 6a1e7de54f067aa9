import CLibUV
import Glibc

/// Child processes started with `posix_spawn(3)`, never `fork` in a threaded process and never Foundation's
/// `Process` (which crashes past about 1,350 open descriptors, swift-corelibs-foundation #5472). Each child gets
/// exactly the descriptors it is given: 0, 1, 2 and any others from ``Descriptor``s, every other descriptor closed
/// (`posix_spawn_file_actions_addclosefrom_np`), SIGINT, SIGTERM and SIGPIPE back to their defaults and no signal
/// blocked, in the caller's process group (a terminal's Ctrl-C reaches it as it reaches the caller).
public enum ProcessSpawn {
    /// What one of a child's descriptors is.
    public enum Descriptor: Sendable, Hashable {
        /// `/dev/null`, opened for reading (`isWritable` false) or writing.
        case null(isWritable: Bool)
        /// This process's descriptor, duplicated into the child (its close-on-exec flag does not carry over).
        case duplicate(Int32)
    }

    /// Starts `executable` with `arguments` (the first is the child's `argv[0]`) and this process's environment.
    /// - Parameters:
    ///   - descriptors: the child's descriptors by number; 0, 1 and 2 default to `/dev/null`.
    ///   - isGroupLeader: the child leads a process group of its own instead (a signal to the caller's group, a
    ///     terminal's Ctrl-C, does not reach it), as Foundation's `Process` starts children.
    /// - Returns: the child's process id. - Throws: ``RuntimeError`` naming `posix_spawn` and why.
    public static func spawn(
        _ executable: String, arguments: [String], descriptors: [Int32: Descriptor], isGroupLeader: Bool = false
    ) throws(RuntimeError) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        var all = descriptors
        for standard: Int32 in 0...2 where all[standard] == nil { all[standard] = .null(isWritable: standard != 0) }
        let highest = all.keys.max() ?? 2
        // Sources first moved above every target and every source, so a dup2 never overwrites a source another action
        // still needs (a source may itself sit just above the targets: a pipe on descriptor 3 or 4).
        var moved: [Int32: Int32] = [:]
        var next = max(highest, all.values.compactMap { if case .duplicate(let source) = $0 { source } else { nil } }.max() ?? 0) + 1
        for (_, descriptor) in all.sorted(by: { $0.key < $1.key }) {
            guard case .duplicate(let source) = descriptor, moved[source] == nil else { continue }
            posix_spawn_file_actions_adddup2(&actions, source, next)
            moved[source] = next
            next += 1
        }
        for (target, descriptor) in all.sorted(by: { $0.key < $1.key }) {
            switch descriptor {
            case .null(let isWritable):
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", isWritable ? O_WRONLY : O_RDONLY, 0)
            case .duplicate(let source):
                posix_spawn_file_actions_adddup2(&actions, moved[source]!, target)
            }
        }
        posix_spawn_file_actions_addclosefrom_np(&actions, highest + 1)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if isGroupLeader {
            flags |= POSIX_SPAWN_SETPGROUP
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let status = argv.withUnsafeBufferPointer { pointers in
            posix_spawn(&pid, executable, &actions, &attributes, UnsafeMutablePointer(mutating: pointers.baseAddress!), environ)
        }
        guard status == 0 else {
            throw RuntimeError(.io, function: "posix_spawn", detail: "\(executable): \(String(cString: strerror(status)))")
        }
        return pid
    }

    /// How a child ended.
    public enum Termination: Sendable, Hashable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        private static func name(ofSignal signal: Int32) -> String {
            switch signal {
            case SIGKILL: "SIGKILL"
            case SIGSEGV: "SIGSEGV"
            case SIGABRT: "SIGABRT"
            case SIGBUS: "SIGBUS"
            case SIGILL: "SIGILL"
            case SIGTRAP: "SIGTRAP"
            default: signalName(signal)
            }
        }

        public var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signalled(let signal): "was killed by \(Self.name(ofSignal: signal))"
            }
        }
    }

    /// Reaps `pid` if it has ended (`waitpid` with `WNOHANG`): its termination, or nil while it runs. A pid that is
    /// not a child (already reaped) reads as exited with status 127.
    public static func reap(_ pid: Int32) -> Termination? {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == 0 { return nil }
        if result < 0 { return errno == EINTR ? nil : .exited(127) }
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros: the status layout is Linux's.
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }

    /// Sends `signal` to `pid` (a child that already ended is no error).
    public static func send(_ signal: Int32, to pid: Int32) { _ = kill(pid, signal) }

    /// The path a process runs itself again by.
    public static let currentExecutable = "/proc/self/exe"
}

/// A pipe whose ends are close-on-exec (so no other child inherits them) and closed when released.
public final class ProcessPipe: Sendable {
    /// The read end, or -1 once closed.
    public let readEnd: Int32
    public let writeEnd: Int32

    public init() throws(RuntimeError) {
        var ends: [Int32] = [-1, -1]
        guard pipe2(&ends, O_CLOEXEC) == 0 else {
            throw RuntimeError(.io, function: "pipe2", detail: String(cString: strerror(errno)))
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    /// Writes all of `text` to `descriptor`, blocking; false when the reader is gone (EPIPE) or another error.
    @discardableResult
    public static func write(_ text: String, to descriptor: Int32) -> Bool {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// Closes `descriptor` (one end handed to a child, once the child has its copy).
    public static func close(_ descriptor: Int32) { _ = Glibc.close(descriptor) }
}

/// Lines read from a descriptor (a pipe), split at `\n`; a line longer than `maximumLine` bytes is cut there.
public struct DescriptorLines: Sendable {
    public let descriptor: Int32
    public let maximumLine: Int
    private var pending: [UInt8] = []
    /// True once the writer closed its end (or a read failed).
    public private(set) var isAtEnd = false

    public init(descriptor: Int32, maximumLine: Int = 1 << 24) {
        self.descriptor = descriptor
        self.maximumLine = maximumLine
    }

    /// Reads what is there (one `read`, which blocks unless the descriptor is ready) and returns the complete lines.
    public mutating func readLines() -> [String] {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { return [] }
        guard count > 0 else {
            isAtEnd = true
            defer { pending = [] }
            return pending.isEmpty ? [] : [String(decoding: pending, as: UTF8.self)]
        }
        var lines: [String] = []
        for byte in buffer[..<count] {
            if byte == UInt8(ascii: "\n") {
                lines.append(String(decoding: pending, as: UTF8.self))
                pending.removeAll(keepingCapacity: true)
            } else if pending.count < maximumLine {
                pending.append(byte)
            }
        }
        return lines
    }

    /// Waits up to `milliseconds` for any of `descriptors` to be readable (or at its end); returns those that are.
    public static func ready(_ descriptors: [Int32], milliseconds: Int32) -> [Int32] {
        guard !descriptors.isEmpty else {
            usleep(UInt32(max(0, milliseconds)) * 1000)
            return []
        }
        var polled = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let count = poll(&polled, nfds_t(polled.count), milliseconds)
        guard count > 0 else { return [] }
        return polled.filter { $0.revents != 0 }.map(\.fd)
    }
}

import Glibc

/// A file named by a user or a profile (a profile, a feeder, a report, a journal, a token, a certificate, a launch-time
/// file), opened so that nothing waits on it and read within a cap, so that a FIFO, a device, a directory or a socket
/// put where a file should be is refused at once, naming what it is, instead of hanging or reading without end.
///
/// The open is `O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY` (plus `O_NOFOLLOW` when the caller refuses links):
/// `O_NONBLOCK` lets the open of a FIFO return instead of waiting for a writer; the `fstat` of what was opened (not of
/// the path, which could change in between) then refuses everything that is not a regular file. Reads of a regular
/// file never block whatever the flag, so from there on they are plain reads (EINTR retried). Every caller keeps its
/// own wording and exit code: ``Failure`` says what went wrong, the caller says what that means for its command.
public enum UntrustedFile {
    /// Why a file was refused.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was wrong with the file; callers map it to their own wording and exit code.
        public enum Kind: Sendable, Equatable {
            /// Nothing at the path (ENOENT, or ENOTDIR: a parent is not a directory).
            case missing
            case permissionDenied
            /// A FIFO, device, directory or socket; the text names which (`a FIFO`).
            case notRegularFile(String)
            /// A symbolic link where the caller refuses one (`followsLinks: false`).
            case symbolicLink
            /// More bytes than the caller's cap (read one past it, so a file that grew while it was read is caught).
            case tooLarge(cap: Int)
            /// Any other error of open, fstat or read, as `strerror` words it.
            case unreadable(String)
        }

        public var path: String
        public var kind: Kind

        public init(path: String, kind: Kind) {
            self.path = path
            self.kind = kind
        }

        /// What is wrong, without the path: `no such file`, `is a FIFO, not a regular file`,
        /// `is larger than 64 KiB`.
        public var reason: String {
            switch kind {
            case .missing: "no such file"
            case .permissionDenied: "permission denied"
            case .notRegularFile(let what): "is \(what), not a regular file"
            case .symbolicLink: "is a symbolic link (refused here)"
            case .tooLarge(let cap): "is larger than \(UntrustedFile.describe(bytes: cap))"
            case .unreadable(let reason): "cannot be read (\(reason))"
            }
        }

        /// Whether the file could not be used at all (as opposed to being too large, which is bad content).
        public var isTooLarge: Bool {
            if case .tooLarge = kind { return true }
            return false
        }

        public var description: String { "\(path): \(reason)" }
    }

    /// Opens `path` for reading and checks that it is a regular file; the caller owns (and closes) the descriptor.
    /// - Parameter followsLinks: false refuses a symbolic link as the last component (`O_NOFOLLOW`).
    /// - Returns: the descriptor and the file's size when it was opened.
    public static func open(_ path: String, followsLinks: Bool = true) throws(Failure) -> (descriptor: Int32, size: Int) {
        let flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (followsLinks ? 0 : O_NOFOLLOW)
        var descriptor: Int32
        repeat { descriptor = Glibc.open(path, flags) } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else { throw openFailure(path, errno: errno, followsLinks: followsLinks) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw Failure(path: path, kind: .unreadable(reason))
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(descriptor)
            throw Failure(path: path, kind: .notRegularFile(kindName(status.st_mode)))
        }
        return (descriptor, Int(clamping: status.st_size))
    }

    /// The whole of the regular file at `path`, at most `cap` bytes: a larger one is refused by its size before it is
    /// read, or after one byte past the cap when it grew (or, like `/proc` files, has no size).
    public static func read(_ path: String, cap: Int, followsLinks: Bool = true) throws(Failure) -> [UInt8] {
        let (descriptor, size) = try open(path, followsLinks: followsLinks)
        defer { Glibc.close(descriptor) }
        guard size <= cap else { throw Failure(path: path, kind: .tooLarge(cap: cap)) }
        let limit = cap == .max ? cap : cap + 1
        var bytes = [UInt8](repeating: 0, count: min(limit, max(size + 1, 4096)))
        var count = 0
        while count < limit {
            if count == bytes.count {
                let grown = min(limit, bytes.count.multipliedReportingOverflow(by: 2).partialValue)
                bytes.append(contentsOf: repeatElement(0, count: max(0, grown - bytes.count)))
            }
            let result = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if result < 0 {
                if errno == EINTR { continue }
                throw Failure(path: path, kind: .unreadable(String(cString: strerror(errno))))
            }
            if result == 0 { break }
            count += result
        }
        guard count <= cap else { throw Failure(path: path, kind: .tooLarge(cap: cap)) }
        bytes.removeLast(bytes.count - count)
        return bytes
    }

    /// `64 KiB`, `512 MiB`, `1000 bytes`: a cap as a person reads it.
    public static func describe(bytes: Int) -> String {
        if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10 && bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    private static func openFailure(_ path: String, errno code: Int32, followsLinks: Bool) -> Failure {
        switch code {
        case ENOENT, ENOTDIR: return Failure(path: path, kind: .missing)
        case EACCES, EPERM: return Failure(path: path, kind: .permissionDenied)
        case ELOOP where !followsLinks: return Failure(path: path, kind: .symbolicLink)
        case ENXIO, EOPNOTSUPP:
            // A Unix socket cannot be opened at all; say what it is rather than "no such device".
            var status = stat()
            if stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
                return Failure(path: path, kind: .notRegularFile(kindName(status.st_mode)))
            }
            return Failure(path: path, kind: .unreadable(String(cString: strerror(code))))
        default: return Failure(path: path, kind: .unreadable(String(cString: strerror(code))))
        }
    }

    private static func kindName(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFDIR: "a directory"
        case S_IFSOCK: "a socket"
        default: "a special file"
        }
    }
}

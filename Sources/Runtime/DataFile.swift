import CLibUV
import FileInput
import Glibc

/// A regular file read and written at explicit offsets, for transfers.
///
/// Writes are synchronous `pwrite`s from the calling (loop) thread: they copy into the page cache,
/// which costs less than a hop to a thread pool per chunk. Errors carry the stable codes transfers
/// report: `no_space` (ENOSPC/EDQUOT), `file_too_large` (EFBIG: a file-size limit), `not_found`,
/// `permission_denied`, `io`. The descriptor closes on ``close()`` or when the object is released.
public final class DataFile: @unchecked Sendable {
    /// How ``open(_:mode:)`` opens the file.
    public enum Mode: Sendable {
        /// Read only, a regular file only (``UntrustedFile``: a FIFO, device or directory is refused, never waited on).
        case read
        /// Read and write; create it (with the given permissions, 0644 by default) if missing; keep existing contents.
        case readWrite
        /// Create a new, empty file; fail if the path exists (temporary files never clobber anything).
        case createNew
        /// Read only, a regular file only, refusing a symbolic link as the last component (`O_NOFOLLOW`), for
        /// serving files from a directory without following links out of it.
        case readNoFollow
        /// Read and write an existing file, refusing a symbolic link as the last component (`O_NOFOLLOW`: ELOOP):
        /// for reopening a file this process created where another could have swapped in a link.
        case updateNoFollow
    }

    public let path: String
    private var descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { if descriptor >= 0 { Glibc.close(descriptor) } }

    /// Writing past `RLIMIT_FSIZE` must fail with EFBIG rather than kill the process (SIGXFSZ's default).
    private static let ignoreFileSizeSignal: Void = { signal(SIGXFSZ, SIG_IGN) }()

    /// - Parameter permissions: the mode bits of a file this call creates (`readWrite`, `createNew`); 0600 for a
    ///   file holding secrets (a session journal keeps signed URLs and resume data).
    public static func open(_ path: String, mode: Mode, permissions: mode_t = 0o644) throws(RuntimeError) -> DataFile {
        _ = ignoreFileSizeSignal
        let flags: Int32
        switch mode {
        case .read, .readNoFollow:
            do throws(UntrustedFile.Failure) {
                return DataFile(path: path, descriptor: try UntrustedFile.open(path, followsLinks: mode == .read).descriptor)
            } catch {
                throw RuntimeError(error)
            }
        case .readWrite: flags = O_RDWR | O_CREAT
        case .createNew: flags = O_RDWR | O_CREAT | O_EXCL
        case .updateNoFollow: flags = O_RDWR | O_NOFOLLOW
        }
        let descriptor = Glibc.open(path, flags | O_CLOEXEC, permissions)
        guard descriptor >= 0 else { throw fileError(function: "open", path: path) }
        return DataFile(path: path, descriptor: descriptor)
    }

    /// Writes all of `bytes` at `offset`.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(RuntimeError) {
        guard offset >= 0, offset <= Int64.max - Int64(bytes.count) else {
            throw RuntimeError(.invalidArgument, function: "pwrite", detail: "\(path): \(bytes.count) bytes at offset \(offset) is out of range")
        }
        var done = 0
        while done < bytes.count {
            let count = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.fileError(function: "pwrite", path: path)
            }
            done += count
        }
    }

    public func write(_ bytes: ArraySlice<UInt8>, at offset: Int64) throws(RuntimeError) {
        do {
            try bytes.withUnsafeBytes { raw in try write(raw, at: offset) }
        } catch let error as RuntimeError {
            throw error
        } catch {
            fatalError("unreachable: \(error)")
        }
    }

    /// Reads up to `count` bytes at `offset` into `buffer` (replacing its contents); fewer at end of file.
    public func read(into buffer: inout [UInt8], count: Int, at offset: Int64) throws(RuntimeError) {
        guard count >= 0, offset >= 0, offset <= Int64.max - Int64(count) else {
            throw RuntimeError(.invalidArgument, function: "pread", detail: "\(path): \(count) bytes at offset \(offset) is out of range")
        }
        var failure: RuntimeError?
        resize(&buffer, to: count)
        let total = buffer.withUnsafeMutableBytes { raw -> Int in
            var done = 0
            while done < count {
                let result = pread(descriptor, raw.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if result < 0 {
                    if errno == EINTR { continue }
                    failure = Self.fileError(function: "pread", path: path)
                    return done
                }
                if result == 0 { break }
                done += result
            }
            return done
        }
        if let failure { throw failure }
        buffer.removeLast(count - total)
    }

    /// Flushes the file's data to stable storage (`fdatasync`).
    public func synchronize() throws(RuntimeError) {
        guard fdatasync(descriptor) == 0 else { throw Self.fileError(function: "fdatasync", path: path) }
    }

    public func truncate(to length: Int64) throws(RuntimeError) {
        guard ftruncate(descriptor, off_t(length)) == 0 else { throw Self.fileError(function: "ftruncate", path: path) }
    }

    /// The file's current size.
    public func size() throws(RuntimeError) -> Int64 {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Self.fileError(function: "fstat", path: path) }
        return Int64(status.st_size)
    }

    /// Size, modification time (nanoseconds since 1970), inode and whether it is a regular file, of the opened
    /// descriptor (`fstat`): what was opened, not what the path names now.
    public func status() throws(RuntimeError) -> (size: Int64, modifiedNanoseconds: Int64, inode: UInt64, isRegularFile: Bool) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Self.fileError(function: "fstat", path: path) }
        return (Int64(status.st_size), Int64(status.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(status.st_mtim.tv_nsec),
                UInt64(status.st_ino), (status.st_mode & S_IFMT) == S_IFREG)
    }

    /// Takes an exclusive advisory lock (`flock`) for as long as the file stays open.
    /// - Throws: an `io` error naming the file when another process holds the lock.
    public func lockExclusively() throws(RuntimeError) {
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            if code == EWOULDBLOCK {
                throw RuntimeError(.io, function: "flock", detail: "\(path) is in use by another process")
            }
            throw Self.fileError(function: "flock", path: path)
        }
    }

    public func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    static func fileError(function: String, path: String) -> RuntimeError {
        let code = errno
        var error = RuntimeError(uvStatus: -code, function: function)
        error.detail = "\(path): \(String(cString: strerror(code)))"
        return error
    }
}

extension RuntimeError {
    /// A refused untrusted file with the code transfers report (a FIFO or a directory: `invalid_argument`).
    init(_ failure: UntrustedFile.Failure) {
        let code: Code = switch failure.kind {
        case .missing: .notFound
        case .permissionDenied: .permissionDenied
        case .notRegularFile, .symbolicLink: .invalidArgument
        case .tooLarge: .fileTooLarge
        case .unreadable: .io
        }
        self.init(code, function: "open", detail: failure.description)
    }
}

/// Sets `buffer.count` to `count` without touching the kept bytes (array-to-array appends stay memcpy even
/// in debug builds, where an element-by-element fill costs ~100 ns a byte).
public func resize(_ buffer: inout [UInt8], to count: Int) {
    if buffer.count > count {
        buffer.removeLast(buffer.count - count)
    } else if buffer.count < count {
        buffer.append(contentsOf: [UInt8](repeating: 0, count: count - buffer.count))
    }
}

/// File-system operations transfers need, with ``RuntimeError`` codes.
public enum FileSystem {
    /// Atomically replaces `destination` with `source` (same file system), then syncs the directory so
    /// the new name survives a crash.
    public static func rename(_ source: String, to destination: String) throws(RuntimeError) {
        guard Glibc.rename(source, destination) == 0 else {
            throw DataFile.fileError(function: "rename", path: "\(source) -> \(destination)")
        }
        synchronizeDirectory(containing: destination)
    }

    /// Removes a file; a missing file is not an error.
    public static func remove(_ path: String) throws(RuntimeError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw DataFile.fileError(function: "unlink", path: path) }
    }

    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The size of the file at `path`, or nil when there is none.
    public static func size(of path: String) -> Int64? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return Int64(status.st_size)
    }

    /// Size, modification time (nanoseconds since 1970) and inode of a regular file, or nil.
    public static func status(of path: String) -> (size: Int64, modifiedNanoseconds: Int64, inode: UInt64)? {
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        return (Int64(status.st_size), nanoseconds(of: status.st_mtim), UInt64(status.st_ino))
    }

    /// A file time in nanoseconds since 1970, saturating: any file can carry a time centuries away
    /// (`touch -d 2400-01-01`), past what `Int64` nanoseconds hold.
    static func nanoseconds(of time: timespec) -> Int64 {
        let (scaled, overflow) = Int64(time.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return time.tv_sec < 0 ? .min : .max }
        let (total, carry) = scaled.addingReportingOverflow(Int64(time.tv_nsec))
        return carry ? .max : total
    }

    public static func isDirectory(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }

    /// Creates `path` (and missing parents) as directories with mode 0755.
    public static func createDirectories(_ path: String) throws(RuntimeError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw DataFile.fileError(function: "mkdir", path: prefix)
            }
            prefix += "/"
        }
    }

    /// The directory part of `path` (`.` for a bare name).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The last component of `path`.
    public static func lastComponent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Names in `directory` (without `.` and `..`), or nil when it cannot be read.
    public static func contents(of directory: String) -> [String]? {
        guard let handle = opendir(directory) else { return nil }
        defer { closedir(handle) }
        var names: [String] = []
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(handle) {
            // Read the name in place: a record is only as long as its name (`d_reclen`), so copying the whole
            // 256-byte `d_name` reads past the end of readdir's buffer for its last records (ASan:
            // heap-buffer-overflow in a directory of a few thousand short names).
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// fsyncs a directory so renames and new files in it are durable; failures are ignored (some
    /// file systems refuse to sync directories).
    public static func synchronizeDirectory(containing path: String) {
        let descriptor = Glibc.open(directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        Glibc.close(descriptor)
    }
}

/// Wall-clock time for begin dates and journals (the loop clock is monotonic and per-boot).
public enum WallClock {
    public static func secondsSince1970() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}

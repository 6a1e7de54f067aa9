import Foundation

/// Where `wsload distribute` writes: only into `--out DIR`, a new or empty directory, and never over a file.
enum DistributeFiles {
    /// Why DIR cannot take the files.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Creates DIR (and its parents) or checks that it is an empty directory; returns its real absolute path.
    static func prepare(_ path: String) -> Result<String, Failure> {
        var status = stat()
        if stat(path, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFDIR else {
                return .failure(Failure(description: "exists and is not a directory"))
            }
            let entries: [String]
            do {
                entries = try FileManager.default.contentsOfDirectory(atPath: path)
            } catch {
                return .failure(Failure(description: "cannot be read: \(error.localizedDescription)"))
            }
            guard entries.isEmpty else {
                return .failure(Failure(
                    description: "exists and is not empty (\(entries.count) entries); nothing is overwritten: give a new directory"))
            }
        } else {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                return .failure(Failure(description: "cannot be created: \(error.localizedDescription)"))
            }
        }
        guard let resolved = realpath(path, nil) else {
            return .failure(Failure(description: "cannot be resolved: \(String(cString: strerror(errno)))"))
        }
        defer { free(resolved) }
        return .success(String(cString: resolved))
    }

    /// Creates `directories` and writes `files` in `directory` (each new: `O_EXCL`, never through a link); on a failure
    /// removes what it wrote and returns why.
    static func write(_ files: [GeneratedFile], directories: [String], into directory: String) -> Failure? {
        var written: [String] = []
        var made: [String] = []
        func undo() {
            for path in written { unlink(path) }
            for path in made.reversed() { rmdir(path) }
        }
        for name in directories {
            let path = directory + "/" + name
            guard mkdir(path, 0o755) == 0 else {
                let reason = String(cString: strerror(errno))
                undo()
                return Failure(description: "cannot create \(path): \(reason)")
            }
            made.append(path)
        }
        for file in files {
            let path = directory + "/" + file.name
            let mode: mode_t = file.isExecutable ? 0o755 : 0o644
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            guard descriptor >= 0 else {
                let reason = String(cString: strerror(errno))
                undo()
                return Failure(description: "cannot create \(path): \(reason)")
            }
            written.append(path)
            let failure: String? = Array(file.text.utf8).withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let count = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { return String(cString: strerror(count < 0 ? errno : EIO)) }
                    offset += count
                }
                return nil
            }
            let closed = close(descriptor) == 0 ? nil : String(cString: strerror(errno))
            if let reason = failure ?? closed {
                undo()
                return Failure(description: "cannot write \(path): \(reason)")
            }
        }
        return nil
    }
}

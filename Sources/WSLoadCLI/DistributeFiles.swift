import Foundation
import Reporting

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

    /// `path` (absolute) with its links resolved as far as it exists, the rest as written: DIR's real path once
    /// ``prepare(_:)`` has created it, known before anything is created.
    static func resolved(_ path: String) -> String {
        var existing = path
        var rest: [String] = []
        while !existing.isEmpty {
            if let real = realpath(existing, nil) {
                defer { free(real) }
                let base = String(cString: real)
                return rest.reversed().reduce(base) { ($0.hasSuffix("/") ? $0 : $0 + "/") + $1 }
            }
            let parent = (existing as NSString).deletingLastPathComponent
            guard parent != existing else { break }
            rest.append((existing as NSString).lastPathComponent)
            existing = parent
        }
        return path
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
            let failure = RunReport.writeFully(file.text, to: descriptor)
            let closed = close(descriptor) == 0 ? nil : String(cString: strerror(errno))
            if let reason = failure ?? closed {
                undo()
                return Failure(description: "cannot write \(path): \(reason)")
            }
        }
        return nil
    }
}

import FileInput
import Foundation

extension RunJournal {
    /// The names an interval log beside the report at `reportPath` may take, in order: `r.json` → `r.intervals.jsonl`,
    /// then `r-2.intervals.jsonl` … `r-9.intervals.jsonl` (an existing file is never replaced: the next is tried).
    package static func intervalLogCandidates(forReport reportPath: String) -> [String] {
        let first = intervalLogPath(forReport: reportPath)
        let stem = String(first.dropLast(intervalLogSuffix.count))
        return [first] + (2...9).map { "\(stem)-\($0)\(intervalLogSuffix)" }
    }

    /// Where an interval log was placed: its path beside the report, and whether that name was made for it (a link or
    /// a copy, to remove if the report is not written after all) rather than being the log's own.
    package struct PlacedLog: Sendable, Equatable {
        package var path: String
        package var isNew: Bool
    }

    /// Gives the interval log (or journal) at `source` a name beside the report at `reportPath`, the first free one of
    /// ``intervalLogCandidates(forReport:)``, so the report can name it (``RunResult/IntervalLog/file``): `source`
    /// itself when it already is one of them; else a hard link (link(2) fails rather than replace a file); else — on
    /// another file system, or one without hard links — a copy, created with `O_CREAT | O_EXCL | O_NOFOLLOW`, streamed
    /// a MiB at a time and fsync'd. `source` stays where it is. Creates the report's directory when needed.
    /// - Returns: the placed log, or why none could be placed.
    package static func placeIntervalLog(_ source: String, besideReport reportPath: String) -> Result<PlacedLog, PlacementProblem> {
        let directory = URL(fileURLWithPath: reportPath).deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            return .failure(PlacementProblem(description: "cannot create \(directory.path): \(error.localizedDescription)"))
        }
        var sourceStatus = stat()
        guard stat(source, &sourceStatus) == 0 else {
            return .failure(PlacementProblem(description: "cannot read \(source): \(String(cString: strerror(errno)))"))
        }
        let candidates = intervalLogCandidates(forReport: reportPath)
        for candidate in candidates {
            var status = stat()
            if lstat(candidate, &status) == 0 {
                if status.st_dev == sourceStatus.st_dev && status.st_ino == sourceStatus.st_ino {
                    return .success(PlacedLog(path: candidate, isNew: false))
                }
                continue  // taken by another file: never replaced
            }
            if link(source, candidate) == 0 { return .success(PlacedLog(path: candidate, isNew: true)) }
            if errno == EEXIST { continue }
            switch copy(source, to: candidate) {
            case .success: return .success(PlacedLog(path: candidate, isNew: true))
            case .failure(let problem) where problem.exists: continue
            case .failure(let problem): return .failure(PlacementProblem(description: problem.reason))
            }
        }
        return .failure(PlacementProblem(description: "\(candidates[0]) and the \(candidates.count - 1) names after it exist"))
    }

    /// Why no interval log could be placed.
    package struct PlacementProblem: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    private struct CopyProblem: Error {
        var reason: String
        /// The target name was taken meanwhile (O_EXCL): try the next.
        var exists = false
    }

    /// Copies `source` to a new file `target` (never replacing one), a MiB at a time, and flushes it.
    private static func copy(_ source: String, to target: String) -> Result<Void, CopyProblem> {
        func failure(_ what: String) -> CopyProblem { CopyProblem(reason: "\(what): \(String(cString: strerror(errno)))") }
        let input: Int32
        do throws(UntrustedFile.Failure) {
            input = try UntrustedFile.open(source).descriptor  // a regular file, never waited on
        } catch {
            return .failure(CopyProblem(reason: "cannot read \(error)"))
        }
        defer { _ = Glibc.close(input) }
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard output >= 0 else {
            return .failure(errno == EEXIST ? CopyProblem(reason: "", exists: true) : failure("cannot create \(target)"))
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var problem: CopyProblem?
        copying: while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                problem = failure("cannot read \(source)")
                break
            }
            if count == 0 { break }
            var written = 0
            while written < count {
                let result = buffer.withUnsafeBytes { Glibc.write(output, $0.baseAddress! + written, count - written) }
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else {
                    problem = failure("cannot write \(target)")
                    break copying
                }
                written += result
            }
        }
        if problem == nil && fsync(output) != 0 { problem = failure("cannot flush \(target)") }
        if Glibc.close(output) != 0 && problem == nil { problem = failure("cannot write \(target)") }
        if let problem {
            _ = unlink(target)  // a partial copy is no log
            return .failure(problem)
        }
        return .success(())
    }
}

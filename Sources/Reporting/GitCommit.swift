import FileInput
import Foundation

extension RunReport {
    /// The commit of the git checkout around `directory` (the working directory by default): read from the files git
    /// keeps, never by running git, and nil when none is found or a file is not what git writes (the report then says
    /// `null`). The nearest `.git` up the tree decides: a directory (a plain checkout), or a file `gitdir: <path>` (a
    /// worktree made by `git worktree add`, or a submodule), whose directory holds the checkout's own `HEAD` and,
    /// for a worktree, a `commondir` naming the repository that holds the branches. `HEAD` is a commit, or `ref:
    /// refs/…` followed through loose refs (the checkout's own, then the common ones) and `packed-refs`. Every read is
    /// bounded (``maximumGitFileSize``, ``maximumPackedRefsSize``) and of regular files only.
    package static func gitCommit(from directory: String = FileManager.default.currentDirectoryPath) -> String? {
        var url = URL(fileURLWithPath: directory)
        for _ in 0..<64 {
            let dotGit = url.appendingPathComponent(".git").path
            var status = stat()
            if stat(dotGit, &status) == 0 {
                guard let checkout = GitCheckout(dotGit: dotGit, isDirectory: status.st_mode & S_IFMT == S_IFDIR) else { return nil }
                return checkout.headCommit()
            }
            let parent = url.deletingLastPathComponent()
            if parent.path == url.path { return nil }
            url = parent
        }
        return nil
    }

    /// The most bytes of `.git`, `HEAD`, `commondir` or a loose ref that are read: git writes a line of < 100 bytes.
    static let maximumGitFileSize = 4096
    /// The largest `packed-refs` read (a repository of a hundred thousand tags fits).
    static let maximumPackedRefsSize = 32 << 20
}

/// Where a checkout's git files are: its own directory (`HEAD`, per-worktree refs) and the common one (branches,
/// `packed-refs`); the same directory for a plain checkout.
private struct GitCheckout {
    var gitDirectory: String
    var commonDirectory: String

    init?(dotGit: String, isDirectory: Bool) {
        if isDirectory {
            gitDirectory = dotGit
        } else {
            // `gitdir: <path>`, the path absolute or relative to the directory holding the `.git` file.
            guard let text = readGitFile(dotGit, limit: RunReport.maximumGitFileSize),
                let line = text.split(whereSeparator: \.isNewline).first, line.hasPrefix("gitdir: ")
            else { return nil }
            let path = String(line.dropFirst("gitdir: ".count)).trimmingCharacters(in: .whitespaces)
            guard !path.isEmpty else { return nil }
            gitDirectory = resolved(path, relativeTo: URL(fileURLWithPath: dotGit).deletingLastPathComponent().path)
        }
        // A worktree's `commondir` names the main repository's git directory, relative to its own.
        if let text = readGitFile(gitDirectory + "/commondir", limit: RunReport.maximumGitFileSize),
            let line = text.split(whereSeparator: \.isNewline).first, !line.isEmpty
        {
            commonDirectory = resolved(String(line), relativeTo: gitDirectory)
        } else {
            commonDirectory = gitDirectory
        }
    }

    /// `HEAD` as a commit, following at most a few symbolic refs.
    func headCommit() -> String? {
        guard var text = readGitFile(gitDirectory + "/HEAD", limit: RunReport.maximumGitFileSize) else { return nil }
        for _ in 0..<5 {
            let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard line.hasPrefix("ref: ") else { return isCommit(line) ? line : nil }
            let ref = String(line.dropFirst(5))
            guard isRefName(ref) else { return nil }
            if let loose = readGitFile(gitDirectory + "/" + ref, limit: RunReport.maximumGitFileSize)
                ?? readGitFile(commonDirectory + "/" + ref, limit: RunReport.maximumGitFileSize)
            {
                text = loose
                continue
            }
            return packedRef(ref)
        }
        return nil
    }

    /// `ref`'s commit in `packed-refs` (lines `<commit> <ref>`; `#` comments and `^` peeled lines skipped).
    private func packedRef(_ ref: String) -> String? {
        guard let packed = readGitFile(commonDirectory + "/packed-refs", limit: RunReport.maximumPackedRefsSize) else { return nil }
        for entry in packed.split(whereSeparator: \.isNewline) where entry.hasSuffix(" " + ref) {
            let commit = String(entry.prefix { $0 != " " })
            if isCommit(commit) { return commit }
        }
        return nil
    }

    /// A ref git itself would follow: under `refs/`, no `..`, no control characters (it names a file to open).
    private func isRefName(_ ref: String) -> Bool {
        ref.hasPrefix("refs/") && !ref.contains("..") && !ref.hasSuffix("/") && ref.utf8.count <= 1024
            && !ref.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f || $0 == UInt8(ascii: "\\") })
    }

    private func isCommit(_ text: String) -> Bool {
        (text.count == 40 || text.count == 64) && text.allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }
}

/// `path` made absolute against `directory` (unless it is absolute already).
private func resolved(_ path: String, relativeTo directory: String) -> String {
    path.hasPrefix("/") ? path : URL(fileURLWithPath: directory).appendingPathComponent(path).standardizedFileURL.path
}

/// The text of the regular file at `path` if it holds at most `limit` bytes of UTF-8; nil otherwise (missing, not a
/// regular file — a FIFO is never waited on —, too long, unreadable): no commit is then known. Read through the one
/// reader of untrusted files (`UntrustedFile`).
private func readGitFile(_ path: String, limit: Int) -> String? {
    (try? UntrustedFile.read(path, cap: limit)).flatMap { String(validating: $0, as: UTF8.self) }
}

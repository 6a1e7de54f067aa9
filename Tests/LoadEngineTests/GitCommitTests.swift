import Foundation
import Reporting
import Testing
import TestSupport

/// `tool.commit`: read from git's own files, never by running git, in a plain checkout and in a worktree made by a real
/// `git worktree add` (where `.git` is a file naming the worktree's git directory, whose `commondir` holds the branches).
@Suite("tool.commit from .git: checkouts and worktrees", .serialized, .timeLimit(.minutes(2)))
struct GitCommitTests {
    private func git(_ arguments: [String], in directory: URL) throws -> String {
        try TestProcess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main",
                             "-c", "commit.gpgsign=false"] + arguments, in: directory)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("a plain checkout, a worktree on a branch, a detached worktree, packed refs, a subdirectory; junk .git files give nil")
    func commitsOfCheckoutsAndWorktrees() throws {
        let root = try scratchDirectory("git-commit")
        defer { try? FileManager.default.removeItem(at: root) }
        let main = root.appendingPathComponent("main")
        try FileManager.default.createDirectory(at: main.appendingPathComponent("sub/deeper"), withIntermediateDirectories: true)
        _ = try git(["init", "-q"], in: main)
        try Data("one\n".utf8).write(to: main.appendingPathComponent("sub/deeper/a.txt"))
        _ = try git(["add", "."], in: main)
        _ = try git(["commit", "-q", "-m", "one"], in: main)
        let first = try git(["rev-parse", "HEAD"], in: main)
        #expect(RunReport.gitCommit(from: main.path) == first)
        #expect(RunReport.gitCommit(from: main.appendingPathComponent("sub/deeper").path) == first)

        // A worktree on a new branch with a commit of its own: its HEAD, not the main checkout's.
        let tree = root.appendingPathComponent("tree")
        _ = try git(["worktree", "add", "-q", "-b", "side", tree.path], in: main)
        #expect((try? String(contentsOf: tree.appendingPathComponent(".git"), encoding: .utf8))?.hasPrefix("gitdir: ") == true)
        try Data("two\n".utf8).write(to: tree.appendingPathComponent("b.txt"))
        _ = try git(["add", "."], in: tree)
        _ = try git(["commit", "-q", "-m", "two"], in: tree)
        let second = try git(["rev-parse", "HEAD"], in: tree)
        #expect(second != first)
        #expect(RunReport.gitCommit(from: tree.path) == second)
        #expect(RunReport.gitCommit(from: tree.appendingPathComponent("sub/deeper").path) == second)
        #expect(RunReport.gitCommit(from: main.path) == first)

        // Packed refs (the loose ref files gone): found in the common directory's packed-refs.
        _ = try git(["pack-refs", "--all"], in: main)
        #expect(RunReport.gitCommit(from: tree.path) == second)
        #expect(RunReport.gitCommit(from: main.path) == first)

        // A detached worktree: HEAD is the commit itself.
        let detached = root.appendingPathComponent("detached")
        _ = try git(["worktree", "add", "-q", "--detach", detached.path, first], in: main)
        #expect(RunReport.gitCommit(from: detached.path) == first)

        // A .git file that is not `gitdir: …`, or that names a directory without HEAD, or a ref escaping refs/: nil.
        let junk = root.appendingPathComponent("junk")
        try FileManager.default.createDirectory(at: junk, withIntermediateDirectories: true)
        for text in ["not a gitdir line\n", "gitdir: \(root.path)/nowhere\n", String(repeating: "x", count: 10_000)] {
            try Data(text.utf8).write(to: junk.appendingPathComponent(".git"))
            #expect(RunReport.gitCommit(from: junk.path) == nil, "\(text.prefix(40))")
        }
        let fake = root.appendingPathComponent("fake-git")
        try FileManager.default.createDirectory(at: fake, withIntermediateDirectories: true)
        try Data("ref: refs/../../../etc/hostname\n".utf8).write(to: fake.appendingPathComponent("HEAD"))
        try Data("gitdir: ../fake-git\n".utf8).write(to: junk.appendingPathComponent(".git"))
        #expect(RunReport.gitCommit(from: junk.path) == nil)
    }
}

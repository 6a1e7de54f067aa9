import Foundation
import Glibc
import Testing

/// Every file a user or a profile names, through the real `wsload` with a deadline: a FIFO, /dev/zero, a directory, a
/// missing file, a file over the cap and a symbolic link to a good file, each answered at once with the caller's own
/// message (naming the path and what it is) and exit code (66 unreadable, 65 bad content), never a hang.
@Suite(.timeLimit(.minutes(5))) struct UntrustedFileCLITests {
    private static let profileText = """
        {"version": 1, "name": "tiny", "target": "embedded", "duration": "1s",
         "scenarios": [{"name": "echo", "pattern": "echo", "connections": 1}]}
        """

    /// Runs the real wsload; fails naming the command when it does not exit within 30 s (a hang on the file).
    private func wsload(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> (status: Int32, errors: String)
    {
        let child = try ChildProcess.wsload(arguments)
        guard let status = try await child.exitStatus(within: .seconds(30)) else {
            Issue.record("wsload \(arguments.joined(separator: " ")) did not exit within 30 s: it waited on the file",
                         sourceLocation: sourceLocation)
            return (-1, child.errors)
        }
        return (status, child.output + child.errors)
    }

    /// A scratch directory with a FIFO, a directory, a missing name and a link to a good profile in it.
    private struct Files {
        let scratch: RunScratch
        let fifo: String
        let directory: String
        let missing: String
        let profile: String
        let link: String

        init() throws {
            scratch = try RunScratch()
            fifo = scratch.path("fifo.json")
            #expect(mkfifo(fifo, 0o600) == 0)
            directory = scratch.path("directory.json")
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            missing = scratch.path("missing.json")
            profile = try scratch.write("profile.json", UntrustedFileCLITests.profileText)
            link = scratch.path("link.json")
            #expect(symlink(profile, link) == 0)
        }
    }

    @Test("validate: a FIFO, /dev/zero, a directory or a missing profile exits 66 at once, an oversized one 65; a link is followed")
    func validateProfile() async throws {
        let files = try Files()
        for (path, what) in [(files.fifo, "is a FIFO, not a regular file"), ("/dev/zero", "is a character device"),
                             (files.directory, "is a directory"), (files.missing, "no such file")] {
            let result = try await wsload(["validate", path])
            #expect(result.status == 66 && result.errors.contains("cannot read \(path): \(what)"), "\(path): \(result)")
        }
        let huge = try files.scratch.write("huge.json", String(repeating: " ", count: (1 << 20) + 1))
        let oversized = try await wsload(["validate", huge])
        #expect(oversized.status == 65 && oversized.errors.contains("larger than 1048576 bytes"), "\(oversized)")
        let linked = try await wsload(["validate", files.link])
        #expect(linked.status == 0, "a symbolic link to a good profile: \(linked)")
    }

    @Test("a feeder (data.NAME.file) that is a FIFO, /dev/zero or a directory: 66 naming its JSON path, at once")
    func feederFile() async throws {
        let files = try Files()
        for (path, what) in [(files.fifo, "a FIFO"), ("/dev/zero", "a character device"), (files.directory, "a directory")] {
            let profile = try files.scratch.write("feeder.json", """
                {"version": 1, "name": "fed", "target": "embedded", "duration": "1s",
                 "data": {"users": {"file": "\(path)", "format": "csv"}},
                 "scenarios": [{"name": "echo", "pattern": "echo", "connections": 1}]}
                """)
            let result = try await wsload(["validate", profile])
            #expect(result.status == 66 && result.errors.contains("data.users.file: cannot read \(path): is \(what)"), "\(path): \(result)")
        }
    }

    @Test("report, merge and compare: a FIFO, /dev/zero or a directory where a report should be exits 66 at once")
    func reportInputs() async throws {
        let files = try Files()
        for (path, what) in [(files.fifo, "is a FIFO"), ("/dev/zero", "is a character device"), (files.directory, "is a directory")] {
            // A directory given to merge or compare is a directory of reports (their own tests); report reads one file.
            let commands = path == files.directory ? [["report", path]] : [["report", path], ["merge", path, path], ["compare", path, path]]
            for command in commands {
                let result = try await wsload(command)
                #expect(result.status == 66 && result.errors.contains("\(path): \(what)"), "\(command): \(result)")
            }
        }
    }

    @Test("serve --cert/--key: a FIFO or /dev/zero is refused naming the file, never handed to OpenSSL to wait on")
    func certificateFiles() async throws {
        let files = try Files()
        for path in [files.fifo, "/dev/zero"] {
            let result = try await wsload(["serve", "--port", "0", "--cert", path, "--key", path])
            #expect(result.status != 0 && result.errors.contains(path) && result.errors.contains("not a regular file"), "\(path): \(result)")
        }
    }

    @Test("run --start-at @FIFO exits 66 at once naming --start-at and the file")
    func startAtFile() async throws {
        let files = try Files()
        let result = try await wsload(["run", files.profile, "--start-at", "@" + files.fifo + "+1s"])
        #expect(result.status == 66 && result.errors.contains("--start-at") && result.errors.contains("it is a FIFO"), "\(result)")
    }

    @Test("auth.tokenFile that is a FIFO fails the run at once naming auth.tokenFile")
    func tokenFile() async throws {
        let files = try Files()
        let profile = try files.scratch.write("token.json", """
            {"version": 1, "name": "token", "target": "embedded", "duration": "1s",
             "auth": {"type": "bearer", "tokenFile": "\(files.fifo)"},
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 1}]}
            """)
        let result = try await wsload(["run", profile, "--out", files.scratch.path("report.json")])
        #expect(result.status != 0 && result.errors.contains("auth.tokenFile: cannot read \(files.fifo): is a FIFO"), "\(result)")
    }
}

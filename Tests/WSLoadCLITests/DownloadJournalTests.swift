import Clients
import Crypto
import EmbeddedServer
import Foundation
import HTTP1
import JSON
import Profile
import Runtime
import TestSupport
import Testing
import WSLoadCLI

/// Writes `lines` as the journal of session `identifier` in `directory`.
private func writeJournal(_ lines: [String], identifier: String, in directory: String) throws {
    try (lines.joined(separator: "\n") + "\n").write(toFile: directory + "/\(identifier).wsload-session", atomically: true,
                                                     encoding: .utf8)
}

@Suite("wsload download: journals and resume data made for something else", .serialized, .timeLimit(.minutes(2)))
struct DownloadJournalTests {
    @Test("a journaled completion whose length is 1e19 does not trap the relaunch (a child wsload ends with exit 1)")
    func hugeLengthInJournal() async throws {
        let scratch = try DownloadScratch()
        let destination = scratch.file("x")
        try writeJournal([
            #"{"op":"task","id":1,"kind":"download","url":"http://127.0.0.1:9/x","destination":"\#(destination)"}"#,
            #"{"op":"completed","id":1,"outcome":{"kind":"downloaded","location":"\#(destination)","length":1e19}}"#,
        ], identifier: "S", in: scratch.path)
        let child = try WSLoadProcess(["download", "http://127.0.0.1:9/x", "-o", destination, "--session", "S", "--retries", "0",
                                       "--quiet"])
        let status = try await child.waitForExit()
        // Before: Int64(1e19) trapped (a signal, not an exit code). Now the record is not a completion: the
        // task runs again, and port 9 refuses it.
        #expect(status == 1, "exit \(status); stderr: \(child.errors)")
        #expect(child.errors.contains("refused"), "\(child.errors)")
    }

    @Test("--session S with another URL and file than S's unfinished download is refused with exit 65, touching neither")
    func sessionForAnotherDownload() async throws {
        let scratch = try DownloadScratch()
        try await withDownloadServer { server, _ in
            try writeJournal([
                #"{"op":"task","id":1,"kind":"download","url":"\#(server.httpURL)/bytes/1000?seed=1","destination":"\#(scratch.file("a"))"}"#,
            ], identifier: "S", in: scratch.path)
            let result = await runCLI("download", "\(server.httpURL)/bytes/2000?seed=2&sig=SECRET", "-o", scratch.file("b"),
                                      "--session", "S", "--quiet")
            #expect(result.code == .invalidInput, "\(result.code): \(result.error)")
            #expect(result.error.contains("session S holds an unfinished download"), "\(result.error)")
            #expect(!result.error.contains("SECRET"), "a signed query reached the terminal: \(result.error)")
        }
        #expect(scratch.contents == ["S.wsload-session"], "\(scratch.contents)")
    }

    @Test("a session journal is created owner-only (0600): it keeps signed URLs and resume data")
    func journalIsOwnerOnly() async throws {
        let scratch = try DownloadScratch()
        try await withDownloadServer { server, _ in
            let result = await runCLI("download", "\(server.httpURL)/bytes/1000?seed=1&sig=SECRET", "-o", scratch.file("a"),
                                      "--session", "S", "--quiet")
            #expect(result.code == .success, "\(result.code): \(result.error)")
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: scratch.file("S.wsload-session"))
        let permissions = try #require(attributes[.posixPermissions] as? Int)
        #expect(permissions & 0o077 == 0, "mode \(String(permissions, radix: 8)): group or others can read the journal")
    }

    @Test("a session journal larger than the cap is refused with exit 65 before it is read")
    func oversizedJournal() async throws {
        let scratch = try DownloadScratch()
        let journal = scratch.file("S.wsload-session")
        #expect(FileManager.default.createFile(atPath: journal, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: journal))
        try handle.truncate(atOffset: UInt64(TransferSession.maximumJournalSize) + 1)  // sparse
        try handle.close()
        try await withDownloadServer { server, _ in
            let result = await runCLI("download", "\(server.httpURL)/bytes/1000?seed=1", "-o", scratch.file("a"), "--session", "S",
                                      "--quiet")
            #expect(result.code == .invalidInput, "\(result.code): \(result.error)")
            #expect(result.error.contains("more than the 64 MiB"), "\(result.error)")
        }
        #expect(FileSystem.size(of: journal) == TransferSession.maximumJournalSize + 1, "the journal was changed")
    }

    @Test("resume data kept for another URL is not applied (its bytes would pass for this file's): a fresh, verified download")
    func resumeFileForAnotherURL() async throws {
        let scratch = try DownloadScratch()
        let size = 200_000
        let expected = Crypto.hex(PatternContent.sha256(size: Int64(size), seed: 2))
        try await withDownloadServer { server, _ in
            let destination = scratch.file("b")
            // A real cut of the wanted file gives resume data with its validators ...
            let cut = await runCLI("download", "\(server.httpURL)/bytes/\(size)?seed=2&drop_after=50000", "-o", destination,
                                   "--retries", "0", "--quiet")
            #expect(cut.code == .failure, "\(cut.error)")
            var resume = try scratch.resumeData(of: "b")
            // ... now claimed by another URL, with another file's bytes on disk: validators that match by chance.
            resume.url = "\(server.httpURL)/bytes/999?seed=9"
            resume.requestURL = resume.url
            try Data(repeating: 0x58, count: 50_000).write(to: URL(fileURLWithPath: resume.partPath))
            try Data(resume.serialized()).write(to: URL(fileURLWithPath: destination + ".wsload-resume"))
            let result = await runCLI("download", "\(server.httpURL)/bytes/\(size)?seed=2", "-o", destination, "--sha256", expected)
            #expect(result.code == .success, "\(result.code): \(result.error)")
            #expect(result.error.contains("is for another URL; starting fresh"), "\(result.error)")
        }
        #expect(scratch.contents == ["b"], "\(scratch.contents)")
    }
}

import Clients
import Crypto
import EmbeddedServer
import Foundation
import Profile
import Runtime
import TestSupport
import Testing

/// `wsload download` stopped before it finished — by Ctrl-C or by `--max-time` — in the real executable:
/// the exit code README promises, the partial file and `FILE.wsload-resume` kept, and the same command
/// again continuing with `Range` where it stopped.
@Suite("wsload download interrupted", .serialized, .timeLimit(.minutes(2)))
struct DownloadInterruptTests {
    @Test("Ctrl-C mid-download exits 130 keeping the partial file and its resume data; the same command resumes it")
    func ctrlC() async throws {
        let scratch = try DownloadScratch()
        let size: Int64 = 6 << 20
        let expected = Crypto.hex(PatternContent.sha256(size: size, seed: 7))
        try await withDownloadServer { server, _ in
            // Throttled by the server to 2 MB/s: ~3 s to interrupt it in, and the rerun fetches the rest in as long.
            let url = "\(server.httpURL)/bytes/\(size)?seed=7&throttle=2000000"
            let destination = scratch.file("f.bin")
            let command = ["download", url, "-o", destination, "--sha256", expected]
            let child = try ChildProcess.wsload(command)
            defer { child.stop() }
            let part = destination + ".wsload-part"
            let isInterrupted = await sendSignal(SIGINT, to: child.process, when: { (FileSystem.size(of: part) ?? 0) >= 1 << 20 })
            try #require(isInterrupted, "1 MiB never reached the partial file while the download ran (20 s): \(child.errors)")
            let status = try #require(try await child.exitStatus(within: .seconds(20)), "wsload did not exit within 20 s of SIGINT")
            #expect(status == 130, "\(child.errors)")
            #expect(child.errors.contains("interrupted; run the same command again to resume"), "\(child.errors)")
            #expect(!FileManager.default.fileExists(atPath: destination), "nothing at FILE before it is complete")
            let resume = try scratch.resumeData(of: "f.bin")
            #expect(resume.bytesOnDisk >= 1 << 20 && resume.bytesOnDisk < size, "\(resume.bytesOnDisk)")
            #expect((FileSystem.size(of: part) ?? 0) >= resume.bytesOnDisk, "the partial file holds what the resume data claims")
            #expect(resume.destination == destination)

            // The same command again: a ranged request for exactly what is missing, then the verified file.
            let servedBefore = server.statistics.bytesServed.load(ordering: .relaxed)
            let rerun = try await ChildProcess.run([wsloadExecutable] + command)
            #expect(rerun.status == 0, "\(rerun.errors)")
            #expect(rerun.output.contains("resumed: "), "\(rerun.output)")
            // The interrupted response may still count a chunk or two (100 kB each) that the server sent before it
            // saw the connection gone, so not an exact count: at least what was missing, and not the whole file again.
            let served = Int64(server.statistics.bytesServed.load(ordering: .relaxed) - servedBefore)
            #expect(served >= size - resume.bytesOnDisk && served < size,
                    "the rerun was served \(served) bytes; \(size - resume.bytesOnDisk) were missing")
            #expect(try sha256Hex(ofFile: destination) == expected)
        }
        #expect(scratch.contents == ["f.bin"], "the partial file and the resume data are gone once it completed")
    }

    @Test("resume data is written owner-only (0600) and never through a symlink planted at its temporary")
    func resumeDataNotThroughSymlink() async throws {
        let scratch = try DownloadScratch()
        let size: Int64 = 6 << 20
        let victim = NSTemporaryDirectory() + "wsload-victim-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try "victim".write(toFile: victim, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: victim) }
        try await withDownloadServer { server, _ in
            let destination = scratch.file("s.bin")
            let child = try ChildProcess.wsload(["download", "\(server.httpURL)/bytes/\(size)?seed=9&throttle=2000000", "-o", destination])
            defer { child.stop() }
            let part = destination + ".wsload-part"
            let temporary = destination + ".wsload-resume.tmp"
            // While it downloads, the room reserved for the resume data is swapped for a link to another file.
            let isInterrupted = await sendSignal(SIGINT, to: child.process, when: {
                guard (FileSystem.size(of: part) ?? 0) >= 1 << 20, FileManager.default.fileExists(atPath: temporary) else { return false }
                try? FileManager.default.removeItem(atPath: temporary)  // checked below: the link must be in place
                try? FileManager.default.createSymbolicLink(atPath: temporary, withDestinationPath: victim)  // checked below
                return true
            })
            try #require(isInterrupted, "1 MiB never reached the partial file while the download ran: \(child.errors)")
            let status = try #require(try await child.exitStatus(within: .seconds(20)), "wsload did not exit within 20 s of SIGINT")
            #expect(status == 130, "\(child.errors)")
        }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "victim", "the resume data was written through the link")
        let resume = scratch.file("s.bin.wsload-resume")
        let attributes = try FileManager.default.attributesOfItem(atPath: resume)
        #expect(attributes[.type] as? FileAttributeType == .typeRegular)
        let permissions = try #require(attributes[.posixPermissions] as? Int)
        #expect(permissions & 0o077 == 0, "mode \(String(permissions, radix: 8)): the resume data holds the URL")
        #expect(try scratch.resumeData(of: "s.bin").bytesOnDisk > 0)
    }

    @Test("--max-time stops the download with exit 1 and keeps the resume data; a rerun with more time resumes")
    func maxTime() async throws {
        let scratch = try DownloadScratch()
        let size: Int64 = 3_000_000
        let expected = Crypto.hex(PatternContent.sha256(size: size, seed: 8))
        try await withDownloadServer { server, _ in
            // 1 MB/s: 3 s for the whole file, cut after 1.5 s (time enough for bytes to arrive on a busy box).
            let url = "\(server.httpURL)/bytes/\(size)?seed=8&throttle=1000000"
            let destination = scratch.file("m.bin")
            let start = ContinuousClock.now
            let cut = try await ChildProcess.run([wsloadExecutable, "download", url, "-o", destination, "--max-time", "1500ms"])
            let elapsed = ContinuousClock.now - start
            #expect(cut.status == 1, "\(cut.errors)")
            #expect(cut.errors.contains("resource_timeout"), "\(cut.errors)")
            #expect(cut.errors.contains("The partial file is kept; run the same command again to resume."), "\(cut.errors)")
            #expect(elapsed >= .milliseconds(1400), "it gave up after \(elapsed), before its --max-time")
            #expect(!FileManager.default.fileExists(atPath: destination))
            let resume = try scratch.resumeData(of: "m.bin")
            #expect(resume.bytesOnDisk > 0 && resume.bytesOnDisk < size, "\(resume.bytesOnDisk)")

            let rerun = try await ChildProcess.run([wsloadExecutable, "download", url, "-o", destination, "--max-time", "60s",
                                                                      "--sha256", expected])
            #expect(rerun.status == 0, "\(rerun.errors)")
            #expect(rerun.output.contains("resumed: "), "\(rerun.output)")
            #expect(try sha256Hex(ofFile: destination) == expected)
        }
        #expect(scratch.contents == ["m.bin"])
    }
}

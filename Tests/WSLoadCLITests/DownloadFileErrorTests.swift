import Clients
import Crypto
import EmbeddedServer
import Foundation
import Profile
import Runtime
import TestSupport
import Testing

/// `nobody`, for running a child without root's exemption from permission bits.
private let nobody: (uid: UInt32, gid: UInt32) = (65534, 65534)

/// Runs `arguments` as `nobody` (setpriv, util-linux).
private func asNobody(_ arguments: [String]) -> [String] {
    ["/usr/bin/setpriv", "--reuid=\(nobody.uid)", "--regid=\(nobody.gid)", "--clear-groups"] + arguments
}

/// Local file errors in `wsload download` (exit 74, resume data kept): a full disk (a 1 MiB tmpfs mounted in a
/// mount namespace of the child's own, so nothing outlives the test) and a partial file the user may not write.
@Suite("wsload download file errors", .serialized, .timeLimit(.minutes(2)))
struct DownloadFileErrorTests {
    @Test("a full disk exits 74 naming no_space and keeps the resume data; with room again the same command resumes")
    func noSpace() async throws {
        let scratch = try DownloadScratch()
        let size: Int64 = 3_000_000
        let expected = Crypto.hex(PatternContent.sha256(size: size, seed: 11))
        try FileManager.default.createDirectory(atPath: scratch.file("disk"), withIntermediateDirectories: false)
        try await withDownloadServer { server, _ in
            // One shell in a private mount namespace: mount a 1 MiB tmpfs, download into it (the disk fills),
            // copy out what was left, grow the tmpfs, run the same command again. The mount dies with the namespace.
            let script = """
                set -u
                mount -t tmpfs -o size=1m wsload-test "$DISK" || exit 90
                "$WSLOAD" download "$URL" -o "$DISK/f.bin" --sha256 "$SHA" >"$OUT/first.out" 2>"$OUT/first.err"
                echo $? >"$OUT/first.status"
                ls -a "$DISK" >"$OUT/first.ls"
                cp "$DISK/f.bin.wsload-resume" "$OUT/resume" 2>/dev/null
                mount -o remount,size=16m "$DISK" || exit 91
                "$WSLOAD" download "$URL" -o "$DISK/f.bin" --sha256 "$SHA" >"$OUT/second.out" 2>"$OUT/second.err"
                echo $? >"$OUT/second.status"
                sha256sum "$DISK/f.bin" >"$OUT/sha" 2>/dev/null
                ls -a "$DISK" >"$OUT/second.ls"
                """
            let result = try await ChildProcess.run(["/usr/bin/env",
                "DISK=\(scratch.file("disk"))", "WSLOAD=\(wsloadExecutable)", "URL=\(server.httpURL)/bytes/\(size)?seed=11",
                "SHA=\(expected)", "OUT=\(scratch.path)", "unshare", "--mount", "--propagation", "private", "sh", "-c", script,
            ])
            try #require(result.status == 0, "the namespace script failed (\(result.status)): \(result.errors)")
        }
        func read(_ name: String) throws -> String {
            try String(contentsOfFile: scratch.file(name), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let firstErrors = try read("first.err")
        #expect(try read("first.status") == "74", "\(firstErrors)")
        #expect(firstErrors.contains("no_space"), "\(firstErrors)")
        #expect(firstErrors.contains("run the same command again to resume"), "\(firstErrors)")
        #expect(try read("first.ls").split(separator: "\n").sorted() == [".", "..", "f.bin.wsload-part", "f.bin.wsload-resume"])
        let resume = try ResumeData(serialized: Array(try read("resume").utf8))
        #expect(resume.bytesOnDisk > 0 && resume.bytesOnDisk <= 1 << 20, "\(resume.bytesOnDisk)")
        let (secondOutput, secondErrors) = (try read("second.out"), try read("second.err"))
        #expect(try read("second.status") == "0", "\(secondErrors)")
        #expect(secondOutput.contains("resumed: "), "\(secondOutput)")
        #expect(try read("sha").hasPrefix(expected))
        #expect(try read("second.ls").split(separator: "\n").sorted() == [".", "..", "f.bin"])
    }

    @Test("a partial file the user may not write exits 74 naming permission_denied, keeps the resume data; fixed, it resumes")
    func permissionDenied() async throws {
        let scratch = try DownloadScratch()
        let size: Int64 = 3_000_000
        let expected = Crypto.hex(PatternContent.sha256(size: size, seed: 12))
        // The directory belongs to nobody, who runs every wsload below: root would ignore the permission bits.
        let directory = scratch.file("home")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        #expect(chown(scratch.path, nobody.uid, nobody.gid) == 0 && chown(directory, nobody.uid, nobody.gid) == 0)
        let destination = directory + "/p.bin"
        let part = destination + ".wsload-part"
        try await withDownloadServer { server, _ in
            let url = "\(server.httpURL)/bytes/\(size)?seed=12&throttle=1000000"
            // A first attempt cut by --max-time leaves a partial file and resume data.
            let cut = try await ChildProcess.run(asNobody([wsloadExecutable, "download", url, "-o", destination, "--max-time", "1500ms"]))
            try #require(cut.status == 1, "the first attempt: \(cut.status) \(cut.errors)")
            let kept = try DownloadScratch.resumeData(at: destination)
            try #require(kept.bytesOnDisk > 0)

            // The partial file made read-only: reopening it to continue fails.
            #expect(chmod(part, 0o444) == 0)
            let command = [wsloadExecutable, "download", url, "-o", destination, "--sha256", expected]
            let denied = try await ChildProcess.run(asNobody(command))
            #expect(denied.status == 74, "\(denied.errors)")
            #expect(denied.errors.contains("permission_denied"), "\(denied.errors)")
            #expect(denied.errors.contains("run the same command again to resume"), "\(denied.errors)")
            let after = try DownloadScratch.resumeData(at: destination)
            #expect(after.bytesOnDisk == kept.bytesOnDisk, "the resume data is kept as it was")
            #expect(FileSystem.size(of: part) == kept.bytesOnDisk, "the partial file is kept")

            // Writable again: the same command resumes and completes.
            #expect(chmod(part, 0o644) == 0)
            let rerun = try await ChildProcess.run(asNobody(command))
            #expect(rerun.status == 0, "\(rerun.errors)")
            #expect(rerun.output.contains("resumed: "), "\(rerun.output)")
        }
        #expect(try sha256Hex(ofFile: destination) == expected)
        #expect(FileSystem.contents(of: directory)?.sorted() == ["p.bin"])
    }
}

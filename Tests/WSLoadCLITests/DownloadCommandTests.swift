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

/// The last checkpoint's bytes on disk in a session journal (0 when there is none).
private func journaledBytes(_ journal: String) -> Int64 {
    guard let text = try? String(contentsOfFile: journal, encoding: .utf8) else { return 0 }
    var bytes: Int64 = 0
    for line in text.split(separator: "\n") {
        guard let record = try? JSONValue(parsing: String(line)), record["op"]?.stringValue == "checkpoint",
            let resume = record["resume"], let data = try? ResumeData(json: resume)
        else { continue }
        bytes = data.bytesOnDisk
    }
    return bytes
}

@Suite("wsload download", .serialized, .timeLimit(.minutes(2)))
struct DownloadCommandTests {
    @Test("downloads in process: exit 0, the summary, the digest; bad arguments exit 64")
    func basics() async throws {
        let scratch = try DownloadScratch()
        try await withDownloadServer { server, _ in
            let expected = Crypto.hex(PatternContent.sha256(size: 3_000_000, seed: 1))
            let result = await runCLI("download", "\(server.httpURL)/bytes/3000000?seed=1", "-o", scratch.file("a.bin"),
                                      "--segments", "3", "--min-segment", "500k", "--sha256", expected)
            #expect(result.code == .success, "\(result.error)")
            #expect(result.output.contains("3 segments over 3 connections"), "\(result.output)")
            #expect(result.output.contains("sha256 \(expected)"))
            let usage = await runCLI("download", "\(server.httpURL)/bytes/10")
            #expect(usage.code == .usage && usage.error.contains("-o/--output FILE is required"))
            let auth = await runCLI("download", "\(server.httpURL)/bytes/10", "-o", scratch.file("x"), "--header", "Authorization: Bearer t")
            #expect(auth.code == .usage && auth.error.contains("--token-env"))
            let badHash = await runCLI("download", "\(server.httpURL)/bytes/10", "-o", scratch.file("x"), "--sha256", "abc")
            #expect(badHash.code == .usage)
            let missing = await runCLI("download", "\(server.httpURL)/nothing", "-o", scratch.file("x"), "--retries", "0")
            #expect(missing.code == .failure && missing.error.contains("http_status: 404"), "\(missing.error)")
        }
        #expect(scratch.contents == ["a.bin"])
    }

    @Test("SIGKILL mid-download, then a relaunch of the session resumes and fetches exactly what the journal lacked")
    func killAndRelaunch() async throws {
        let scratch = try DownloadScratch()
        let size: Int64 = 32 << 20
        let digest = PatternContent.sha256(size: size, seed: 5)
        try await withDownloadServer { server, group in
            // 8 MB/s: the download takes ~4 s; the journal checkpoints every second.
            let url = "\(server.httpURL)/bytes/\(size)?seed=5&throttle=8000000"
            let destination = scratch.file("big.bin")
            let journal = scratch.file("s1.wsload-session")
            let child = try ChildProcess.wsload(["download", url, "-o", destination, "--session", "s1", "--digest", "--quiet"])
            defer { child.stop() }
            // Kill it as soon as the journal holds a checkpoint (watched from a thread of its own: a late look
            // would find the download finished and its journal compacted).
            let isKilled = await sendSignal(SIGKILL, to: child.process, when: { journaledBytes(journal) > 0 })
            try #require(isKilled, "no checkpoint journaled within 20 s before the download ended: \(child.errors)")
            _ = try #require(try await child.exitStatus(within: .seconds(20)), "the killed child did not exit")
            let process = child.process
            #expect(process.terminationReason == .uncaughtSignal)
            let kept = journaledBytes(journal)
            #expect(kept > 0 && kept < size, "journaled \(kept)")
            #expect(!FileManager.default.fileExists(atPath: destination))
            #expect(FileManager.default.fileExists(atPath: destination + ".wsload-part"))

            // The relaunch: same identifier, same directory.
            let loop = group.loops[0]
            let completions = CompletionLog()
            try await onLoop(loop) {
                let session = try TransferSession(identifier: "s1", directory: scratch.path, loop: loop)
                #expect(await session.unfinishedTaskIDs == [1])
                #expect(await session.resumableBytes(of: 1) == kept)
                try await session.run(onCompletion: { completions.append($0) }, onAllEventsDelivered: { completions.allDelivered() })
                await session.close()
            }
            let completion = try #require(completions.all.first)
            #expect(completions.all.count == 1 && completions.allDeliveredCount == 1)
            #expect(completion.bytesTransferred == size - kept, "fetched \(completion.bytesTransferred), journal lacked \(size - kept)")
            guard case .downloaded(let location, let length, let sha256) = completion.outcome else {
                Issue.record("not downloaded: \(completion.outcome)")
                return
            }
            #expect(location == destination && length == size && sha256 == Crypto.hex(digest))

            // A third launch delivers nothing again: exactly once.
            try await onLoop(loop) {
                let session = try TransferSession(identifier: "s1", directory: scratch.path, loop: loop)
                let unfinished = await session.unfinishedTaskIDs
                let undelivered = await session.undeliveredTaskIDs
                #expect(unfinished.isEmpty && undelivered.isEmpty)
                try await session.run(onCompletion: { completions.append($0) }, onAllEventsDelivered: { completions.allDelivered() })
                await session.close()
            }
            #expect(completions.all.count == 1 && completions.allDeliveredCount == 2)
        }
        #expect(scratch.contents == ["big.bin", "s1.wsload-session"])
    }

    @Test("a file-size limit (full disk): exit 74 naming file_too_large, resume data kept; the rerun resumes")
    func fullDisk() async throws {
        let scratch = try DownloadScratch()
        let size: Int64 = 20_000_000
        try await withDownloadServer { server, _ in
            let url = "\(server.httpURL)/bytes/\(size)?seed=6"
            let destination = scratch.file("f.bin")
            let limited = try await ChildProcess.run(["/usr/bin/prlimit", "--fsize=8000000", wsloadExecutable, "download", url, "-o", destination])
            #expect(limited.status == 74, "\(limited.errors)")
            #expect(limited.errors.contains("file_too_large"), "\(limited.errors)")
            #expect(limited.errors.contains("run the same command again to resume"))
            #expect(!FileManager.default.fileExists(atPath: destination))
            let resumeText = try String(contentsOfFile: destination + ".wsload-resume", encoding: .utf8)
            let resume = try ResumeData(serialized: Array(resumeText.utf8))
            #expect(resume.bytesOnDisk > 0 && resume.bytesOnDisk <= 8_000_000, "\(resume.bytesOnDisk)")
            let rerun = try await ChildProcess.run([wsloadExecutable, "download", url, "-o", destination,
                                                   "--sha256", Crypto.hex(PatternContent.sha256(size: size, seed: 6))])
            #expect(rerun.status == 0, "\(rerun.errors)")
            #expect(rerun.output.contains("resumed: "), "\(rerun.output)")
        }
        #expect(scratch.contents == ["f.bin"])
    }

    @Test("the journal: a torn last line is ignored; an identifier in use is refused; force quit deletes partial files")
    func journal() async throws {
        let scratch = try DownloadScratch()
        try await withDownloadServer { server, group in
            let loop = group.loops[0]
            try await onLoop(loop) {
                let session = try TransferSession(identifier: "j", directory: scratch.path, loop: loop)
                // Slow enough to be stopped midway.
                let request = DownloadRequest(url: try HTTPURL("\(server.httpURL)/bytes/50000000?throttle=5000000"),
                                              destination: scratch.file("slow.bin"))
                try await session.add(.download(request))
                do {
                    _ = try TransferSession(identifier: "j", directory: scratch.path, loop: loop)
                    Issue.record("a second session with the same identifier opened")
                } catch let error as TransferError {
                    #expect(error.detail.contains("in use by another process"), "\(error)")
                }
                // System termination: the run is cancelled; the task stays resumable.
                let run = Task(executorPreference: loop.taskExecutor) {
                    try await session.run(onCompletion: { _ in Issue.record("nothing should complete") })
                }
                // Stopped once bytes are on disk (not after a fixed sleep: a busy box may not have started by then).
                let part = scratch.file("slow.bin.wsload-part")
                try await waitUntil(limit: .seconds(20)) { (FileSystem.size(of: part) ?? 0) > 0 }
                try #require((FileSystem.size(of: part) ?? 0) > 0, "no byte of the download reached the disk within 20 s")
                run.cancel()
                // A cancelled run returns (its task stays resumable); a throw here would be a journal failure.
                try await run.value
                #expect(await session.unfinishedTaskIDs == [1])
                #expect(FileManager.default.fileExists(atPath: scratch.file("slow.bin.wsload-part")))
                // User force quit: cancelled, partial file deleted, nothing to resume.
                try await session.cancelAll()
                #expect(await session.unfinishedTaskIDs.isEmpty)
                #expect(!FileManager.default.fileExists(atPath: scratch.file("slow.bin.wsload-part")))
                await session.close()
            }
            // A torn append (a kill mid-write) after the valid records.
            let journal = scratch.file("j.wsload-session")
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: journal))
            handle.seekToEndOfFile()
            handle.write(Data("{\"op\":\"task\",\"id\":2,\"kind\":\"downl".utf8))
            try handle.close()
            try await onLoop(loop) {
                let session = try TransferSession(identifier: "j", directory: scratch.path, loop: loop)
                #expect(await session.unfinishedTaskIDs.isEmpty)
                await session.close()
            }
            let text = try String(contentsOfFile: journal, encoding: .utf8)
            #expect(text.hasSuffix("\n") && !text.contains("downl\""), "the torn line is cut off")
        }
    }

    @Test("a completion journaled but not delivered before a kill is delivered once after relaunch")
    func replayedCompletion() async throws {
        let scratch = try DownloadScratch()
        let lines = [
            #"{"op":"task","id":1,"kind":"download","url":"http://127.0.0.1:9/x","destination":"/nowhere/x","segments":1}"#,
            #"{"op":"completed","id":1,"outcome":{"kind":"downloaded","location":"/nowhere/x","length":5,"sha256":null}}"#,
        ]
        try (lines.joined(separator: "\n") + "\n").write(toFile: scratch.file("r.wsload-session"), atomically: true, encoding: .utf8)
        try await withLoopGroup { group in
            let loop = group.loops[0]
            let completions = CompletionLog()
            for _ in 0..<2 {
                try await onLoop(loop) {
                    let session = try TransferSession(identifier: "r", directory: scratch.path, loop: loop)
                    try await session.run(onCompletion: { completions.append($0) }, onAllEventsDelivered: { completions.allDelivered() })
                    await session.close()
                }
            }
            #expect(completions.all.count == 1 && completions.all.first?.isReplayed == true)
            #expect(completions.allDeliveredCount == 2)
        }
    }
}

final class CompletionLog: @unchecked Sendable {
    private let lock = NSLock()
    private var completions: [TransferCompletion] = []
    private var delivered = 0
    func append(_ completion: TransferCompletion) { lock.withLock { completions.append(completion) } }
    func allDelivered() { lock.withLock { delivered += 1 } }
    var all: [TransferCompletion] { lock.withLock { completions } }
    var allDeliveredCount: Int { lock.withLock { delivered } }
}

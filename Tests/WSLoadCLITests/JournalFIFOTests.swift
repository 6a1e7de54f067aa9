import Foundation
import Glibc
import Reporting
import Testing

@Suite struct JournalFIFOTests {
    @Test("a FIFO where a journal or interval log should be is refused at once, not waited on for a writer")
    func fifoRefused() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-fifo-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("r.json.partial").path
        #expect(mkfifo(path, 0o600) == 0)
        // Off the cooperative pool: a regression blocks in open(2); the suite's time limit then fails it.
        let outcome: String = await withCheckedContinuation { continuation in
            Thread {
                do {
                    _ = try JournalRecovery(contentsOf: path)
                    continuation.resume(returning: "read")
                } catch {
                    continuation.resume(returning: "\(error)")
                }
            }.start()
        }
        #expect(outcome.contains("not a regular file"), "\(outcome)")
    }
}

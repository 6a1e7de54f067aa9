import Crypto
import HTTP1
import JSON
import Runtime

/// How a session task ended, as delivered to ``TransferSession/run(onCompletion:onAllEventsDelivered:)``
/// (`didFinishDownloadingTo` / `didCompleteWithError`).
package struct TransferCompletion: Sendable {
    /// What the task achieved: a verified file, an upload's status and digest, or why it failed.
    package enum Outcome: Sendable {
        case downloaded(location: String, length: Int64, sha256: String?)
        case uploaded(status: Int, bytesSent: Int64, sha256: String)
        case failed(code: String, detail: String)
    }

    package var taskID: Int
    package var outcome: Outcome
    /// Body bytes this process received or sent for the task (after a relaunch: only what was missing).
    package var bytesTransferred: Int64
    /// True when the task finished in an earlier process and is delivered only now, after relaunch.
    package var isReplayed: Bool
}

/// A background session: tasks journaled to disk under an identifier, so that a process killed
/// mid-transfer (SIGKILL, a crash, a reboot) and started again with the same identifier resumes every
/// unfinished task from its last checkpoint and delivers each completion exactly once.
///
/// The journal (`<directory>/<identifier>.wsload-session`) is JSON lines, each appended and fdatasync'd:
/// `task` (what to transfer; never tokens), `checkpoint` (resume data), `completed` (the outcome),
/// `delivered` and `cancelled`. It is locked while open: two live sessions cannot share an identifier.
/// A torn last line (a kill mid-append) is ignored. Delivery is journaled before the callback runs, so a
/// completion is never delivered twice; one completed but not yet delivered is delivered after relaunch.
///
/// Force quit (``cancelAll()``) cancels the tasks and deletes their partial files: nothing resumes.
/// System termination (the process dies, or ``run(onCompletion:onAllEventsDelivered:)`` is cancelled)
/// keeps them for the next launch.
package actor TransferSession {
    /// What a journaled task does: a download or an upload, with its request.
    package enum TaskKind: Sendable {
        case download(DownloadRequest)
        case upload(UploadRequest)
    }

    package nonisolated let identifier: String
    package nonisolated let loop: EventLoop
    package nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    package nonisolated let journalPath: String
    private let configuration: TransferConfiguration
    private let journal: DataFile
    private var journalLength: Int64

    private struct Entry {
        var kind: TaskKind
        var resumeData: ResumeData?
        var completion: TransferCompletion.Outcome?
        var isDelivered = false
        var isCancelled = false
    }

    private var entries: [Int: Entry] = [:]
    private var nextID = 1
    private var isCancellingAll = false

    /// Opens (or creates) the session's journal and replays it.
    /// - Throws: `TransferError` (`file`) when the journal cannot be opened or another process holds it.
    package init(
        identifier: String, directory: String, configuration: TransferConfiguration = TransferConfiguration(), loop: EventLoop
    ) throws {
        guard !identifier.isEmpty, identifier.utf8.allSatisfy({ isIdentifierByte($0) }) else {
            throw TransferError(.invalidRequest, "session identifier \"\(identifier)\" must be letters, digits, '.', '-' or '_'")
        }
        self.identifier = identifier
        self.loop = loop
        self.configuration = configuration
        journalPath = directory + "/" + identifier + ".wsload-session"
        do {
            try FileSystem.createDirectories(directory)
            // Owner-only: the journal holds each task's full URL (a signed query is a credential) and its resume data.
            journal = try DataFile.open(journalPath, mode: .readWrite, permissions: 0o600)
            try journal.lockExclusively()
            journalLength = try journal.size()
        } catch {
            throw TransferError.from(error, doing: "session \(identifier)")
        }
        let replayed = try Self.replay(journal, length: journalLength)
        entries = replayed.entries
        // Ids come from the file: integerValue keeps them below 2^53, so the next one cannot overflow.
        nextID = max(0, entries.keys.max() ?? 0) + 1
        if replayed.validLength != journalLength {
            do {
                try journal.truncate(to: replayed.validLength)
            } catch {
                throw TransferError.from(error, doing: "session \(identifier)")
            }
            journalLength = replayed.validLength
        }
    }

    /// Tasks that will run (or resume) on the next ``run(onCompletion:onAllEventsDelivered:)``.
    package var unfinishedTaskIDs: [Int] {
        entries.filter { $0.value.completion == nil && !$0.value.isCancelled }.map(\.key).sorted()
    }

    /// Tasks finished but not yet delivered.
    package var undeliveredTaskIDs: [Int] {
        entries.filter { $0.value.completion != nil && !$0.value.isDelivered }.map(\.key).sorted()
    }

    /// The download an unfinished or undelivered task of the journal makes (nil for uploads and unknown ids).
    package func downloadRequest(of taskID: Int) -> DownloadRequest? {
        guard case .download(let request)? = entries[taskID]?.kind else { return nil }
        return request
    }

    /// Bytes already on disk for an unfinished download (from its last checkpoint).
    package func resumableBytes(of taskID: Int) -> Int64 { entries[taskID]?.resumeData?.bytesOnDisk ?? 0 }

    /// Adds a task to the journal; it starts with the next run.
    @discardableResult
    package func add(_ kind: TaskKind) throws -> Int {
        let id = nextID
        nextID += 1
        entries[id] = Entry(kind: kind)
        var record: JSONObject = ["op": "task", "id": JSONValue(id)]
        switch kind {
        case .download(let request):
            record["kind"] = "download"
            record["url"] = .string(request.url.description)
            record["destination"] = .string(request.destination)
            record["segments"] = JSONValue(request.segments)
            record["connections"] = JSONValue(request.connections)
            record["minimumSegmentSize"] = JSONValue(request.minimumSegmentSize)
            if let expected = request.expectedSHA256 { record["sha256"] = .string(Crypto.hex(expected)) }
            if request.computesDigest { record["computesDigest"] = true }
            if let date = request.earliestBeginDate { record["earliestBeginDate"] = .number(date) }
        case .upload(let request):
            record["kind"] = "upload"
            record["url"] = .string(request.url.description)
            record["method"] = .string(request.method)
            record["file"] = .string(request.file)
            record["contentType"] = .string(request.contentType)
        }
        try append(record)
        return id
    }

    /// Runs every unfinished task (resuming downloads from their checkpoints), at most `concurrency` at a
    /// time; first delivers completions an earlier process journaled but did not deliver. Each completion
    /// is delivered once; `onAllEventsDelivered` (`urlSessionDidFinishEvents`) follows the last one.
    /// Cancelling the calling task stops the transfers and keeps them resumable (system termination).
    package func run(
        concurrency: Int = 64, onProgress: (@Sendable (Int, Int64) -> Void)? = nil,
        onCompletion: @Sendable (TransferCompletion) -> Void, onAllEventsDelivered: @Sendable () -> Void = {}
    ) async throws {
        for id in undeliveredTaskIDs {
            try deliver(id, TransferCompletion(taskID: id, outcome: entries[id]!.completion!, bytesTransferred: 0, isReplayed: true),
                        onCompletion)
        }
        let ids = unfinishedTaskIDs
        try await withThrowingTaskGroup(of: (Int, TransferCompletion.Outcome?, Int64, ResumeData?).self) { group in
            var next = 0
            func startNext() {
                guard next < ids.count else { return }
                let id = ids[next]
                next += 1
                let entry = entries[id]!
                group.addTask(executorPreference: loop.taskExecutor) {
                    await self.runTask(id: id, entry: entry, onProgress: onProgress)
                }
            }
            for _ in 0..<max(1, concurrency) { startNext() }
            while let (id, outcome, bytes, resumeData) = try await group.next() {
                if let resumeData { try checkpoint(id, resumeData) }
                if let outcome {
                    try complete(id, outcome)
                    let completion = TransferCompletion(taskID: id, outcome: outcome, bytesTransferred: bytes, isReplayed: false)
                    try deliver(id, completion, onCompletion)
                }
                if !Task.isCancelled { startNext() }
            }
        }
        if !Task.isCancelled && unfinishedTaskIDs.isEmpty {
            onAllEventsDelivered()
            try compact()
        }
    }

    /// Force quit: cancels every unfinished task and deletes its partial file; none will resume.
    package func cancelAll() throws {
        isCancellingAll = true
        for id in unfinishedTaskIDs {
            if case .download(let request) = entries[id]!.kind { try? FileSystem.remove(request.partPath) }  // a part file already gone is what cancelling wants
            entries[id]!.isCancelled = true
            try append(["op": "cancelled", "id": JSONValue(id)])
        }
    }

    /// Closes the journal (releasing the identifier for another process).
    package func close() { journal.close() }

    // MARK: Running

    /// Runs one task; returns its outcome (nil when it was stopped and stays resumable) and fresh resume data.
    private func runTask(id: Int, entry: Entry, onProgress: (@Sendable (Int, Int64) -> Void)?) async
        -> (Int, TransferCompletion.Outcome?, Int64, ResumeData?)
    {
        switch entry.kind {
        case .download(let request):
            let task = DownloadTask(
                request: request, configuration: configuration, loop: loop, resumeData: entry.resumeData,
                checkpointInterval: .seconds(1),
                onProgress: onProgress.map { report in { @Sendable progress in report(id, progress.bytesWritten) } },
                onCheckpoint: { [weak self] data in
                    guard let self else { return }
                    // A checkpoint the journal cannot take loses only itself: a relaunch resumes from the one before.
                    self.assumeIsolated { session in try? session.checkpoint(id, data) }
                })
            do {
                let result = try await task.run()
                return (id, .downloaded(location: result.location, length: result.length, sha256: result.sha256.map(Crypto.hex)),
                        result.bytesTransferred, nil)
            } catch let error as TransferError {
                let transferred = await task.transferredBytes
                if error.code == .cancelled || Task.isCancelled || isCancellingAll {
                    return (id, nil, transferred, error.resumeData)
                }
                return (id, .failed(code: error.metricCode, detail: error.detail), transferred, error.resumeData)
            } catch {
                return (id, .failed(code: "internal", detail: "\(error)"), 0, nil)
            }
        case .upload(let request):
            let task = UploadTask(request: request, configuration: configuration, loop: loop)
            do {
                let result = try await task.run()
                return (id, .uploaded(status: result.status, bytesSent: result.bytesSent, sha256: Crypto.hex(result.sha256)),
                        result.bytesSent, nil)
            } catch let error as TransferError {
                if error.code == .cancelled || Task.isCancelled || isCancellingAll { return (id, nil, 0, nil) }
                return (id, .failed(code: error.metricCode, detail: error.detail), 0, nil)
            } catch {
                return (id, .failed(code: "internal", detail: "\(error)"), 0, nil)
            }
        }
    }

    // MARK: Journal

    private func checkpoint(_ id: Int, _ data: ResumeData) throws {
        guard entries[id] != nil, !isCancellingAll else { return }
        entries[id]!.resumeData = data
        try append(["op": "checkpoint", "id": JSONValue(id), "resume": data.json])
    }

    private func complete(_ id: Int, _ outcome: TransferCompletion.Outcome) throws {
        entries[id]!.completion = outcome
        try append(["op": "completed", "id": JSONValue(id), "outcome": Self.json(outcome)])
    }

    private func deliver(_ id: Int, _ completion: TransferCompletion, _ handler: @Sendable (TransferCompletion) -> Void) throws {
        guard entries[id]?.isDelivered == false else { return }
        entries[id]!.isDelivered = true
        try append(["op": "delivered", "id": JSONValue(id)])
        handler(completion)
    }

    private func append(_ record: JSONObject) throws {
        let line = Array((JSONValue.object(record).formatted(pretty: false) + "\n").utf8)
        do {
            try journal.write(line[...], at: journalLength)
            try journal.synchronize()
        } catch {
            throw TransferError.from(error, doing: "writing the journal \(journalPath)")
        }
        journalLength += Int64(line.count)
    }

    /// Rewrites the journal with only what is still needed (nothing, once every task is delivered).
    private func compact() throws {
        let live = entries.filter { !($0.value.isDelivered || $0.value.isCancelled) }
        guard live.isEmpty else { return }
        do {
            try journal.truncate(to: 0)
            try journal.synchronize()
        } catch {
            throw TransferError.from(error, doing: "compacting the journal \(journalPath)")
        }
        journalLength = 0
        entries = [:]
    }

    private static func json(_ outcome: TransferCompletion.Outcome) -> JSONValue {
        switch outcome {
        case .downloaded(let location, let length, let sha256):
            ["kind": "downloaded", "location": .string(location), "length": JSONValue(length), "sha256": JSONValue(sha256)]
        case .uploaded(let status, let bytesSent, let sha256):
            ["kind": "uploaded", "status": JSONValue(status), "bytesSent": JSONValue(bytesSent), "sha256": .string(sha256)]
        case .failed(let code, let detail):
            ["kind": "failed", "code": .string(code), "detail": .string(detail)]
        }
    }

    private static func outcome(_ json: JSONValue) -> TransferCompletion.Outcome? {
        switch json["kind"]?.stringValue {
        case "downloaded":
            // integerValue refuses fractions, ±inf and anything beyond 2^53: a crafted 1e19 cannot trap here.
            guard let location = json["location"]?.stringValue, let length = json["length"]?.integerValue, length >= 0 else { return nil }
            return .downloaded(location: location, length: Int64(length), sha256: json["sha256"]?.stringValue)
        case "uploaded":
            guard let status = json["status"]?.integerValue, let sent = json["bytesSent"]?.integerValue, sent >= 0,
                let sha256 = json["sha256"]?.stringValue
            else { return nil }
            return .uploaded(status: status, bytesSent: Int64(sent), sha256: sha256)
        case "failed":
            return .failed(code: json["code"]?.stringValue ?? "unknown", detail: json["detail"]?.stringValue ?? "")
        default:
            return nil
        }
    }

    /// The largest journal a session reads back (64 MiB: a week of one checkpoint a second for a few tasks).
    /// A larger one is refused before it is read, not loaded whole into memory.
    package static let maximumJournalSize: Int64 = 64 << 20

    /// Replays the journal; stops at the first line that does not parse (a torn append) and says where.
    private static func replay(_ journal: DataFile, length: Int64) throws -> (entries: [Int: Entry], validLength: Int64) {
        guard length <= maximumJournalSize else {
            throw TransferError(.invalidRequest, "the journal \(journal.path) holds \(length) bytes, more than the "
                                + "\(maximumJournalSize >> 20) MiB a session reads; remove it (or use another session) to start over")
        }
        var bytes: [UInt8] = []
        do {
            try journal.read(into: &bytes, count: Int(length), at: 0)
        } catch {
            throw TransferError.from(error, doing: "reading the journal \(journal.path)")
        }
        var entries: [Int: Entry] = [:]
        var offset = 0
        var validLength: Int64 = 0
        while offset < bytes.count, let newline = bytes[offset...].firstIndex(of: 10) {
            let line = bytes[offset..<newline]
            // A torn or foreign line ends the replay: what came before it is the journal's valid prefix.
            guard let record = try? JSONValue(parsing: line), let id = record["id"]?.integerValue, let op = record["op"]?.stringValue else {
                break
            }
            switch op {
            case "task":
                guard let kind = taskKind(record) else { break }
                entries[id] = Entry(kind: kind)
            case "checkpoint":
                if let resume = record["resume"], let data = try? ResumeData(json: resume) { entries[id]?.resumeData = data }  // unreadable resume data: restart that task
            case "completed":
                entries[id]?.completion = record["outcome"].flatMap(outcome)
            case "delivered":
                entries[id]?.isDelivered = true
            case "cancelled":
                entries[id]?.isCancelled = true
            default:
                break
            }
            offset = newline + 1
            validLength = Int64(offset)
        }
        return (entries, validLength)
    }

    private static func taskKind(_ record: JSONValue) -> TaskKind? {
        guard let urlText = record["url"]?.stringValue, let url = try? HTTPURL(urlText) else { return nil }  // a record without a usable URL is skipped
        switch record["kind"]?.stringValue {
        case "download":
            guard let destination = record["destination"]?.stringValue else { return nil }
            return .download(DownloadRequest(
                // Clamped to what `wsload download` accepts: a crafted count must not plan millions of ranges.
                url: url, destination: destination, segments: min(1024, record["segments"]?.integerValue ?? 1),
                connections: record["connections"]?.integerValue.map { min(1024, $0) },
                minimumSegmentSize: Int64(record["minimumSegmentSize"]?.integerValue ?? 1_048_576),
                expectedSHA256: record["sha256"]?.stringValue.flatMap(hexBytes),
                computesDigest: record["computesDigest"]?.boolValue ?? false,
                earliestBeginDate: record["earliestBeginDate"]?.numberValue))
        case "upload":
            guard let file = record["file"]?.stringValue else { return nil }
            return .upload(UploadRequest(url: url, method: record["method"]?.stringValue ?? "PUT", file: file,
                                         contentType: record["contentType"]?.stringValue ?? "application/octet-stream"))
        default:
            return nil
        }
    }
}

private func isIdentifierByte(_ byte: UInt8) -> Bool {
    (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 45 || byte == 46 || byte == 95
}

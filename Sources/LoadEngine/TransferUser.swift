import Clients
import Crypto
import HTTP1
import Profile
import Runtime

/// What every slot of a download or upload scenario shares.
final class TransferPlan: Sendable {
    let kind: Scenario.Kind
    let scenario: TransferScenario
    /// The download's source or the upload's destination.
    let url: HTTPURL
    let configuration: TransferConfiguration
    /// Where downloads are written (and a generated upload file lives).
    let directory: String
    /// What every download must digest to, when known (generated content, or `sha256` in the profile).
    let expectedDigest: [UInt8]?
    /// The file uploads send.
    let uploadFile: String?

    init(kind: Scenario.Kind, scenario: TransferScenario, url: HTTPURL, configuration: TransferConfiguration, directory: String,
         expectedDigest: [UInt8]?, uploadFile: String?) {
        self.kind = kind
        self.scenario = scenario
        self.url = url
        self.configuration = configuration
        self.directory = directory
        self.expectedDigest = expectedDigest
        self.uploadFile = uploadFile
    }
}

/// A temporary file a transfer slot is done with and removes.
package enum TemporaryTransferFile: Sendable, Hashable {
    /// The partial file (`.wsload-part`) of a download that failed.
    case partialDownload
    /// The body file (`.multipart.tmp`) of a multipart upload, once the upload ended.
    case multipartBody
}

/// Where a download or upload slot can be bent, for the oracle's proofs: the conformances that break
/// something live in the tests; the defaults (a protocol extension) are the honest slot. Each method is asked
/// at most once per transfer or attempt.
package protocol TransferFaults: Sendable {
    /// How many completions transfer `sequence` (from 0) of slot `slot` delivers once it succeeded. Honest: 1.
    func completionsDelivered(slot: Int, transfer sequence: Int) -> Int
    /// A download to `destination` was interrupted: another destination to start over at (the first attempt's
    /// partial file then counts as this download's leftover) instead of resuming. Honest: nil, resume.
    func destinationAfterInterruption(of destination: String) -> String?
    /// An interrupted download is about to resume from the partial file at `path`, which keeps the bytes
    /// already written. Honest: nothing happens to it.
    func willResume(fromPartialFile path: String)
    /// Whether the slot removes `path`, a temporary file of `kind` it is done with. Honest: true.
    func removes(_ kind: TemporaryTransferFile, at path: String) -> Bool
}

extension TransferFaults {
    package func completionsDelivered(slot: Int, transfer sequence: Int) -> Int { 1 }
    package func destinationAfterInterruption(of destination: String) -> String? { nil }
    package func willResume(fromPartialFile path: String) {}
    package func removes(_ kind: TemporaryTransferFile, at path: String) -> Bool { true }
}

/// One slot of a transfer scenario: downloads (or uploads) one file after another until the run stops it
/// or its repeats are done. Interrupted downloads resume from their resume data, every verified download
/// is checked against its digest, every completion is counted once, and no partial file may outlive its
/// task. Runs on its loop and records into the loop's recorder, like ``VirtualUser``.
struct TransferUser {
    let id: Int
    let plan: ScenarioPlan
    let transfer: TransferPlan
    let loop: EventLoop
    let recorder: LoopRecorder
    let latch: StopLatch
    let ledger: InvariantLedger
    var random: SeededRandomNumberGenerator
    private var history: ActorHistory!

    init(id: Int, plan: ScenarioPlan, loop: EventLoop, recorder: LoopRecorder, latch: StopLatch, ledger: InvariantLedger,
         random: SeededRandomNumberGenerator) {
        self.id = id
        self.plan = plan
        transfer = plan.transfer!
        self.loop = loop
        self.recorder = recorder
        self.latch = latch
        self.ledger = ledger
        self.random = random
    }

    mutating func run() async {
        history = ActorHistory(id: id, scenario: plan.scenario.name, start: LoopClock().now)
        defer {
            recorder.recordEnd(of: id, latch: latch, ledger: ledger, history: history, bound: plan.stopBound)
            latch.remove(id)
        }
        var sequence = 0
        while !latch.isStopped(id) && !Task.isCancelled && transfer.scenario.repeats.map({ sequence < $0 }) ?? true {
            recorder.liveConnections += 1
            if transfer.kind == .download { await download(sequence) } else { await upload(sequence) }
            recorder.liveConnections -= 1
            sequence += 1
        }
    }

    // MARK: Downloads

    /// File removals here are best effort (`try?`): a file that stays is what the no-temporary-files check just
    /// after reports, so a failed removal is never silent.
    private mutating func download(_ sequence: Int) async {
        var destination = transfer.directory + "/\(Self.fileStem(plan.scenario.name))-\(id)-\(sequence).bin"
        let scenario = transfer.scenario
        let clock = LoopClock()
        let start = clock.now
        var cutAt: Double? = Double.random(in: 0..<1, using: &random) < scenario.interruptProbability
            ? Double.random(in: 0.05...0.95, using: &random) : nil
        var resumeData: ResumeData?
        var completions = 0
        var abandonedParts: [String] = []
        let faults = plan.faults.transfers
        recorder.transfersStarted += 1
        history.note("download \(sequence) started\(cutAt.map { " (cut at \(Int($0 * 100))%)" } ?? "")")
        while true {
            let request = DownloadRequest(
                url: transfer.url, destination: destination, segments: scenario.segments, connections: scenario.connectionsPerTransfer,
                minimumSegmentSize: scenario.minimumSegmentSize, expectedSHA256: nil, computesDigest: transfer.expectedDigest != nil)
            let outcome = await Self.runDownload(request, configuration: transfer.configuration, loop: loop, resumeData: resumeData,
                                                 interruptAt: cutAt)
            switch outcome {
            case .success(let result):
                completions += faults?.completionsDelivered(slot: id, transfer: sequence) ?? 1
                ledger.check(.transferCompletedOnce, completions == 1, actor: history, "download \(sequence) completed \(completions) times")
                record(statuses: result.statuses)
                recorder.transferRetries += UInt64(result.retries)
                recorder.transferRestarts += UInt64(result.restarts)
                recorder.transferBytesReceived += UInt64(result.bytesTransferred)
                if let expected = transfer.expectedDigest {
                    ledger.check(.transferDigest, result.sha256 == expected, actor: history,
                                 "download \(sequence)\(resumeData == nil ? "" : " (resumed)") digests to "
                                    + "\(result.sha256.map(Crypto.hex) ?? "nothing"), expected \(Crypto.hex(expected))")
                }
                finish(start: start, bytes: result.length, timeToFirstByte: result.timeToFirstByte)
                history.note("download \(sequence) done: \(result.length) bytes\(resumeData == nil ? "" : ", resumed")")
                if !scenario.keepsFiles { try? FileSystem.remove(destination) }  // verified and not kept; the leftover scan reports any file left
            case .interrupted(let data, let transferred, let statuses):
                record(statuses: statuses)
                recorder.transferResumes += 1
                recorder.transferBytesReceived += UInt64(transferred)
                cutAt = nil
                history.note("download \(sequence) interrupted at \(data?.bytesOnDisk ?? 0) bytes")
                if let restart = faults?.destinationAfterInterruption(of: destination) {
                    // Started over elsewhere (a fault): the first attempt's partial file is still this download's.
                    abandonedParts.append(request.partPath)
                    destination = restart
                    resumeData = nil
                } else {
                    resumeData = data
                    if let faults, let data { faults.willResume(fromPartialFile: data.partPath) }
                }
                continue
            case .failure(let error):
                recorder.transfersFailed += 1
                recorder.recordError(error)
                history.note("download \(sequence) failed: \(error.metricCode)")
                // A user gives up on a failed download: its partial file goes too.
                if faults?.removes(.partialDownload, at: request.partPath) ?? true { try? FileSystem.remove(request.partPath) }
            case .cancelled(let partPath):
                history.note("download \(sequence) cancelled by the stop")
                try? FileSystem.remove(partPath)  // the stop's cancelled part; the leftover scan reports any file left
            }
            let leftover = ([request.partPath] + abandonedParts).filter { FileSystem.exists($0) }
            ledger.check(.transferNoTemporaryFiles, leftover.isEmpty, actor: history,
                         "left behind after download \(sequence): \(leftover.map(FileSystem.lastComponent(of:)).joined(separator: ", "))")
            return
        }
    }

    private enum DownloadOutcome {
        case success(DownloadResult)
        /// Cut on purpose (an interruption) after `transferred` bytes: resume from the data.
        case interrupted(ResumeData?, transferred: Int64, statuses: [Int: Int])
        case failure(TransferError)
        /// The run was cancelled.
        case cancelled(partPath: String)
    }

    /// Runs one download attempt; with `interruptAt`, it stops once that share of the file is on disk.
    private static func runDownload(
        _ request: DownloadRequest, configuration: TransferConfiguration, loop: EventLoop, resumeData: ResumeData?,
        interruptAt: Double?
    ) async -> DownloadOutcome {
        let task = DownloadTask(request: request, configuration: configuration, loop: loop, resumeData: resumeData,
                                interruptAt: interruptAt)
        // A short-lived child task: the transfer's deep frames give their memory back when it ends.
        let handle = Task(executorPreference: loop.taskExecutor) { try await task.run() }
        let result = await withTaskCancellationHandler { await handle.result } onCancel: { handle.cancel() }
        switch result {
        case .success(let download): return .success(download)
        case .failure(let error as TransferError) where error.code == .cancelled:
            if interruptAt != nil && !Task.isCancelled {
                return .interrupted(error.resumeData, transferred: await task.transferredBytes, statuses: await task.responseStatuses)
            }
            return .cancelled(partPath: request.partPath)
        case .failure(let error as TransferError): return .failure(error)
        case .failure(let error): return .failure(TransferError(.network, "\(error)"))
        }
    }

    // MARK: Uploads

    /// Removals of the multipart body are best effort (`try?`): one that stays is what the check at the end reports.
    private mutating func upload(_ sequence: Int) async {
        guard let file = transfer.uploadFile else { return }
        let clock = LoopClock()
        let start = clock.now
        recorder.transfersStarted += 1
        history.note("upload \(sequence) started")
        var source = file
        var contentType = "application/octet-stream"
        var temporary: String?
        if transfer.scenario.isMultipart {
            var form = MultipartForm()
            form.fields = [.init(name: "sequence", value: String(sequence))]
            form.file = (name: "file", fileName: FileSystem.lastComponent(of: file), contentType: contentType, path: file)
            let path = transfer.directory + "/\(Self.fileStem(plan.scenario.name))-\(id)-\(sequence).multipart.tmp"
            do {
                try? FileSystem.remove(path)  // a stale body of an earlier run of this slot, if any
                _ = try form.write(to: path)
            } catch {
                recorder.transfersFailed += 1
                recorder.recordError(TransferError.from(error, doing: "multipart body"))
                try? FileSystem.remove(path)  // the half-written body; the error above is what is recorded
                return
            }
            temporary = path
            source = path
            contentType = form.contentType
        }
        let faults = plan.faults.transfers
        let removesBody = temporary.map { faults?.removes(.multipartBody, at: $0) ?? true } ?? true
        defer {
            if let temporary, removesBody { try? FileSystem.remove(temporary) }  // the leftover scan reports a body left behind
        }
        let request = UploadRequest(url: transfer.url, method: transfer.scenario.method, file: source, contentType: contentType)
        let task = UploadTask(request: request, configuration: transfer.configuration, loop: loop)
        let handle = Task(executorPreference: loop.taskExecutor) { try await task.run() }
        let result = await withTaskCancellationHandler { await handle.result } onCancel: { handle.cancel() }
        switch result {
        case .success(let upload):
            let completions = faults?.completionsDelivered(slot: id, transfer: sequence) ?? 1
            ledger.check(.transferCompletedOnce, completions == 1, actor: history, "upload \(sequence) completed \(completions) times")
            record(statuses: upload.statuses)
            recorder.transferRetries += UInt64(upload.retries)
            recorder.transferBytesSent += UInt64(upload.bytesSent)
            finish(start: start, bytes: upload.bytesSent, timeToFirstByte: upload.timeToFirstByte)
        case .failure(let error as TransferError) where error.code == .cancelled:
            break
        case .failure(let error):
            recorder.transfersFailed += 1
            recorder.recordError(TransferError.from(error, doing: "upload"))
        }
        if let temporary {
            if removesBody { try? FileSystem.remove(temporary) }  // the leftover scan reports a body left behind
            ledger.check(.transferNoTemporaryFiles, !FileSystem.exists(temporary), actor: history, "multipart body left behind")
        }
    }

    // MARK: Paths

    /// A scenario name as one file-name component inside the transfer directory: letters, digits, '-' and '_'
    /// are kept, every other byte ('/', '.', NUL, spaces, non-ASCII) becomes '_', and at most 64 of them. A
    /// name such as `../../x` thus names `______x-…` in the directory, never a file outside it.
    static func fileStem(_ name: String) -> String {
        let bytes = name.utf8.prefix(64).map { byte -> UInt8 in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"):
                byte
            default:
                UInt8(ascii: "_")
            }
        }
        return bytes.isEmpty ? "scenario" : String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Recording

    private func record(statuses: [Int: Int]) {
        for (status, count) in statuses { recorder.statuses[status, default: 0] += UInt64(count) }
    }

    private func finish(start: LoopClock.Instant, bytes: Int64, timeToFirstByte: Duration?) {
        let duration = start.duration(to: LoopClock().now)
        recorder.transfersCompleted += 1
        recorder.transferDuration.record(microseconds: duration)
        if let timeToFirstByte { recorder.timeToFirstByte.record(microseconds: timeToFirstByte) }
        let seconds = Double(duration.nanoseconds) / 1e9
        if seconds > 0 { recorder.throughput.record(UInt64(max(1, (Double(bytes) / 1024 / seconds).rounded()))) }
    }
}

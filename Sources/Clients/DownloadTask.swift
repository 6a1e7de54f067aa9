import Crypto
import HTTP1
import Runtime

/// What to download and how: the parameters of `downloadTask(with:)`, plus aria2-style splitting.
public struct DownloadRequest: Sendable {
    public var url: HTTPURL
    /// Where the file ends up. It appears there only when complete (renamed from ``partPath``).
    public var destination: String
    /// Ranges to split the file into (aria2 `-s`); 1 is a single stream.
    public var segments: Int
    /// Connections used at once (aria2 `-x`); at most `segments`.
    public var connections: Int
    /// No segment is smaller than this (aria2 `-k`).
    public var minimumSegmentSize: Int64
    /// Verify the finished file against this SHA-256; a mismatch fails with `digest_mismatch`.
    public var expectedSHA256: [UInt8]?
    /// Compute the finished file's SHA-256 even when none is expected (for reports and the oracle).
    public var computesDigest: Bool
    /// `earliestBeginDate`: do not start before this wall-clock time (seconds since 1970).
    public var earliestBeginDate: Double?

    public init(
        url: HTTPURL, destination: String, segments: Int = 1, connections: Int? = nil, minimumSegmentSize: Int64 = 1024 * 1024,
        expectedSHA256: [UInt8]? = nil, computesDigest: Bool = false, earliestBeginDate: Double? = nil
    ) {
        self.url = url
        self.destination = destination
        self.segments = max(1, segments)
        self.connections = max(1, min(connections ?? segments, max(1, segments)))
        self.minimumSegmentSize = max(1, minimumSegmentSize)
        self.expectedSHA256 = expectedSHA256
        self.computesDigest = computesDigest
        self.earliestBeginDate = earliestBeginDate
    }

    /// The partial file, beside the destination so the final rename is atomic.
    public var partPath: String { destination + ".wsload-part" }
}

/// `didWriteData`: how far a download is.
public struct DownloadProgress: Sendable, Hashable {
    /// Bytes on disk, including those kept from an earlier attempt.
    public var bytesWritten: Int64
    /// The file's length once known (`totalBytesExpectedToWrite`).
    public var bytesExpected: Int64?
    /// Bytes received over the network by this run.
    public var bytesTransferred: Int64
}

/// A finished download (`didFinishDownloadingTo`): the file is already at ``location``.
public struct DownloadResult: Sendable {
    public var location: String
    public var length: Int64
    /// Body bytes received by this run (less than `length` after a resume).
    public var bytesTransferred: Int64
    public var sha256: [UInt8]?
    /// From the first request to its response head.
    public var timeToFirstByte: Duration?
    public var duration: Duration
    /// Requests repeated after a failure.
    public var retries: Int
    /// Whether it continued from resume data (and how many bytes that saved).
    public var isResumed: Bool
    public var bytesReused: Int64
    /// Times it started over because the file changed or the server would not resume.
    public var restarts: Int
    /// Final response statuses seen, by code.
    public var statuses: [Int: Int]
    /// Segments and connections actually used (1 and 1 when the server ignored ranges).
    public var segments: Int
    public var connectionsOpened: Int
    public var isRangeFallback: Bool
}

/// A download as an actor on one loop: one stream, or ranges over several connections, into a partial
/// file beside the destination; on success the file is renamed into place before the result is
/// returned; on failure the partial file stays and the thrown ``TransferError`` carries ``ResumeData``.
///
/// Resuming sends `Range` with `If-Range`; a 200 answer (the file changed) or changed validators restart
/// cleanly from zero, and a 416 for a complete file finishes it. Ranged downloads probe with `bytes=0-`:
/// a 206 gives the length and the plan, a 200 means the server ignores ranges, and that response is
/// then read as the single stream. Failed segments retry with the backoff policy from where they stopped.
public actor DownloadTask {
    public nonisolated let loop: EventLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    public nonisolated let request: DownloadRequest
    private let configuration: TransferConfiguration
    private let onProgress: (@Sendable (DownloadProgress) -> Void)?
    private let onCheckpoint: (@Sendable (ResumeData) -> Void)?
    private let checkpointInterval: Duration
    /// Simulated interruption: stop once this share of the file is on disk (see `init`).
    private let interruptAt: Double?

    private var url: HTTPURL
    private var validators = Validators()
    private var totalLength: Int64?
    private var plan: [SegmentProgress] = []
    private var pending: [Int] = []
    private var part: DataFile?
    /// Hashes as bytes arrive when one stream writes the file from byte 0 in order.
    private var inlineHasher: SHA256Hasher?
    private var limiter: BandwidthLimiter?
    private var liveConnections: [ObjectIdentifier: HTTPClientConnection] = [:]
    private var isResourceTimedOut = false
    private var random = SeededRandomNumberGenerator(seed: nil)
    private var lastCheckpoint = LoopClock().now

    private var bytesTransferred: Int64 = 0
    private var bytesReused: Int64 = 0
    private var timeToFirstByte: Duration?
    private var retries = 0
    private var restarts = 0
    private var statuses: [Int: Int] = [:]
    private var connectionsOpened = 0
    private var isRangeFallback = false
    private var isResumed = false

    /// - Parameters:
    ///   - resumeData: continue an earlier attempt (`downloadTask(withResumeData:)`).
    ///   - onProgress: called on the loop after each write.
    ///   - onCheckpoint: called with fresh resume data at most every `checkpointInterval` (for a journal).
    ///   - interruptAt: for load simulations: once this share (0–1) of the file is on disk, stop exactly
    ///     there, as if the process were killed, and fail with `cancelled` and resume data.
    public init(
        request: DownloadRequest, configuration: TransferConfiguration = TransferConfiguration(), loop: EventLoop,
        resumeData: ResumeData? = nil, checkpointInterval: Duration = .milliseconds(500), interruptAt: Double? = nil,
        onProgress: (@Sendable (DownloadProgress) -> Void)? = nil, onCheckpoint: (@Sendable (ResumeData) -> Void)? = nil
    ) {
        self.interruptAt = interruptAt
        self.loop = loop
        self.request = request
        self.configuration = configuration
        self.onProgress = onProgress
        self.onCheckpoint = onCheckpoint
        self.checkpointInterval = checkpointInterval
        url = request.url
        // The request's URL, not the one in the resume data: redirects are followed again, and the
        // validators (If-Range) decide whether the bytes on disk still belong to what it names.
        if let resumeData {
            validators = resumeData.validators
            totalLength = resumeData.totalLength
            plan = resumeData.segments
            isResumed = true
        }
        if let limit = configuration.bandwidthLimit, limit > 0 { limiter = BandwidthLimiter(bytesPerSecond: limit) }
    }

    /// Body bytes received so far by this run.
    public var transferredBytes: Int64 { bytesTransferred }

    /// Final response statuses so far, by code (also after a failure).
    public var responseStatuses: [Int: Int] { statuses }

    /// The current resume data (what a failure would hand back).
    public var resumeData: ResumeData {
        ResumeData(url: url.description, destination: request.destination, partPath: request.partPath, validators: validators,
                   totalLength: totalLength, segments: plan)
    }

    /// Runs the download to completion.
    /// - Throws: ``TransferError`` with resume data (cancellation included: `cancelled`).
    public func run() async throws -> DownloadResult {
        let clock = LoopClock()
        let start = clock.now
        let deadline = ScheduledTimer(on: loop, after: configuration.resourceTimeout) { [weak self] in
            guard let self else { return }
            self.assumeIsolated { $0.expireResource() }
        }
        defer {
            deadline.cancel()
            part?.close()
            part = nil
        }
        do {
            try await waitForBeginDate()
            try openPartFile()
            while true {
                do {
                    if plan.isEmpty { try await fetchFresh() } else { try await fetchRemaining() }
                    break
                } catch let restart as RestartNeeded {
                    restarts += 1
                    guard restarts <= 3 else {
                        throw TransferError(.validatorChanged, "gave up after \(restarts - 1) restarts: \(restart.reason)")
                    }
                    try resetToFresh()
                }
            }
            let digest = try finish()
            return DownloadResult(
                location: request.destination, length: totalLength ?? bytesWritten, bytesTransferred: bytesTransferred, sha256: digest,
                timeToFirstByte: timeToFirstByte, duration: start.duration(to: clock.now), retries: retries, isResumed: isResumed,
                bytesReused: bytesReused, restarts: restarts, statuses: statuses, segments: max(1, plan.count),
                connectionsOpened: connectionsOpened, isRangeFallback: isRangeFallback)
        } catch {
            closeAllConnections()
            var failure = isResourceTimedOut
                ? TransferError(.resourceTimeout, "the download did not finish within \(configuration.resourceTimeout)")
                : TransferError.from(error, doing: "download of \(request.url)")
            if failure.code != .digestMismatch && failure.code != .lengthMismatch && bytesWritten > 0 {
                failure.resumeData = resumeData
                try? part?.synchronizeIfDurable(configuration.isDurable)
            } else {
                // Nothing worth resuming (or bytes that are wrong): leave no partial file behind.
                part?.close()
                part = nil
                try? FileSystem.remove(request.partPath)
            }
            throw failure
        }
    }

    // MARK: Setup

    private func expireResource() {
        isResourceTimedOut = true
        closeAllConnections()
    }

    private func closeAllConnections() {
        for connection in liveConnections.values { connection.close() }
        liveConnections = [:]
    }

    private func waitForBeginDate() async throws {
        var delay = Duration.zero
        if let date = request.earliestBeginDate {
            let now = WallClock.secondsSince1970()
            if date > now { delay = .nanoseconds(Int64((date - now) * 1e9)) }
        }
        if let discretionary = configuration.discretionaryDelay, discretionary > .zero {
            delay += .nanoseconds(Int64.random(in: 0...discretionary.nanoseconds, using: &random))
        }
        if delay > .zero { try await loop.sleep(for: delay) }
    }

    /// Opens the partial file: the one resume data names (if it is still there and long enough), or a new one.
    private func openPartFile() throws {
        if !plan.isEmpty {
            let onDisk = FileSystem.size(of: request.partPath) ?? -1
            let needed = plan.map { $0.nextOffset }.max() ?? 0
            if onDisk >= needed, validators.ifRangeValue != nil {
                part = try DataFile.open(request.partPath, mode: .readWrite)
                bytesReused = bytesWritten
                return
            }
            // The partial file is gone or shorter than the journal says, or nothing guards a resume: start over.
            plan = []
            restarts += 1
        }
        try FileSystem.remove(request.partPath)
        part = try DataFile.open(request.partPath, mode: .createNew)
    }

    private func resetToFresh() throws {
        closeAllConnections()
        plan = []
        pending = []
        validators = Validators()
        totalLength = nil
        bytesReused = 0
        inlineHasher = nil
        try part?.truncate(to: 0)
        url = request.url
    }

    private var bytesWritten: Int64 { plan.reduce(0) { $0 + $1.received } }

    // MARK: Fetching

    private struct RestartNeeded: Error {
        var reason: String
    }

    /// A fresh download: one GET (a probe with `Range: bytes=0-` when splitting), then the plan.
    private func fetchFresh() async throws {
        let isSplitting = request.segments > 1
        var headers = HTTPHeaders()
        if isSplitting { headers.add(name: "Range", value: RangeRequest.from(0).headerValue) }
        let (connection, head) = try await open(headers: headers)
        validators = Validators(headers: head.headers)
        let framing = try HTTPBodyFraming(response: head, requestMethod: "GET")
        switch head.status {
        case 200:
            if isSplitting { isRangeFallback = true }
            if case .length(let length) = framing { totalLength = length }
            plan = [SegmentProgress(first: 0, last: totalLength.map { $0 - 1 }, received: 0)]
            if totalLength == 0 { plan = [] }
            inlineHasher = wantsDigest ? SHA256Hasher() : nil
            if !plan.isEmpty { try await receive(segment: 0, from: connection, head: head, framing: framing) }
            release(connection)
        case 206:
            let range = try checkedContentRange(head, requested: 0, last: nil)
            totalLength = range.completeLength
            plan = Self.split(length: range.completeLength!, segments: request.segments, minimum: request.minimumSegmentSize)
            inlineHasher = wantsDigest && plan.count == 1 ? SHA256Hasher() : nil
            pending = Array(plan.indices.dropFirst())
            try await runWorkers(first: (segment: 0, connection: connection, head: head, framing: framing))
        case 416:
            // `bytes=0-` unsatisfiable: an empty file.
            guard let contentRange = head.headers["Content-Range"].flatMap(ContentRange.init(headerValue:)),
                contentRange.completeLength == 0
            else {
                throw TransferError(.contentRangeMismatch, "416 for bytes=0- without Content-Range bytes */0")
            }
            totalLength = 0
            plan = []
            release(connection)
        default:
            fatalError("open() returns only 2xx and 416")
        }
    }

    /// Continues from resume data: the incomplete segments, guarded by `If-Range`.
    private func fetchRemaining() async throws {
        pending = plan.indices.filter { !plan[$0].isComplete }
        try await runWorkers(first: nil)
    }

    /// Runs up to `connections` workers over the pending segments; `first` is a response already open.
    /// A response already open for a segment (the probe's), handed to the first worker.
    private typealias OpenedResponse = (segment: Int, connection: HTTPClientConnection, head: HTTPResponseHead, framing: HTTPBodyFraming)

    private func runWorkers(first: OpenedResponse?) async throws {
        let workerCount = min(request.connections, pending.count + (first == nil ? 0 : 1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workerCount {
                let opened = worker == 0 ? first : nil
                group.addTask(executorPreference: loop.taskExecutor) {
                    try await self.work(startingWith: opened)
                }
            }
            try await group.waitForAll()
        }
    }

    /// One connection's loop: take a pending segment, fetch it (retrying), repeat.
    private func work(startingWith opened: OpenedResponse?) async throws {
        var connection: HTTPClientConnection?
        var opened = opened
        if let first = opened { pending.insert(first.segment, at: 0) }
        while let segment = pending.first {
            pending.removeFirst()
            var attempt = 0
            var previousDelay: Duration?
            while !plan[segment].isComplete {
                do {
                    if let first = opened {
                        opened = nil
                        // The probe's response: read this segment's share of it, then go on with ranged requests.
                        try await receive(segment: first.segment, from: first.connection, head: first.head, framing: first.framing)
                        if first.connection.isReusable { connection = first.connection } else { release(first.connection) }
                    } else {
                        try await fetch(segment: segment, reusing: &connection)
                    }
                } catch let error as RestartNeeded {
                    throw error
                } catch {
                    let failure = TransferError.from(error, doing: "segment \(segment)")
                    attempt += 1
                    guard failure.isRetryable, !isResourceTimedOut, configuration.retry.allows(attempt: attempt) else { throw failure }
                    retries += 1
                    let delay = configuration.retry.delay(attempt: attempt, previousDelay: previousDelay, using: &random)
                    previousDelay = delay
                    try await loop.sleep(for: delay)
                }
            }
        }
        if let connection { release(connection) }
    }

    /// One ranged request for what remains of `segment`.
    private func fetch(segment: Int, reusing connection: inout HTTPClientConnection?) async throws {
        let progress = plan[segment]
        let rangeRequest: RangeRequest = progress.last.map { .closed(first: progress.nextOffset, last: $0) } ?? .from(progress.nextOffset)
        var headers: HTTPHeaders = ["Range": rangeRequest.headerValue]
        if let ifRange = validators.ifRangeValue { headers.add(name: "If-Range", value: ifRange) }
        let (opened, head) = try await open(headers: headers, reusing: connection)
        connection = nil
        let framing = try HTTPBodyFraming(response: head, requestMethod: "GET")
        switch head.status {
        case 206:
            let range = try checkedContentRange(head, requested: progress.nextOffset, last: progress.last)
            if let totalLength, range.completeLength != totalLength {
                throw RestartNeeded(reason: "the length changed from \(totalLength) to \(range.completeLength.map(String.init) ?? "*")")
            }
            if !validators.matches(Validators(headers: head.headers)) {
                throw RestartNeeded(reason: "the validators changed")
            }
            if totalLength == nil, let complete = range.completeLength {
                totalLength = complete
                plan[segment].last = complete - 1
            }
            try await receive(segment: segment, from: opened, head: head, framing: framing)
        case 200:
            opened.close()
            throw RestartNeeded(reason: "the server answered the range with the whole file (it changed, or ignores If-Range)")
        case 416:
            opened.close()
            let complete = head.headers["Content-Range"].flatMap(ContentRange.init(headerValue:))?.completeLength
            if let complete, complete == totalLength, let last = progress.last, progress.nextOffset > last {
                return
            }
            if let complete, totalLength == nil, plan.count == 1, complete == progress.nextOffset {
                // A single stream of unknown length that had in fact finished.
                totalLength = complete
                plan[segment].last = complete - 1
                return
            }
            throw RestartNeeded(reason: "the server cannot satisfy the remaining range (416)")
        default:
            fatalError("open() returns only 2xx and 416")
        }
        if opened.isReusable { connection = opened } else { release(opened) }
    }

    /// Reads a response body into `segment` at its offsets, stopping at the segment's end.
    private func receive(
        segment: Int, from connection: HTTPClientConnection, head: HTTPResponseHead, framing: HTTPBodyFraming
    ) async throws {
        guard let part else { throw TransferError(.file, "the partial file is not open") }
        let hasher = plan.count == 1 && plan[segment].first == 0 && plan[segment].received == 0 ? inlineHasher : nil
        if hasher == nil { inlineHasher = nil }
        try await connection.readBody(framing: framing, limiter: limiter) { bytes in
            let progress = plan[segment]
            var slice = bytes
            if let last = progress.last {
                let room = last - progress.nextOffset + 1
                if room <= 0 { return false }
                if Int64(slice.count) > room { slice = slice.prefix(Int(room)) }
            }
            var isInterrupted = false
            if let share = interruptAt, let total = totalLength {
                let cut = Int64(Double(total) * share)
                if bytesWritten + Int64(slice.count) >= cut {
                    slice = slice.prefix(Int(max(0, cut - bytesWritten)))
                    isInterrupted = true
                }
            }
            try part.write(slice, at: progress.nextOffset)
            hasher?.update(slice)
            plan[segment].received += Int64(slice.count)
            bytesTransferred += Int64(slice.count)
            if let onProgress {
                onProgress(DownloadProgress(bytesWritten: bytesWritten, bytesExpected: totalLength, bytesTransferred: bytesTransferred))
            }
            if let onCheckpoint, lastCheckpoint.duration(to: LoopClock().now) >= checkpointInterval {
                lastCheckpoint = LoopClock().now
                try part.synchronizeIfDurable(configuration.isDurable)
                onCheckpoint(resumeData)
            }
            if isInterrupted { throw TransferError(.cancelled, "interrupted on purpose at byte \(bytesWritten)") }
            return !plan[segment].isComplete || plan[segment].last == nil
        }
        if plan[segment].last == nil {
            // Read to the end of an unknown-length stream: now the length is known.
            totalLength = plan[segment].nextOffset
            plan[segment].last = plan[segment].nextOffset - 1
            if plan[segment].received == 0 { plan = [] }
        } else if !plan[segment].isComplete {
            throw TransferError(.network, "segment \(segment) ended at byte \(plan[segment].nextOffset) of \(plan[segment].last! + 1)",
                                runtimeCode: RuntimeError.Code.endOfStream.name)
        }
    }

    /// Sends a GET (following redirects) and returns a 2xx or 416 response whose body is still unread.
    private func open(
        headers: HTTPHeaders, reusing reused: HTTPClientConnection? = nil
    ) async throws -> (HTTPClientConnection, HTTPResponseHead) {
        var target = url
        var reused = reused
        for _ in 0...configuration.maximumRedirects {
            try Task.checkCancellation()
            let candidate: HTTPClientConnection
            if let existing = reused, existing.isReusable, existing.origin == HTTPClientConnection.origin(of: target) {
                candidate = existing
            } else {
                reused?.close()
                candidate = try await HTTPClientConnection.connect(to: target, configuration: configuration, on: loop)
                connectionsOpened += 1
            }
            let isReused = reused != nil && candidate === reused
            reused = nil
            let sent = LoopClock().now
            let (connection, head) = try await exchange(on: candidate, isReused: isReused, target: target, headers: headers)
            if timeToFirstByte == nil { timeToFirstByte = sent.duration(to: LoopClock().now) }
            statuses[head.status, default: 0] += 1
            let framing = try HTTPBodyFraming(response: head, requestMethod: "GET")
            switch head.status {
            case 200, 206, 416:
                if head.status == 416 { _ = try await connection.readBody(framing: framing, limit: 4096) }
                url = target
                return (connection, head)
            case 301, 302, 303, 307, 308:
                guard let location = head.headers["Location"] else {
                    throw TransferError(.httpStatus, "\(head.status) from \(target) without Location", status: head.status)
                }
                _ = try await connection.readBody(framing: framing, limit: 64 * 1024)
                if !connection.isReusable { release(connection) } else { reused = connection }
                do {
                    target = try target.resolving(location)
                } catch {
                    throw TransferError(.httpStatus, "bad redirect: \(error)", status: head.status)
                }
            default:
                let body = try? await connection.readBody(framing: framing, limit: 512)
                release(connection)
                let text = String(decoding: body ?? [], as: UTF8.self).filter { !$0.isNewline }.prefix(120)
                throw TransferError(.httpStatus, "\(head.status) \(head.reason) from \(target)\(text.isEmpty ? "" : ": \(text)")",
                                    status: head.status)
            }
        }
        throw TransferError(.tooManyRedirects, "more than \(configuration.maximumRedirects) redirects from \(request.url)")
    }

    /// Sends the GET and reads the response head. On a kept-alive connection the server had already
    /// closed (nothing came back), the GET is sent once more on a new connection (RFC 9112 §9.3.1).
    private func exchange(
        on connection: HTTPClientConnection, isReused: Bool, target: HTTPURL, headers: HTTPHeaders
    ) async throws -> (HTTPClientConnection, HTTPResponseHead) {
        liveConnections[ObjectIdentifier(connection)] = connection
        do {
            try await connection.send(connection.requestHead(method: "GET", url: target, headers: headers))
            return (connection, try await connection.readResponseHead())
        } catch let error as TransferError where isReused && error.code == .network
            && (connection.wasClosedBeforeResponse || error.runtimeCode == RuntimeError.Code.brokenPipe.name
                || error.runtimeCode == RuntimeError.Code.connectionReset.name)
        {
            release(connection)
            let fresh = try await HTTPClientConnection.connect(to: target, configuration: configuration, on: loop)
            connectionsOpened += 1
            return try await exchange(on: fresh, isReused: false, target: target, headers: headers)
        }
    }

    private func release(_ connection: HTTPClientConnection) {
        liveConnections[ObjectIdentifier(connection)] = nil
        connection.close()
    }

    /// Checks a 206's `Content-Range` against what was asked: same start, same end (or the file's end for
    /// an open range), and a complete length.
    private func checkedContentRange(_ head: HTTPResponseHead, requested first: Int64, last: Int64?) throws -> ContentRange {
        guard let value = head.headers["Content-Range"], let range = ContentRange(headerValue: value), let got = range.range,
            let complete = range.completeLength
        else {
            let value = head.headers["Content-Range"]?.prefix(80) ?? "none"
            throw TransferError(.contentRangeMismatch, "206 without a valid Content-Range (\(value))")
        }
        let expectedLast = last ?? (complete - 1)
        guard got.first == first, got.last == min(expectedLast, complete - 1) else {
            throw TransferError(.contentRangeMismatch, "asked for bytes \(first)-\(last.map(String.init) ?? ""), got \(value)")
        }
        if case .length(let length) = try HTTPBodyFraming(response: head, requestMethod: "GET"), length != got.count {
            throw TransferError(.contentRangeMismatch, "Content-Range \(value) but Content-Length \(length)")
        }
        return range
    }

    // MARK: Finishing

    private var wantsDigest: Bool { request.expectedSHA256 != nil || request.computesDigest }

    /// Checks the length and digest, then renames the partial file into place.
    private func finish() throws -> [UInt8]? {
        guard let part else { throw TransferError(.file, "the partial file is not open") }
        let length = totalLength ?? bytesWritten
        if let incomplete = plan.firstIndex(where: { !$0.isComplete }) {
            throw TransferError(.lengthMismatch, "segment \(incomplete) is incomplete")
        }
        guard bytesWritten == length else {
            throw TransferError(.lengthMismatch, "received \(bytesWritten) bytes, expected \(length)")
        }
        if try part.size() != length { try part.truncate(to: length) }
        var digest: [UInt8]?
        if wantsDigest {
            digest = try inlineHasher?.finalize() ?? Self.digest(of: part, length: length)
            if let expected = request.expectedSHA256, digest != expected {
                throw TransferError(.digestMismatch, "SHA-256 \(Crypto.hex(digest!)) is not the expected \(Crypto.hex(expected))")
            }
        }
        try part.synchronizeIfDurable(configuration.isDurable)
        part.close()
        try FileSystem.rename(request.partPath, to: request.destination)
        return digest
    }

    static func digest(of file: DataFile, length: Int64) throws -> [UInt8] {
        let hasher = SHA256Hasher()
        var buffer: [UInt8] = []
        var offset: Int64 = 0
        while offset < length {
            try file.read(into: &buffer, count: Int(min(4 * 1024 * 1024, length - offset)), at: offset)
            if buffer.isEmpty { break }
            hasher.update(buffer)
            offset += Int64(buffer.count)
        }
        return hasher.finalize()
    }

    /// Splits `length` bytes into at most `segments` ranges of at least `minimum` bytes each.
    public static func split(length: Int64, segments: Int, minimum: Int64) -> [SegmentProgress] {
        guard length > 0 else { return [] }
        let count = Int(max(1, min(Int64(segments), length / max(1, minimum))))
        let size = length / Int64(count)
        return (0..<count).map { index in
            let first = Int64(index) * size
            let last = index == count - 1 ? length - 1 : first + size - 1
            return SegmentProgress(first: first, last: last)
        }
    }
}

extension DataFile {
    func synchronizeIfDurable(_ isDurable: Bool) throws {
        if isDurable { try synchronize() }
    }
}

import Crypto
import HTTP1
import Runtime

/// A download as an actor on one loop: one stream, or ranges over several connections, into a partial
/// file beside the destination; on success the file is renamed into place before the result is
/// returned; on failure the partial file stays and the thrown ``TransferError`` carries ``ResumeData``.
///
/// Resuming sends `Range` with `If-Range`; a 200 answer (the file changed) or changed validators restart
/// cleanly from zero, and a 416 for a complete file finishes it. Ranged downloads probe with `bytes=0-`:
/// a 206 gives the length and the plan, a 200 means the server ignores ranges, and that response is
/// then read as the single stream. Failed segments retry from where they stopped, as each segment's connection
/// lifecycle decides (``TransferRetries``).
package actor DownloadTask {
    package nonisolated let loop: EventLoop
    package nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    package nonisolated let request: DownloadRequest
    let configuration: TransferConfiguration
    let onProgress: (@Sendable (DownloadProgress) -> Void)?
    let onCheckpoint: (@Sendable (ResumeData) -> Void)?
    let checkpointInterval: Duration
    /// Simulated interruption: stop once this share of the file is on disk (see `init`).
    let interruptAt: Double?

    var url: HTTPURL
    var validators = Validators()
    var totalLength: Int64?
    var plan: [SegmentProgress] = []
    var pending: [Int] = []
    var part: DataFile?
    /// Hashes as bytes arrive when one stream writes the file from byte 0 in order.
    var inlineHasher: SHA256Hasher?
    var limiter: BandwidthLimiter?
    var liveConnections: [ObjectIdentifier: HTTPClientConnection] = [:]
    var isResourceTimedOut = false
    /// The attempts of the segments being fetched: their lifecycles decide retries, backoff and give-up, and
    /// the resource deadline stops each.
    var segmentAttempts: [Int: TransferRetries] = [:]
    /// When ``run()`` began: lifecycle events are reported as time since then.
    var startedAt = LoopClock().now
    var random = SeededRandomNumberGenerator(seed: nil)
    var lastCheckpoint = LoopClock().now

    var bytesTransferred: Int64 = 0
    var bytesReused: Int64 = 0
    var timeToFirstByte: Duration?
    var retries = 0
    var restarts = 0
    var statuses: [Int: Int] = [:]
    var connectionsOpened = 0
    var isRangeFallback = false
    var isResumed = false

    /// - Parameters:
    ///   - resumeData: continue an earlier attempt (`downloadTask(withResumeData:)`).
    ///   - onProgress: called on the loop after each write.
    ///   - onCheckpoint: called with fresh resume data at most every `checkpointInterval` (for a journal).
    ///   - interruptAt: for load simulations: once this share (0–1) of the file is on disk, stop exactly
    ///     there, as if the process were killed, and fail with `cancelled` and resume data.
    package init(
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
        // validators (If-Range) decide whether the bytes on disk still belong to what it names. Resume data
        // of another download (another URL asked for, another destination or partial file) is not applied.
        if let resumeData, resumeData.belongs(to: request.url, destination: request.destination),
            resumeData.partPath == request.partPath
        {
            validators = resumeData.validators
            totalLength = resumeData.totalLength
            plan = resumeData.segments
            isResumed = true
        }
        if let limit = configuration.bandwidthLimit, limit > 0 { limiter = BandwidthLimiter(bytesPerSecond: limit) }
    }

    /// Body bytes received so far by this run.
    package var transferredBytes: Int64 { bytesTransferred }

    /// Final response statuses so far, by code (also after a failure).
    package var responseStatuses: [Int: Int] { statuses }

    /// The current resume data (what a failure would hand back).
    package var resumeData: ResumeData {
        ResumeData(url: url.description, requestURL: request.url.description, destination: request.destination, partPath: request.partPath, validators: validators,
                   totalLength: totalLength, segments: plan)
    }

    /// Runs the download to completion.
    /// - Throws: ``TransferError`` with resume data (cancellation included: `cancelled`).
    package func run() async throws -> DownloadResult {
        let clock = LoopClock()
        let start = clock.now
        startedAt = start
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
                : TransferError.from(error, doing: "download of \(request.url.redactedDescription)")
            if failure.code != .digestMismatch && failure.code != .lengthMismatch && bytesWritten > 0 {
                failure.resumeData = resumeData
                // Best effort: the failure being thrown is the one to report; an unsynced part file is still resumable.
                try? part?.synchronizeIfDurable(configuration.isDurable)
            } else {
                // Nothing worth resuming (or bytes that are wrong): leave no partial file behind.
                part?.close()
                part = nil
                // Best effort on a path that is already failing: the failure thrown below is the one to report.
                try? FileSystem.remove(request.partPath)
            }
            throw failure
        }
    }

    // MARK: Setup

    /// The resource deadline: every segment's lifecycle stops (nothing is tried again) and the requests in flight
    /// are cut short.
    func expireResource() {
        isResourceTimedOut = true
        let now = elapsed
        for segment in segmentAttempts.keys { segmentAttempts[segment]?.stop(at: now) }
        closeAllConnections()
    }

    /// Time since ``run()`` began, for lifecycle events.
    var elapsed: Duration { startedAt.duration(to: LoopClock().now) }

    func closeAllConnections() {
        for connection in liveConnections.values { connection.close() }
        liveConnections = [:]
    }

    private func waitForBeginDate() async throws {
        var delay = Duration.zero
        if let date = request.earliestBeginDate {
            let now = WallClock.secondsSince1970()
            // The date may come from a journal: capped at a year so a crafted 1e300 cannot trap Int64(_:).
            if date > now { delay = .nanoseconds(Int64(min(date - now, 365 * 86_400) * 1e9)) }
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

    /// Bytes on disk (saturating: a plan from resume data is bounded when decoded, see ``ResumeData``).
    var bytesWritten: Int64 {
        plan.reduce(0) { sum, segment in
            let (total, isOverflow) = sum.addingReportingOverflow(segment.received)
            return isOverflow ? .max : total
        }
    }
}

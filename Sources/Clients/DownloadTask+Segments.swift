import Crypto
import HTTP1
import Runtime

// The segment plan and its workers: the fresh request (the probe when splitting), the resumed segments, the
// worker loops that fetch them over up to `connections` connections, and the body reader that writes each
// response at its segment's offsets.
extension DownloadTask {
    struct RestartNeeded: Error {
        var reason: String
    }

    /// A fresh download: one GET (a probe with `Range: bytes=0-` when splitting), then the plan.
    func fetchFresh() async throws {
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
    func fetchRemaining() async throws {
        pending = plan.indices.filter { !plan[$0].isComplete }
        try await runWorkers(first: nil)
    }

    /// Runs up to `connections` workers over the pending segments; `first` is a response already open.
    /// A response already open for a segment (the probe's), handed to the first worker.
    typealias OpenedResponse = (segment: Int, connection: HTTPClientConnection, head: HTTPResponseHead, framing: HTTPBodyFraming)

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

    /// One connection's loop: take a pending segment, fetch it (retrying as the segment's lifecycle decides),
    /// repeat.
    private func work(startingWith opened: OpenedResponse?) async throws {
        var connection: HTTPClientConnection?
        var opened = opened
        if let first = opened { pending.insert(first.segment, at: 0) }
        while let segment = pending.first {
            pending.removeFirst()
            try await fetchWithRetries(segment: segment, opened: &opened, connection: &connection)
        }
        if let connection { release(connection) }
    }

    /// Fetches what remains of `segment`: the segment's ``TransferRetries`` decides each attempt and backoff, and
    /// the resource deadline stops it (``expireResource()``); this only does the requests and the sleeping.
    private func fetchWithRetries(
        segment: Int, opened: inout OpenedResponse?, connection: inout HTTPClientConnection?
    ) async throws {
        guard !plan[segment].isComplete else { return }
        segmentAttempts[segment] = TransferRetries(policy: configuration.retry)
        defer { segmentAttempts[segment] = nil }
        if isResourceTimedOut { segmentAttempts[segment]?.stop(at: elapsed) }
        var step = segmentAttempts[segment]!.begin(at: elapsed, using: &random)
        while true {
            switch step {
            case .attempt:
                do {
                    if let first = opened {
                        opened = nil
                        // The probe's response: read this segment's share of it, then go on with ranged requests.
                        try await receive(segment: first.segment, from: first.connection, head: first.head, framing: first.framing)
                        if first.connection.isReusable { connection = first.connection } else { release(first.connection) }
                    } else {
                        try await fetch(segment: segment, reusing: &connection)
                    }
                    if plan[segment].isComplete {
                        segmentAttempts[segment]?.attemptSucceeded(at: elapsed)
                        return
                    }
                    // A response that ended the segment early without an error: ask again (the same attempt).
                } catch let error as RestartNeeded {
                    throw error
                } catch {
                    let failure = TransferError.from(error, doing: "segment \(segment)")
                    step = segmentAttempts[segment]!.attemptFailed(failure, at: elapsed, using: &random)
                }
            case .wait(let delay):
                retries += 1
                let sleep = TransferRetries.sleep(for: delay, at: elapsed, deadline: configuration.resourceTimeout)
                try await loop.sleep(for: sleep.duration)
                if sleep.endsAtDeadline { expireResource() }
                step = segmentAttempts[segment]!.backoffElapsed(at: elapsed, using: &random)
            case .end:
                // Given up (its last failure), or stopped by the resource deadline (run() reports that).
                throw segmentAttempts[segment]?.lastFailure
                    ?? TransferError(.resourceTimeout, "segment \(segment) was stopped before its first request")
            }
        }
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
    func receive(
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

    /// Splits `length` bytes into at most `segments` ranges of at least `minimum` bytes each.
    package static func split(length: Int64, segments: Int, minimum: Int64) -> [SegmentProgress] {
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

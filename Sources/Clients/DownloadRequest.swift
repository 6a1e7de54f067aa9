import HTTP1

/// What to download and how: the parameters of `downloadTask(with:)`, plus aria2-style splitting.
package struct DownloadRequest: Sendable {
    package var url: HTTPURL
    /// Where the file ends up. It appears there only when complete (renamed from ``partPath``).
    package var destination: String
    /// Ranges to split the file into (aria2 `-s`); 1 is a single stream.
    package var segments: Int
    /// Connections used at once (aria2 `-x`); at most `segments`.
    package var connections: Int
    /// No segment is smaller than this (aria2 `-k`).
    package var minimumSegmentSize: Int64
    /// Verify the finished file against this SHA-256; a mismatch fails with `digest_mismatch`.
    package var expectedSHA256: [UInt8]?
    /// Compute the finished file's SHA-256 even when none is expected (for reports and the oracle).
    package var computesDigest: Bool
    /// `earliestBeginDate`: do not start before this wall-clock time (seconds since 1970).
    package var earliestBeginDate: Double?

    package init(
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
    package var partPath: String { destination + ".wsload-part" }
}

/// `didWriteData`: how far a download is.
package struct DownloadProgress: Sendable, Hashable {
    /// Bytes on disk, including those kept from an earlier attempt.
    package var bytesWritten: Int64
    /// The file's length once known (`totalBytesExpectedToWrite`).
    package var bytesExpected: Int64?
    /// Bytes received over the network by this run.
    package var bytesTransferred: Int64
}

/// A finished download (`didFinishDownloadingTo`): the file is already at ``location``.
package struct DownloadResult: Sendable {
    package var location: String
    package var length: Int64
    /// Body bytes received by this run (less than `length` after a resume).
    package var bytesTransferred: Int64
    package var sha256: [UInt8]?
    /// From the first request to its response head.
    package var timeToFirstByte: Duration?
    package var duration: Duration
    /// Requests repeated after a failure.
    package var retries: Int
    /// Whether it continued from resume data (and how many bytes that saved).
    package var isResumed: Bool
    package var bytesReused: Int64
    /// Times it started over because the file changed or the server would not resume.
    package var restarts: Int
    /// Final response statuses seen, by code.
    package var statuses: [Int: Int]
    /// Segments and connections actually used (1 and 1 when the server ignored ranges).
    package var segments: Int
    package var connectionsOpened: Int
    package var isRangeFallback: Bool
}

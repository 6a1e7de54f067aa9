import HTTP1

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

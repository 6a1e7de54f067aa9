import HTTP1
import JSON

/// One byte range of a download and how much of it is on disk: `first + received` is where it continues.
package struct SegmentProgress: Sendable, Hashable {
    package var first: Int64
    /// The last byte (inclusive); nil while the length is unknown (a single stream without Content-Length).
    package var last: Int64?
    package var received: Int64

    package init(first: Int64, last: Int64?, received: Int64 = 0) {
        self.first = first
        self.last = last
        self.received = received
    }

    package var isComplete: Bool { last.map { first + received > $0 } ?? false }
    /// Where the next byte goes.
    package var nextOffset: Int64 { first + received }
}

/// What a failed or interrupted download needs to continue without refetching what is on disk — the
/// counterpart of `NSURLSessionDownloadTaskResumeData`: the URL, the validators that guard the resume
/// (`If-Range`), the partial file and which ranges of it are valid.
package struct ResumeData: Sendable, Hashable {
    /// The URL after redirects.
    package var url: String
    /// The URL the download was asked for (before redirects); nil in resume data written before it was kept.
    /// Resume data for another URL is not applied to a download (its bytes would belong to another file).
    package var requestURL: String?
    package var destination: String
    /// The partial file beside the destination.
    package var partPath: String
    package var validators: Validators
    package var totalLength: Int64?
    package var segments: [SegmentProgress]

    /// Segments a resume file may hold: more than any download plans (``DownloadRequest`` allows 1,024).
    package static let maximumSegments = 4096

    package init(
        url: String, requestURL: String? = nil, destination: String, partPath: String, validators: Validators, totalLength: Int64?,
        segments: [SegmentProgress]
    ) {
        self.url = url
        self.requestURL = requestURL
        self.destination = destination
        self.partPath = partPath
        self.validators = validators
        self.totalLength = totalLength
        self.segments = segments
    }

    /// Bytes already on disk that a resume keeps (saturating: decoded resume data keeps the sum below 2^53).
    package var bytesOnDisk: Int64 {
        segments.reduce(0) { sum, segment in
            let (total, isOverflow) = sum.addingReportingOverflow(segment.received)
            return isOverflow ? .max : total
        }
    }

    /// Whether this resume data belongs to a download of `url` into `destination`: resume data for another
    /// resource must not be applied (its bytes would be taken for this one's, guarded only by validators that
    /// may match by chance, such as a shared Last-Modified). The resource is the origin and path: the query may
    /// differ (a signed URL renewed, a fault-injection parameter), and If-Range still guards the content.
    /// Without ``requestURL`` (older resume data) the URL after redirects stands for it.
    package func belongs(to url: HTTPURL, destination: String) -> Bool {
        guard self.destination == destination, let recorded = try? HTTPURL(requestURL ?? self.url) else { return false }  // unparsable: not this one
        return recorded.resourceIdentity == url.resourceIdentity
    }

    /// Whether a server can be asked for the rest: validators to guard `If-Range` and a byte to continue from.
    package var isResumable: Bool { validators.ifRangeValue != nil && bytesOnDisk > 0 }

    package var json: JSONValue {
        var object: JSONObject = [
            "version": 1, "url": .string(url), "destination": .string(destination), "partPath": .string(partPath),
        ]
        if let requestURL { object["requestURL"] = .string(requestURL) }
        if let tag = validators.entityTag { object["etag"] = .string(tag.description) }
        if let date = validators.lastModified { object["lastModified"] = .string(date) }
        if let totalLength { object["totalLength"] = JSONValue(totalLength) }
        object["segments"] = .array(segments.map { segment in
            [JSONValue(segment.first), segment.last.map { JSONValue($0) } ?? .null, JSONValue(segment.received)]
        })
        return .object(object)
    }

    /// The resume data as JSON bytes (what `wsload download` keeps beside a partial file).
    package func serialized() -> [UInt8] { Array(json.formatted(pretty: false).utf8) }

    /// Why serialized resume data could not be read back.
    package struct DecodingError: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    package init(json: JSONValue) throws(DecodingError) {
        func string(_ key: String) throws(DecodingError) -> String {
            guard let value = json[key]?.stringValue else {
                throw DecodingError(description: "resume data: \"\(key)\" is missing or not a string")
            }
            return value
        }
        func integer(_ value: JSONValue?, _ what: String) throws(DecodingError) -> Int64 {
            guard let number = value?.numberValue, number >= 0, number < 9.0e15, number.rounded() == number else {
                throw DecodingError(description: "resume data: \(what) is not a non-negative integer")
            }
            return Int64(number)
        }
        guard json["version"]?.integerValue == 1 else { throw DecodingError(description: "resume data: unknown version") }
        url = try string("url")
        requestURL = json["requestURL"]?.stringValue
        destination = try string("destination")
        partPath = try string("partPath")
        validators = Validators(entityTag: json["etag"]?.stringValue.flatMap(EntityTag.init(headerValue:)),
                                lastModified: json["lastModified"]?.stringValue)
        totalLength = json["totalLength"].map { _ in () } == nil ? nil : try integer(json["totalLength"], "totalLength")
        guard let list = json["segments"]?.arrayValue else { throw DecodingError(description: "resume data: \"segments\" is missing") }
        guard list.count <= Self.maximumSegments else {
            throw DecodingError(description: "resume data: \(list.count) segments, more than \(Self.maximumSegments)")
        }
        var segments: [SegmentProgress] = []
        // Each value is below 9e15 and there are at most 4,096 of them: sums below stay far from Int64's limit,
        // but a file cannot hold more than 9e15 bytes, so their total is refused beyond that.
        var total: Int64 = 0
        for (index, entry) in list.enumerated() {
            guard let triple = entry.arrayValue, triple.count == 3 else {
                throw DecodingError(description: "resume data: segments[\(index)] is not [first, last, received]")
            }
            let first = try integer(triple[0], "segments[\(index)][0]")
            let last: Int64? = triple[1] == .null ? nil : try integer(triple[1], "segments[\(index)][1]")
            let received = try integer(triple[2], "segments[\(index)][2]")
            if let last, last < first || received > last - first + 1 {
                throw DecodingError(description: "resume data: segments[\(index)] is inconsistent")
            }
            if let totalLength, first > totalLength || (last.map { $0 >= totalLength } ?? false) {
                throw DecodingError(description: "resume data: segments[\(index)] lies beyond totalLength \(totalLength)")
            }
            let (sum, isOverflow) = total.addingReportingOverflow(received)
            guard !isOverflow, sum < 9_000_000_000_000_000, first.addingReportingOverflow(received).partialValue < 9_000_000_000_000_000
            else {
                throw DecodingError(description: "resume data: segments[\(index)]: the bytes received add up to more than a file holds")
            }
            total = sum
            segments.append(SegmentProgress(first: first, last: last, received: received))
        }
        self.segments = segments
    }

    package init(serialized bytes: [UInt8]) throws(DecodingError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw DecodingError(description: "resume data: \(error)")
        }
        try self.init(json: value)
    }
}

import Crypto

/// Splits a `multipart/form-data` body (RFC 7578, RFC 2046 §5.1) into parts as it streams past, for the upload
/// sink's answer: each part's name, file name, size and SHA-256, with no copy of the body kept.
///
/// Memory is bounded whatever the peer sends: a boundary is at most 70 bytes (§5.1.1), so at most the
/// delimiter's length of body is held back between chunks; a part's header block is capped at
/// ``maximumHeaderSize``; at most ``maximumParts`` parts are reported. The delimiter search is linear in the
/// body (each byte is compared against a needle of at most 74 bytes).
struct MultipartScanner {
    /// One finished part.
    struct Part: Equatable {
        var name: String
        var fileName: String?
        var bytes: Int64
        var sha256: String
    }

    private enum State {
        /// Before the first delimiter.
        case preamble
        /// Just after a delimiter: `--` (the last) or CRLF (a part follows).
        case afterDelimiter
        case headers
        case body
        /// After the closing delimiter, or once the body stopped making sense: the rest is ignored.
        case ignoring
    }

    static let maximumBoundaryLength = 70
    static let maximumHeaderSize = 8 * 1024
    static let maximumParts = 1000

    /// `CRLF--boundary`.
    private let delimiter: [UInt8]
    private var state = State.preamble
    /// Bytes not yet decided on (a possible delimiter prefix, a header block in progress).
    private var pending: [UInt8]
    private var current: PartInProgress?
    /// How much of the header block in progress was searched for its end already (a trickled block is then
    /// searched only in its new bytes, not again from its start on every feed).
    private var headerBytesSearched = 0
    /// Bytes compared against a header block's end so far, for tests: stays linear in the body however it is fed.
    private(set) var headerSearchWork = 0
    private(set) var parts: [Part] = []
    /// Bytes held back for the next chunk (bounded by the delimiter or the header block limit).
    var pendingCount: Int { pending.count }

    /// - Parameter boundary: from ``boundary(contentType:)`` (1…70 bytes).
    init(boundary: String) {
        delimiter = [13, 10, 45, 45] + Array(boundary.utf8)
        // The body may open with the delimiter itself: a virtual CRLF before it makes every delimiter alike.
        pending = [13, 10]
    }

    /// The `boundary` parameter of a `multipart/form-data` content type: nil when it is not multipart.
    /// - Throws: when the boundary is empty or longer than 70 bytes (RFC 2046 §5.1.1).
    static func boundary(contentType: String) throws(MultipartError) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingCharacters(in: " ").lowercased() == "boundary" {
                var value = pair[1].trimmingCharacters(in: " ")
                if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                guard !value.isEmpty, value.utf8.count <= maximumBoundaryLength else {
                    throw MultipartError(reason: "boundary of \(value.utf8.count) bytes (1 to \(maximumBoundaryLength), RFC 2046 §5.1.1)")
                }
                return value
            }
        }
        throw MultipartError(reason: "multipart/form-data without a boundary")
    }

    /// Scans the next bytes of the body.
    mutating func feed(_ bytes: ArraySlice<UInt8>) {
        if case .ignoring = state { return }
        pending.append(contentsOf: bytes)
        var cursor = 0
        scanning: while true {
            switch state {
            case .preamble, .body:
                let isBody = if case .body = state { true } else { false }
                if let at = Self.find(delimiter, in: pending, from: cursor) {
                    if isBody { current?.consume(pending[cursor..<at]) }
                    cursor = at + delimiter.count
                    state = .afterDelimiter
                } else {
                    // Keep what could still be the start of a delimiter.
                    let keep = max(cursor, pending.count - (delimiter.count - 1))
                    if isBody { current?.consume(pending[cursor..<keep]) }
                    cursor = keep
                    break scanning
                }
            case .afterDelimiter:
                guard pending.count - cursor >= 2 else { break scanning }
                finishPart()
                let next = (pending[cursor], pending[cursor + 1])
                cursor += 2
                state = next == (45, 45) ? .ignoring : next == (13, 10) ? .headers : .ignoring
                headerBytesSearched = 0
            case .headers:
                // CRLFCRLF may straddle the old and the new bytes: look again at the last 3 searched.
                let from = cursor + max(0, headerBytesSearched - 3)
                headerSearchWork += pending.count - from
                if let end = Self.find([13, 10, 13, 10], in: pending, from: from) {
                    startPart(headers: String(decoding: pending[cursor..<end], as: UTF8.self))
                    cursor = end + 4
                    state = .body
                } else if pending.count - cursor > Self.maximumHeaderSize {
                    state = .ignoring
                } else {
                    headerBytesSearched = pending.count - cursor
                    break scanning
                }
            case .ignoring:
                cursor = pending.count
                break scanning
            }
        }
        pending.removeFirst(cursor)
        if case .ignoring = state { pending = [] }
    }

    private mutating func startPart(headers: String) {
        guard parts.count < Self.maximumParts else {
            state = .ignoring
            return
        }
        var name = ""
        var fileName: String?
        for line in headers.split(separator: "\r\n") where line.lowercased().hasPrefix("content-disposition:") {
            name = Self.parameter("name", in: line) ?? ""
            fileName = Self.parameter("filename", in: line)
        }
        current = PartInProgress(name: name, fileName: fileName)
    }

    private mutating func finishPart() {
        guard let part = current else { return }
        parts.append(Part(name: part.name, fileName: part.fileName, bytes: part.bytes, sha256: Crypto.hex(part.hasher.finalize())))
        current = nil
    }

    private static func parameter(_ key: String, in line: Substring) -> String? {
        for piece in line.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingCharacters(in: " ") == key {
                var value = pair[1].trimmingCharacters(in: " ")
                if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                return value
            }
        }
        return nil
    }

    /// The first `needle` in `haystack` at or after `start`: compares at most `needle.count` bytes per position.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, start >= 0 else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index] == first && haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}

/// The part being scanned: its names, and its size and digest so far.
private final class PartInProgress {
    let name: String
    let fileName: String?
    private(set) var bytes: Int64 = 0
    let hasher = SHA256Hasher()

    init(name: String, fileName: String?) {
        self.name = name
        self.fileName = fileName
    }

    func consume(_ slice: ArraySlice<UInt8>) {
        guard !slice.isEmpty else { return }
        bytes &+= Int64(slice.count)
        hasher.update(slice)
    }
}

/// A `multipart/form-data` content type the upload sink refuses (400, naming `Content-Type`).
struct MultipartError: Error, CustomStringConvertible {
    var reason: String
    var description: String { "Content-Type: \(reason)" }
}

/// `text` as a JSON string literal (quotes, backslashes and control characters escaped), for answers that
/// carry names a client chose.
func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

extension Substring {
    func trimmingCharacters(in characters: String) -> String {
        var slice = self
        while let first = slice.first, characters.contains(first) { slice.removeFirst() }
        while let last = slice.last, characters.contains(last) { slice.removeLast() }
        return String(slice)
    }
}

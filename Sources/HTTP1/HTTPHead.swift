/// A parsed HTTP/1.1 response status line and header fields.
public struct HTTPResponseHead: Sendable, Hashable {
    public var version: String
    public var status: Int
    public var reason: String
    public var headers: HTTPHeaders

    public init(version: String = "HTTP/1.1", status: Int, reason: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers
    }

    /// The status line and headers as wire bytes, ending with the blank line.
    public func serialized() -> [UInt8] {
        var text = "\(version) \(status) \(reason)\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }
}

/// A parsed HTTP/1.1 request line and header fields.
public struct HTTPRequestHead: Sendable, Hashable {
    public var method: String
    public var target: String
    public var version: String
    public var headers: HTTPHeaders

    public init(method: String, target: String, version: String = "HTTP/1.1", headers: HTTPHeaders = HTTPHeaders()) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// The request line and headers as wire bytes, ending with the blank line.
    public func serialized() -> [UInt8] {
        var text = "\(method) \(target) \(version)\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }
}

/// Why a message head was rejected, and where: `offset` is the byte offset in the head.
public struct HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    public var offset: Int
    public var reason: String

    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "HTTP head, byte \(offset): \(reason)" }
}

/// Incremental parser for an HTTP/1.1 message head (start line + fields + blank line).
///
/// Feed it the bytes received so far; it answers `nil` until the blank line arrives. Limits apply
/// before buffering grows past them: a head larger than `maximumHeadSize` or with more than
/// `maximumHeaderCount` fields is an error, as are obsolete line folding, bare LF line ends,
/// and field names that are not tokens.
public struct HTTPHeadParser: Sendable {
    public var maximumHeadSize: Int
    public var maximumHeaderCount: Int
    /// Where the search for the blank line resumes, so re-feeding a growing buffer stays linear.
    private var scanOffset = 0

    public init(maximumHeadSize: Int = 16 * 1024, maximumHeaderCount: Int = 128) {
        self.maximumHeadSize = maximumHeadSize
        self.maximumHeaderCount = maximumHeaderCount
    }

    /// Looks for a complete head at the start of `buffer`.
    /// - Returns: the head's lines and its length including the blank line, or `nil` for more data.
    private mutating func headLength(in buffer: [UInt8]) throws(HTTPParseError) -> Int? {
        var index = max(0, scanOffset - 3)
        let limit = min(buffer.count, maximumHeadSize)
        while index + 3 < limit {
            if buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
                scanOffset = 0
                return index + 4
            }
            index += 1
        }
        scanOffset = limit
        if buffer.count >= maximumHeadSize {
            throw HTTPParseError(offset: maximumHeadSize, reason: "head exceeds \(maximumHeadSize) bytes without ending")
        }
        return nil
    }

    /// Parses a response head from the start of `buffer`; `nil` means more bytes are needed.
    /// - Returns: the head and how many bytes of `buffer` it used (what follows is body or frames).
    public mutating func parseResponse(_ buffer: [UInt8]) throws(HTTPParseError) -> (head: HTTPResponseHead, length: Int)? {
        guard let length = try headLength(in: buffer) else { return nil }
        let (startLine, headers) = try parseLines(buffer[0..<length])
        let parts = startLine.text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1.") && parts[0].count == 8 else {
            throw HTTPParseError(offset: 0, reason: "status line \"\(startLine.text.prefix(64))\" is not HTTP/1.x")
        }
        guard parts[1].count == 3, let status = Int(parts[1]), (100...999).contains(status) else {
            throw HTTPParseError(offset: parts[0].count + 1, reason: "status code \"\(parts[1].prefix(16))\" is not three digits")
        }
        let reason = parts.count > 2 ? String(parts[2]) : ""
        return (HTTPResponseHead(version: String(parts[0]), status: status, reason: reason, headers: headers), length)
    }

    /// Parses a request head from the start of `buffer`; `nil` means more bytes are needed.
    public mutating func parseRequest(_ buffer: [UInt8]) throws(HTTPParseError) -> (head: HTTPRequestHead, length: Int)? {
        guard let length = try headLength(in: buffer) else { return nil }
        let (startLine, headers) = try parseLines(buffer[0..<length])
        let parts = startLine.text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].utf8.allSatisfy(isTokenCharacter), !parts[1].isEmpty,
            parts[2].hasPrefix("HTTP/1.") && parts[2].count == 8
        else {
            throw HTTPParseError(offset: 0, reason: "request line \"\(startLine.text.prefix(64))\" is not METHOD TARGET HTTP/1.x")
        }
        // RFC 9112 §3.2: a request-target has no whitespace or control characters (a tab or NUL in it would
        // reach paths and file names).
        if let bad = parts[1].utf8.firstIndex(where: { $0 < 0x21 || $0 == 0x7F }) {
            let offset = parts[0].utf8.count + 1 + parts[1].utf8.distance(from: parts[1].utf8.startIndex, to: bad)
            throw HTTPParseError(offset: offset, reason: "control character in the request target")
        }
        return (HTTPRequestHead(method: String(parts[0]), target: String(parts[1]), version: String(parts[2]), headers: headers),
                length)
    }

    private func parseLines(_ head: ArraySlice<UInt8>) throws(HTTPParseError) -> (startLine: (text: String, offset: Int), headers: HTTPHeaders) {
        var lines: [(bytes: ArraySlice<UInt8>, offset: Int)] = []
        var lineStart = head.startIndex
        var index = head.startIndex
        // The head ends in CRLF CRLF; split on CRLF and reject a bare LF anywhere.
        while index < head.endIndex {
            if head[index] == 10 {
                guard index > lineStart || index > head.startIndex, head[index - 1] == 13 else {
                    throw HTTPParseError(offset: index, reason: "bare LF line ending")
                }
                lines.append((head[lineStart..<(index - 1)], lineStart))
                lineStart = index + 1
            }
            index += 1
        }
        guard let startLine = lines.first, !startLine.bytes.isEmpty else {
            throw HTTPParseError(offset: 0, reason: "empty start line")
        }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() where !line.bytes.isEmpty {
            guard headers.fields.count < maximumHeaderCount else {
                throw HTTPParseError(offset: line.offset, reason: "more than \(maximumHeaderCount) header fields")
            }
            if line.bytes.first == 32 || line.bytes.first == 9 {
                throw HTTPParseError(offset: line.offset, reason: "obsolete line folding is not accepted")
            }
            guard let colon = line.bytes.firstIndex(of: UInt8(ascii: ":")) else {
                throw HTTPParseError(offset: line.offset, reason: "header line without a colon")
            }
            let name = line.bytes[line.bytes.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(isTokenCharacter) else {
                throw HTTPParseError(offset: line.offset, reason: "invalid header name \"\(String(decoding: name.prefix(64), as: UTF8.self))\"")
            }
            let value = line.bytes[(colon + 1)...]
            if let bad = value.firstIndex(where: { ($0 < 32 && $0 != 9) || $0 == 127 }) {
                throw HTTPParseError(offset: bad, reason: "control character in the value of \(String(decoding: name, as: UTF8.self))")
            }
            headers.add(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self).trimmingOWS())
        }
        return ((String(decoding: startLine.bytes, as: UTF8.self), startLine.offset), headers)
    }
}

/// RFC 9110 `tchar`.
@inline(__always)
func isTokenCharacter(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
        UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
        UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        true
    default:
        false
    }
}

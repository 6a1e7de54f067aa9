/// An inclusive byte range `first...last` of a representation (RFC 9110 §14.1.2).
public struct ByteRange: Sendable, Hashable, CustomStringConvertible {
    public var first: Int64
    public var last: Int64

    public init(first: Int64, last: Int64) {
        precondition(first >= 0 && last >= first, "byte range \(first)-\(last) is empty or negative")
        self.first = first
        self.last = last
    }

    public var count: Int64 { last - first + 1 }
    public var description: String { "\(first)-\(last)" }
}

/// What a client asks for in `Range`: `bytes=first-last`, `bytes=first-` or the suffix `bytes=-length`.
public enum RangeRequest: Sendable, Hashable {
    case closed(first: Int64, last: Int64)
    case from(Int64)
    case suffix(Int64)

    /// The `Range` header value.
    public var headerValue: String {
        switch self {
        case .closed(let first, let last): "bytes=\(first)-\(last)"
        case .from(let first): "bytes=\(first)-"
        case .suffix(let length): "bytes=-\(length)"
        }
    }

    /// Parses a `Range` header with exactly one range; nil for anything else (multiple ranges, another
    /// unit, syntax errors), which a server may answer by ignoring the header (RFC 9110 §14.2).
    public init?(headerValue: String) {
        let value = headerValue.trimmingOWS()
        guard value.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = value.dropFirst(6).trimmingOWS()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let firstText = spec[..<dash].trimmingOWS()
        let lastText = spec[spec.index(after: dash)...].trimmingOWS()
        if firstText.isEmpty {
            guard let length = parseDecimal(lastText) else { return nil }
            self = .suffix(length)
        } else {
            guard let first = parseDecimal(firstText) else { return nil }
            if lastText.isEmpty {
                self = .from(first)
            } else {
                guard let last = parseDecimal(lastText), last >= first else { return nil }
                self = .closed(first: first, last: last)
            }
        }
    }

    /// The range this request selects in a representation of `length` bytes, or nil when it is
    /// unsatisfiable (the server answers 416 with `Content-Range: bytes */length`).
    public func resolved(length: Int64) -> ByteRange? {
        switch self {
        case .closed(let first, let last):
            guard first < length else { return nil }
            return ByteRange(first: first, last: min(last, length - 1))
        case .from(let first):
            guard first < length else { return nil }
            return ByteRange(first: first, last: length - 1)
        case .suffix(let suffix):
            guard suffix > 0, length > 0 else { return nil }
            return ByteRange(first: max(0, length - suffix), last: length - 1)
        }
    }
}

/// `Content-Range` in a 206 (`bytes first-last/complete`) or a 416 (`bytes */complete`).
public struct ContentRange: Sendable, Hashable, CustomStringConvertible {
    /// nil in a 416's `bytes */length`.
    public var range: ByteRange?
    /// The representation's full length; nil when the server sent `*`.
    public var completeLength: Int64?

    public init(range: ByteRange?, completeLength: Int64?) {
        self.range = range
        self.completeLength = completeLength
    }

    /// Parses the header value strictly: a range past the complete length is rejected.
    public init?(headerValue: String) {
        let value = headerValue.trimmingOWS()
        guard value.lowercased().hasPrefix("bytes "), let slash = value.firstIndex(of: "/") else { return nil }
        let rangeText = value[value.index(value.startIndex, offsetBy: 6)..<slash].trimmingOWS()
        let lengthText = value[value.index(after: slash)...].trimmingOWS()
        if lengthText == "*" {
            completeLength = nil
        } else {
            guard let length = parseDecimal(lengthText) else { return nil }
            completeLength = length
        }
        if rangeText == "*" {
            guard completeLength != nil else { return nil }
            range = nil
        } else {
            guard let dash = rangeText.firstIndex(of: "-"),
                let first = parseDecimal(rangeText[..<dash]),
                let last = parseDecimal(rangeText[rangeText.index(after: dash)...]), last >= first
            else { return nil }
            if let completeLength, last >= completeLength { return nil }
            range = ByteRange(first: first, last: last)
        }
    }

    public var description: String {
        "bytes \(range.map(\.description) ?? "*")/\(completeLength.map(String.init) ?? "*")"
    }
}

/// An entity tag (RFC 9110 §8.8.3): `"opaque"` or weak `W/"opaque"`.
public struct EntityTag: Sendable, Hashable, CustomStringConvertible {
    public var opaque: String
    public var isWeak: Bool

    public init(opaque: String, isWeak: Bool = false) {
        self.opaque = opaque
        self.isWeak = isWeak
    }

    public init?(headerValue: String) {
        var value = Substring(headerValue.trimmingOWS())
        isWeak = value.hasPrefix("W/")
        if isWeak { value = value.dropFirst(2) }
        guard value.count >= 2, value.first == "\"", value.last == "\"" else { return nil }
        let inner = value.dropFirst().dropLast()
        // etagc = %x21 / %x23-7E / obs-text
        guard inner.utf8.allSatisfy({ $0 == 0x21 || ($0 >= 0x23 && $0 != 0x7F) }) else { return nil }
        opaque = String(inner)
    }

    public var description: String { (isWeak ? "W/" : "") + "\"\(opaque)\"" }

    /// Strong comparison (§8.8.3.2): both strong and the same opaque string. `If-Range` needs it.
    public func strongMatches(_ other: EntityTag) -> Bool { !isWeak && !other.isWeak && opaque == other.opaque }
}

/// What identifies one version of a representation: the validators a resume must present in `If-Range`.
public struct Validators: Sendable, Hashable {
    public var entityTag: EntityTag?
    /// The `Last-Modified` value as the server sent it.
    public var lastModified: String?

    public init(entityTag: EntityTag? = nil, lastModified: String? = nil) {
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    public init(headers: HTTPHeaders) {
        entityTag = headers["ETag"].flatMap(EntityTag.init(headerValue:))
        lastModified = headers["Last-Modified"]
    }

    /// The `If-Range` value: a strong ETag if there is one, else the date (RFC 9110 §13.1.5 lets a
    /// client send a date it got as `Last-Modified`); nil when neither can safely guard a resume.
    public var ifRangeValue: String? {
        if let entityTag, !entityTag.isWeak { return entityTag.description }
        if let lastModified, HTTPDate(lastModified) != nil { return lastModified }
        return nil
    }

    /// Whether a response with `other`'s validators is the same version as the one these came from.
    public func matches(_ other: Validators) -> Bool {
        if let entityTag, let otherTag = other.entityTag { return entityTag.strongMatches(otherTag) }
        if entityTag != nil || other.entityTag != nil { return false }
        return lastModified == other.lastModified
    }

    /// Server side: whether `If-Range: value` still names the current version (`self`), so a 206 may be sent.
    public func satisfiesIfRange(_ value: String) -> Bool {
        let trimmed = value.trimmingOWS()
        if trimmed.hasPrefix("\"") || trimmed.hasPrefix("W/") {
            guard let tag = EntityTag(headerValue: trimmed), let entityTag else { return false }
            return tag.strongMatches(entityTag)
        }
        guard let date = HTTPDate(trimmed), let lastModified, let current = HTTPDate(lastModified) else { return false }
        return date == current
    }
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7), as seconds since 1970.
public struct HTTPDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var secondsSince1970: Int64

    public init(secondsSince1970: Int64) { self.secondsSince1970 = secondsSince1970 }

    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Parses IMF-fixdate only (the obsolete RFC 850 and asctime forms are not produced by servers we test).
    public init?(_ text: String) {
        let parts = text.trimmingOWS().split(separator: " ")
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
            let day = Int(parts[1]), parts[1].count == 2, (1...31).contains(day),
            let month = Self.months.firstIndex(of: String(parts[2])),
            let year = Int(parts[3]), parts[3].count == 4
        else { return nil }
        let time = parts[4].split(separator: ":")
        guard time.count == 3, time.allSatisfy({ $0.count == 2 }), let hour = Int(time[0]), let minute = Int(time[1]),
            let second = Int(time[2]), hour < 24, minute < 60, second < 61
        else { return nil }
        let days = Self.daysFromCivil(year: year, month: month + 1, day: day)
        secondsSince1970 = Int64(days) * 86400 + Int64(hour * 3600 + minute * 60 + second)
    }

    public var description: String {
        let days = Int(secondsSince1970.floorDivided(by: 86400))
        let seconds = Int(secondsSince1970 - Int64(days) * 86400)
        let (year, month, day) = Self.civilFromDays(days)
        let weekday = Self.weekdays[((days % 7) + 7) % 7]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekday), \(two(day)) \(Self.months[month - 1]) \(year) \(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60)) GMT"
    }

    public static func < (lhs: HTTPDate, rhs: HTTPDate) -> Bool { lhs.secondsSince1970 < rhs.secondsSince1970 }

    /// Howard Hinnant's `days_from_civil`.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146097 + dayOfEra - 719468
    }

    static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let dayOfEra = z - era * 146097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Int64 {
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

import Foundation
import Glibc
import Profile

/// A wall-clock instant as RFC 3339 writes it, to the nanosecond: seconds since 1970-01-01T00:00:00Z (negative
/// before it) and the nanoseconds of that second.
struct WallTime: Sendable, Hashable, Comparable {
    var seconds: Int64
    var nanoseconds: Int32

    /// The instant as a `Date` (about 0.1 µs of resolution today: enough for a start time).
    var date: Date { Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9) }

    /// This instant plus `duration` (non-negative, from ``parseDuration(_:)``), or nil past `Int64` seconds.
    func adding(_ duration: Duration) -> WallTime? {
        let (wholeSeconds, attoseconds) = duration.components
        var nanos = Int64(nanoseconds) + attoseconds / 1_000_000_000
        var carry: Int64 = 0
        if nanos >= 1_000_000_000 {
            nanos -= 1_000_000_000
            carry = 1
        }
        let (partial, overflow) = seconds.addingReportingOverflow(wholeSeconds)
        let (total, carryOverflow) = partial.addingReportingOverflow(carry)
        guard !overflow, !carryOverflow else { return nil }
        return WallTime(seconds: total, nanoseconds: Int32(nanos))
    }

    static func < (lhs: WallTime, rhs: WallTime) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }
}

/// RFC 3339 §5.6 `date-time`, parsed strictly: `2026-12-01T23:30:00Z`, `2026-12-01T23:30:00.250+01:00`.
/// `T` and `Z` may be lower case (§5.6), and a single space may stand for `T` (the §5.6 note; GNU
/// `date --rfc-3339=ns` writes one). Fractions have 1 to 9 digits; `-00:00` (offset unknown) counts as UTC; second 60
/// (a leap second) is the next minute's first instant, as POSIX time has no leap seconds. Nothing else is accepted:
/// no week dates, no ordinal dates, no missing seconds, no offset without a colon.
enum RFC3339 {
    /// The longest text looked at: a date-time with nine fractional digits and an offset is 35 bytes.
    static let maximumLength = 40

    /// - Returns: the instant, or the reason `text` is not one (a phrase that fits after "is not an RFC 3339 time: ").
    static func parse(_ text: String) -> Result<WallTime, ParseFailure> {
        let bytes = Array(text.utf8.prefix(maximumLength + 1))
        guard bytes.count <= maximumLength else { return .failure("longer than \(maximumLength) characters") }
        var scanner = Scanner(bytes: bytes)
        guard let year = scanner.digits(4), scanner.take("-"), let month = scanner.digits(2), scanner.take("-"),
            let day = scanner.digits(2)
        else { return .failure("expected a date as YYYY-MM-DD") }
        guard (1...12).contains(month) else { return .failure("month \(pad(month)) is not 01 to 12") }
        guard (1...daysIn(month: month, year: year)).contains(day) else {
            return .failure("\(year)-\(pad(month)) has no day \(pad(day))")
        }
        guard scanner.take("T") || scanner.take("t") || scanner.take(" ") else {
            return .failure("expected \"T\" between the date and the time")
        }
        guard let hour = scanner.digits(2), scanner.take(":"), let minute = scanner.digits(2), scanner.take(":"),
            let second = scanner.digits(2)
        else { return .failure("expected a time as hh:mm:ss") }
        guard hour <= 23, minute <= 59, second <= 60 else {
            return .failure("\(pad(hour)):\(pad(minute)):\(pad(second)) is not a time of day")
        }
        var nanoseconds = 0
        if scanner.take(",") {
            return .failure("a decimal comma is ISO 8601's, not RFC 3339's (GNU date -Ins writes one; use --rfc-3339=ns)")
        }
        if scanner.take(".") {
            var count = 0
            while let digit = scanner.digit() {
                count += 1
                guard count <= 9 else { return .failure("more than 9 fractional digits") }
                nanoseconds = nanoseconds * 10 + digit
            }
            guard count > 0 else { return .failure("expected digits after the decimal point") }
            for _ in count..<9 { nanoseconds *= 10 }
        }
        var offsetSeconds = 0
        if scanner.take("Z") || scanner.take("z") {
            offsetSeconds = 0
        } else if let sign = scanner.take("+") ? 1 : scanner.take("-") ? -1 : nil {
            guard let hours = scanner.digits(2), scanner.take(":"), let minutes = scanner.digits(2) else {
                return .failure("expected an offset as +hh:mm or -hh:mm")
            }
            guard hours <= 23, minutes <= 59 else { return .failure("offset \(pad(hours)):\(pad(minutes)) is out of range") }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else {
            return .failure("expected \"Z\" or an offset such as +01:00 after the time")
        }
        guard scanner.isAtEnd else { return .failure("unexpected text after the offset") }
        // Every value is bounded above (year < 10000): no arithmetic here can overflow.
        let days = Int64(daysFromCivil(year: year, month: month, day: day))
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        return .success(WallTime(seconds: seconds, nanoseconds: Int32(nanoseconds)))
    }

    /// Why a text is not an RFC 3339 time.
    struct ParseFailure: Error, ExpressibleByStringLiteral, ExpressibleByStringInterpolation, CustomStringConvertible {
        var description: String
        init(stringLiteral value: String) { description = value }
        init(stringInterpolation: DefaultStringInterpolation) { description = String(stringInterpolation: stringInterpolation) }
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    private struct Scanner {
        let bytes: [UInt8]
        var position = 0

        var isAtEnd: Bool { position == bytes.count }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard position < bytes.count, bytes[position] == UInt8(character.value) else { return false }
            position += 1
            return true
        }

        mutating func digit() -> Int? {
            guard position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) else { return nil }
            position += 1
            return Int(bytes[position - 1] - UInt8(ascii: "0"))
        }

        /// Exactly `count` digits as a number.
        mutating func digits(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }
    }
}

import Foundation
import Testing
@testable import WSLoadCLI

/// `--start-at TIME`: RFC 3339 §5.6 parsed strictly (pure), and `@FILE[+DURATION]` read from real files, hostile
/// ones included (README "Distributed runs"; exit 64 for the argument, 66 for an unreadable file, 65 for one that
/// holds no time).
@Suite("--start-at parsing", .timeLimit(.minutes(1)))
struct StartAtParserTests {
    private func seconds(_ text: String) -> WallTime? { try? RFC3339.parse(text).get() }

    private func reason(_ text: String) -> String {
        switch RFC3339.parse(text) {
        case .failure(let failure): return failure.description
        case .success(let time): return "parsed as \(time)"
        }
    }

    @Test("RFC 3339 forms: Z, offsets either way, fractions of 1 to 9 digits, lower case, a space for T")
    func forms() {
        // Epoch values from Python's datetime.fromisoformat(...).timestamp().
        #expect(seconds("2026-12-01T23:30:00Z") == WallTime(seconds: 1_796_167_800, nanoseconds: 0))
        #expect(seconds("2026-12-01T23:30:00.250+01:00") == WallTime(seconds: 1_796_164_200, nanoseconds: 250_000_000))
        #expect(seconds("2024-02-29T12:00:00-05:30") == WallTime(seconds: 1_709_227_800, nanoseconds: 0))
        #expect(seconds("1970-01-01T00:00:00Z") == WallTime(seconds: 0, nanoseconds: 0))
        #expect(seconds("2000-03-01T00:00:00Z") == WallTime(seconds: 951_868_800, nanoseconds: 0))
        #expect(seconds("9999-12-31T23:59:59Z") == WallTime(seconds: 253_402_300_799, nanoseconds: 0))
        #expect(seconds("1969-12-31T23:59:59Z") == WallTime(seconds: -1, nanoseconds: 0))
        #expect(seconds("2026-12-01t23:30:00z") == seconds("2026-12-01T23:30:00Z"))
        #expect(seconds("2026-12-01 23:30:00+00:00") == seconds("2026-12-01T23:30:00Z"), "GNU date --rfc-3339 writes a space")
        #expect(seconds("2026-12-01T23:30:00-00:00") == seconds("2026-12-01T23:30:00Z"), "-00:00: offset unknown, UTC")
        #expect(seconds("2026-12-01T23:30:00.5Z")?.nanoseconds == 500_000_000)
        #expect(seconds("2026-12-01T23:30:00.123456789Z")?.nanoseconds == 123_456_789)
        #expect(seconds("2026-12-01T23:30:00.000000001Z")?.nanoseconds == 1)
        // A leap second is the next minute's first instant (POSIX time has none).
        #expect(seconds("2016-12-31T23:59:60Z") == seconds("2017-01-01T00:00:00Z"))
        // An offset crossing midnight and the year.
        #expect(seconds("2027-01-01T00:30:00+01:00") == seconds("2026-12-31T23:30:00Z"))
    }

    @Test("what is not RFC 3339 is refused, saying why")
    func refusals() {
        #expect(reason("2026-12-01") == "expected \"T\" between the date and the time")
        #expect(reason("2026-12-01T23:30Z") == "expected a time as hh:mm:ss")
        #expect(reason("2026-12-01T23:30:00") == "expected \"Z\" or an offset such as +01:00 after the time")
        #expect(reason("2026-12-01T23:30:00+0100") == "expected an offset as +hh:mm or -hh:mm")
        #expect(reason("2026-12-01T23:30:00+24:00") == "offset 24:00 is out of range")
        #expect(reason("2026-13-01T00:00:00Z") == "month 13 is not 01 to 12")
        #expect(reason("2026-00-01T00:00:00Z") == "month 00 is not 01 to 12")
        #expect(reason("2026-02-29T00:00:00Z") == "2026-02 has no day 29")
        #expect(seconds("2024-02-29T00:00:00Z") != nil, "2024 is a leap year")
        #expect(reason("2100-02-29T00:00:00Z") == "2100-02 has no day 29", "2100 is not")
        #expect(seconds("2000-02-29T00:00:00Z") != nil, "2000 is")
        #expect(reason("2026-04-31T00:00:00Z") == "2026-04 has no day 31")
        #expect(reason("2026-12-01T24:00:00Z") == "24:00:00 is not a time of day")
        #expect(reason("2026-12-01T23:60:00Z") == "23:60:00 is not a time of day")
        #expect(reason("2026-12-01T23:30:61Z") == "23:30:61 is not a time of day")
        #expect(reason("2026-12-01T23:30:00.Z") == "expected digits after the decimal point")
        #expect(reason("2026-12-01T23:30:00,250+00:00").hasPrefix("a decimal comma is ISO 8601's"), "date -Ins")
        #expect(reason("2026-12-01T23:30:00.1234567890Z") == "more than 9 fractional digits")
        #expect(reason("2026-12-01T23:30:00Z ") == "unexpected text after the offset")
        #expect(reason("2026-12-01T23:30:00ZZ") == "unexpected text after the offset")
        #expect(reason("+2026-12-01T23:30:00Z") == "expected a date as YYYY-MM-DD")
        #expect(reason("26-12-01T23:30:00Z") == "expected a date as YYYY-MM-DD")
        #expect(reason("2026-W48-1T00:00:00Z") == "expected a date as YYYY-MM-DD")
        #expect(reason("１２３４-12-01T23:30:00Z") == "expected a date as YYYY-MM-DD", "only ASCII digits")
        #expect(reason("") == "expected a date as YYYY-MM-DD")
        #expect(reason("now") == "expected a date as YYYY-MM-DD")
        #expect(reason("1796167800") == "expected a date as YYYY-MM-DD", "epoch seconds are not RFC 3339")
        #expect(reason("2026-12-01T23:30:00.250000000000000000000000000Z") == "longer than 40 characters")
        #expect(reason(String(repeating: "9", count: 1 << 20)) == "longer than 40 characters")
    }

    private let now = Date(timeIntervalSince1970: 1_796_167_800)  // 2026-12-01T23:30:00Z

    /// `now` plus whole seconds and nanoseconds, exactly.
    private func at(_ seconds: Int64, nanoseconds: Int32 = 0) -> WallTime {
        WallTime(seconds: 1_796_167_800 + seconds, nanoseconds: nanoseconds)
    }

    private func resolve(_ argument: String) -> Result<StartAtOption, StartAtOption.Failure> {
        StartAtOption.resolve(argument, now: now)
    }

    private func failure(_ argument: String) -> StartAtOption.Failure? {
        if case .failure(let failure) = resolve(argument) { return failure }
        return nil
    }

    @Test("the argument: up to 24 h ahead, any time past (it starts late), never before 1970 (64)")
    func argumentRange() throws {
        #expect(try resolve("2026-12-01T23:30:30Z").get().time == at(30))
        #expect(try resolve("2026-12-02T23:30:00Z").get().time == at(86_400), "exactly 24 h ahead")
        let ahead = try #require(failure("2026-12-02T23:30:01Z"))
        #expect(ahead.exitCode == .usage)
        #expect(ahead.description.contains("more than 24 h is refused as a typo"), "\(ahead)")
        let farFuture = try #require(failure("9999-12-31T23:59:59Z"))
        #expect(farFuture.exitCode == .usage)
        #expect(farFuture.description.contains("days ahead"), "\(farFuture)")
        #expect(try resolve("2026-11-30T23:30:00Z").get().time == at(-86_400), "past: accepted")
        #expect(try resolve("1970-01-01T00:00:00Z").get().time.seconds == 0)
        let before1970 = try #require(failure("1969-12-31T23:59:59Z"))
        #expect(before1970.exitCode == .usage && before1970.description.contains("before 1970"), "\(before1970)")
        let garbage = try #require(failure("tomorrow\u{1b}[2J"))
        #expect(garbage.exitCode == .usage && garbage.description.contains("is not an RFC 3339 time"), "\(garbage)")
    }

    @Test("@FILE and @FILE+DURATION: the launcher's line plus a lead; a '+' in the path is the path's")
    func files() throws {
        let scratch = try RunScratch()
        let launch = try scratch.write("launch-time", "2026-12-01T23:29:50.125Z\n")
        #expect(try resolve("@" + launch).get().time == at(-10, nanoseconds: 125_000_000))
        #expect(try resolve("@" + launch + "+30s").get().time == WallTime(seconds: 1_796_167_820, nanoseconds: 125_000_000))
        #expect(try resolve("@" + launch + "+1.5m").get().time == at(80, nanoseconds: 125_000_000))
        #expect(try resolve("@" + launch + "+250ms").get().time.nanoseconds == 375_000_000)
        #expect(try resolve("@" + launch + "+900ms").get().time == WallTime(seconds: 1_796_167_791, nanoseconds: 25_000_000),
                "the nanoseconds carry into the seconds")
        let noNewline = try scratch.write("no-newline", "2026-12-01T23:30:00Z")
        #expect(try resolve("@" + noNewline).get().time == at(0))
        let crlf = try scratch.write("crlf", "  2026-12-01T23:30:00Z \r\n")
        #expect(try resolve("@" + crlf).get().time == at(0))
        let gnu = try scratch.write("gnu", "2026-12-01 23:30:00.000000000+00:00\n")  // date --rfc-3339=ns
        #expect(try resolve("@" + gnu + "+5s").get().time == at(5))
        // A directory with '+' in its name (a hostile path a generated script may hold): the last '+' followed by a
        // duration starts the lead; otherwise the '+' is part of the path.
        let odd = try scratch.write("a+b c/launch+time", "2026-12-01T23:30:00Z\n")
        #expect(try resolve("@" + odd).get().time == at(0))
        #expect(try resolve("@" + odd + "+10s").get().time == at(10))
        let lead = try #require(failure("@" + launch + "+25h"))
        #expect(lead.exitCode == .usage && lead.description.contains("24 h"), "a lead past 24 h ahead: \(lead)")
    }

    @Test("hostile files: missing, a directory, a FIFO, huge, sparse, empty, two lines, garbage, binary, far future, 1969")
    func hostileFiles() throws {
        let scratch = try RunScratch()
        func refusal(_ path: String, _ exitCode: ExitCode, _ phrase: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let failure = failure("@" + path + "+30s")
            #expect(failure?.exitCode == exitCode, "\(String(describing: failure))", sourceLocation: sourceLocation)
            #expect(failure?.description.contains(phrase) == true, "\(String(describing: failure))", sourceLocation: sourceLocation)
            #expect(failure?.description.contains(path.count > 80 ? String(path.prefix(40)) : path) == true,
                    "the message names the file: \(String(describing: failure))", sourceLocation: sourceLocation)
        }
        refusal(scratch.path("missing"), .noInput, "no such file")
        refusal(scratch.path(""), .noInput, "is not a regular file")
        let fifo = scratch.path("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        refusal(fifo, .noInput, "is not a regular file")  // opened without blocking on a writer, then refused
        refusal(try scratch.write("huge", String(repeating: "2026-12-01T23:30:00Z\n", count: 100)), .invalidInput,
                "larger than 1024 bytes")
        let sparse = scratch.path("sparse")
        #expect(FileManager.default.createFile(atPath: sparse, contents: nil))
        #expect(truncate(sparse, 1 << 40) == 0)  // 1 TiB of holes: refused by its size, never read
        refusal(sparse, .invalidInput, "larger than 1024 bytes")
        refusal(try scratch.write("empty", ""), .invalidInput, "is empty")
        refusal(try scratch.write("blank", " \n\n"), .invalidInput, "is empty")
        refusal(try scratch.write("two", "2026-12-01T23:30:00Z\n2026-12-01T23:31:00Z\n"), .invalidInput, "more than one line")
        refusal(try scratch.write("garbage", "launch at noon\n"), .invalidInput, "is not an RFC 3339 time")
        refusal(try scratch.write("epoch", "1796167800\n"), .invalidInput, "is not an RFC 3339 time")
        let binary = scratch.path("binary")
        #expect(FileManager.default.createFile(atPath: binary, contents: Data([0xff, 0xfe, 0x00, 0x32])))
        refusal(binary, .invalidInput, "is not UTF-8")
        refusal(try scratch.write("nul", "2026-12-01T23:30:00Z\u{0}\n"), .invalidInput, "is not an RFC 3339 time")
        refusal(try scratch.write("future", "2027-12-01T23:30:00Z\n"), .usage, "more than 24 h is refused")
        refusal(try scratch.write("1969", "1969-07-20T20:17:40Z\n"), .invalidInput, "before 1970")
        refusal(scratch.path(String(repeating: "x", count: 300)), .noInput, "File name too long")
        #expect(failure("@")?.exitCode == .usage)
        #expect(failure("@+30s")?.description.contains("names no file") == true)
    }
}

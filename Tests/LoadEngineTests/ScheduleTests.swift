import LoadEngine
import Profile
import Reporting
import Testing

@Suite("Ramps and payload headers", .timeLimit(.minutes(1)))
struct ScheduleTests {
    @Test("stages ramp linearly from the previous target and hold the last")
    func ramp() {
        let ramp = RampSchedule(connections: 100, stages: [
            .init(target: 100, duration: .seconds(10)), .init(target: 100, duration: .seconds(10)),
            .init(target: 20, duration: .seconds(4)),
        ])
        #expect(ramp.target(at: .zero) == 0)
        #expect(ramp.target(at: .seconds(5)) == 50)
        #expect(ramp.target(at: .milliseconds(9_999)) == 99)
        #expect(ramp.target(at: .seconds(10)) == 100)
        #expect(ramp.target(at: .seconds(19)) == 100)
        #expect(ramp.target(at: .seconds(22)) == 60)
        #expect(ramp.target(at: .milliseconds(20_010)) == 100, "a ramp down leaves the peak at its moment")
        #expect(ramp.peak(in: .milliseconds(9_990) ... .milliseconds(10_040)) == 100)
        #expect(ramp.peak(in: .seconds(21) ... .seconds(23)) == 80)
        #expect(ramp.target(at: .seconds(24)) == 20)
        #expect(ramp.target(at: .seconds(600)) == 20)
        #expect(ramp.totalDuration == .seconds(24))
        #expect(RampSchedule(connections: 7, stages: []).target(at: .zero) == 7)
    }

    @Test("echo headers round-trip in binary and text", arguments: [false, true])
    func echoHeader(isText: Bool) {
        var message = [UInt8](repeating: UInt8(ascii: "x"), count: 40)
        EchoPayload.stamp(&message, sequence: 0x0102_0304_0506_0708, intendedNanoseconds: 0xFFEE_DDCC_BBAA_9988, isText: isText)
        let read = EchoPayload.read(message, isText: isText)
        #expect(read?.sequence == 0x0102_0304_0506_0708 && read?.intendedNanoseconds == 0xFFEE_DDCC_BBAA_9988)
        if isText { #expect(String(decoding: message.prefix(16), as: UTF8.self) == "0102030405060708") }
        #expect(EchoPayload.read(message.prefix(isText ? 31 : 15), isText: isText) == nil)
        // Contiguous (an array, a native string's UTF-8) is read in place, anything else through a copy: the same
        // answer either way, for a good header, a short one, and one with a byte that is not a hex digit.
        var bad = message
        bad[isText ? 20 : 0] = UInt8(ascii: "g")
        for candidate in [message, Array(message.prefix(isText ? 31 : 15)), bad] {
            let inPlace = EchoPayload.read(candidate, isText: isText)
            let copied = EchoPayload.read(candidate.lazy.map { $0 }, isText: isText)
            #expect(inPlace?.sequence == copied?.sequence && inPlace?.intendedNanoseconds == copied?.intendedNanoseconds)
            if isText {
                let text = String(decoding: candidate, as: UTF8.self)
                #expect(EchoPayload.read(text.utf8, isText: true)?.sequence == inPlace?.sequence)
            }
        }
        #expect(isText ? EchoPayload.read(bad, isText: true) == nil : EchoPayload.read(bad, isText: false) != nil)
        if isText {
            // Built in the string's storage: the same text as a stamped array decoded, for the shortest and a longer size.
            let filler = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
            for count in [32, 45] {
                var stamped = Array(filler.prefix(count))
                EchoPayload.stamp(&stamped, sequence: 0x0102_0304_0506_0708, intendedNanoseconds: 0xFFEE_DDCC_BBAA_9988, isText: true)
                let text = EchoPayload.text(count: count, filler: filler, sequence: 0x0102_0304_0506_0708,
                                            intendedNanoseconds: 0xFFEE_DDCC_BBAA_9988)
                #expect(text == String(decoding: stamped, as: UTF8.self) && text.utf8.count == count)
            }
        }
    }

    @Test("durations parse and print the way people write them")
    func durations() {
        #expect(parseDuration("1.5s") == .milliseconds(1500))
        #expect(parseDuration("250us") == .microseconds(250))
        #expect(parseDuration("2h") == .seconds(7200))
        #expect(parseDuration("10x") == nil && parseDuration("-1s") == nil && parseDuration("s") == nil)
        #expect(formatDuration(.microseconds(850)) == "850us")
        #expect(formatDuration(.microseconds(12_345)) == "12.3ms")
        #expect(formatDuration(.seconds(125)) == "2m05s")
        #expect(formatDuration(.seconds(3720)) == "1h02m")
    }

    @Test("a displayed figure from a file never traps: NaN, ±infinity, negative and astronomically large microseconds")
    func hostileDisplayFigures() {
        #expect(formatMicroseconds(.nan) == "n/a")
        #expect(formatMicroseconds(.infinity) == "∞" && formatMicroseconds(-.infinity) == "-∞")
        #expect(formatMicroseconds(-1e300) == "-∞" && formatMicroseconds(1e300) == "∞")
        #expect(formatMicroseconds(-850) == "-850us")
        #expect(formatMicroseconds(8.9e18).hasSuffix("m"), "the largest shown is hours and minutes")
    }
}

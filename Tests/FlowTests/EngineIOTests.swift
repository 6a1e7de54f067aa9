import Flow
import JSON
import Testing

/// Engine.IO 4 packets against the vectors of engine.io-protocol (v4) and hostile input.
@Suite("Engine.IO codec", .timeLimit(.minutes(2)))
struct EngineIOTests {
    private static let openText =
        #"0{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":["websocket"],"pingInterval":25000,"pingTimeout":5000,"#
        + #""maxPayload":1000000}"#

    @Test func openPacketFromTheProtocolDocument() throws {
        let packet = try EngineIOPacket.decode(Self.openText).get()
        let handshake = EngineIOHandshake(
            sid: "lv_VI97HAXpY6yYWAAAC", upgrades: ["websocket"], pingInterval: .milliseconds(25000),
            pingTimeout: .milliseconds(5000), maxPayload: 1_000_000)
        #expect(packet == .open(handshake))
        #expect(packet.encoded == Self.openText)
    }

    @Test func openPacketWithoutOptionalFieldsTakesTheDefaults() throws {
        let packet = try EngineIOPacket.decode(#"0{"sid":"a","pingInterval":1000,"pingTimeout":500}"#).get()
        #expect(packet == .open(EngineIOHandshake(
            sid: "a", upgrades: [], pingInterval: .seconds(1), pingTimeout: .milliseconds(500), maxPayload: 1_000_000)))
    }

    /// What python-engineio 4.15 sends for `ping_interval=0.5, ping_timeout=0.25` (it truncates the interval to
    /// whole seconds before scaling: `int(0.5) * 1000`), and fractions a JavaScript server may compute: any finite
    /// number of milliseconds in 0...one day, rounded up.
    @Test(arguments: [
        (#"0{"sid":"UPOhXEDkCGr_NQ1GAAAA","upgrades":[],"pingTimeout":250,"pingInterval":0,"maxPayload":1000000}"#,
         0, 250),
        (#"0{"sid":"a","pingInterval":500.0,"pingTimeout":250.25}"#, 500, 251),
        (#"0{"sid":"a","pingInterval":1.5,"pingTimeout":0.001}"#, 2, 1),
        (#"0{"sid":"a","pingInterval":86400000,"pingTimeout":0}"#, 86_400_000, 0),
        (#"0{"sid":"a","pingInterval":2.5e3,"pingTimeout":-0}"#, 2500, 0),
    ])
    func openPacketIntervalsAreAnyNumberOfMillisecondsRoundedUp(text: String, interval: Int, timeout: Int) throws {
        guard case .open(let handshake) = try EngineIOPacket.decode(text).get() else {
            Issue.record("not an open packet")
            return
        }
        #expect(handshake.pingInterval == .milliseconds(interval))
        #expect(handshake.pingTimeout == .milliseconds(timeout))
    }

    @Test(arguments: [
        ("1", EngineIOPacket.close), ("2", .ping("")), ("3", .pong("")), ("2probe", .ping("probe")),
        ("3probe", .pong("probe")), ("4hello", .message("hello")), ("40", .message("0")),
        (#"42["x",{"a":"é"}]"#, .message(#"2["x",{"a":"é"}]"#)), ("5", .upgrade), ("6", .noop),
        ("4\u{301}", .message("\u{301}")),
    ])
    func everyPacketTypeRoundTrips(text: String, packet: EngineIOPacket) throws {
        #expect(try EngineIOPacket.decode(text).get() == packet)
        #expect(packet.encoded == text)
    }

    @Test(arguments: [
        "", "7", "a", "{", "1x", "5probe", "6 ", "0", "0{", "0[]", "0{}", #"0{"sid":"","pingInterval":1,"pingTimeout":1}"#,
        #"0{"sid":"a","pingInterval":-0.5,"pingTimeout":1}"#, #"0{"sid":"a","pingInterval":86400000.5,"pingTimeout":1}"#,
        #"0{"sid":"a","pingInterval":1e300,"pingTimeout":1}"#, #"0{"sid":"a","pingInterval":1,"pingTimeout":-5}"#,
        #"0{"sid":"a","pingInterval":1,"pingTimeout":null}"#,
        #"0{"sid":"a","pingInterval":"25000","pingTimeout":1}"#, #"0{"sid":7,"pingInterval":1,"pingTimeout":1}"#,
        #"0{"sid":"a","pingInterval":1,"pingTimeout":1,"upgrades":"websocket"}"#,
        #"0{"sid":"a","pingInterval":1,"pingTimeout":1,"upgrades":[1]}"#,
        #"0{"sid":"a","pingInterval":1,"pingTimeout":1,"maxPayload":0}"#,
        #"0{"sid":"a","pingInterval":1,"pingTimeout":1}x"#,
    ])
    func malformedPacketsAreErrors(text: String) {
        #expect(throws: FlowProtocolError.self) { try EngineIOPacket.decode(text).get() }
    }

    @Test func aHandshakeErrorNamesTheByteOffsetNotTheContents() throws {
        let error = try #require(EngineIOPacket.decode(#"0{"sid":"secret-sid","pingInterval":x}"#).failureValue)
        #expect(error.offset == 36)  // the `x` after "pingInterval":
        #expect(!error.description.contains("secret-sid"))
    }

    @Test func inputOverOneMebibyteIsRefused() {
        let limit = PresetLimits.maximumPacketBytes
        #expect(throws: Never.self) { try EngineIOPacket.decode("4" + String(repeating: "a", count: limit - 1)).get() }
        let error = EngineIOPacket.decode("4" + String(repeating: "a", count: limit)).failureValue
        #expect(error?.message.contains("over the limit") == true)
    }

    @Test func aDepthBombInTheOpenPacketIsAnError() {
        let bomb = "0" + String(repeating: "[", count: 100_000)
        #expect(throws: FlowProtocolError.self) { try EngineIOPacket.decode(bomb).get() }
    }

    @Test func randomBytesNeverTrap() {
        var generator = SeededGenerator(seed: 0xE10)
        for _ in 0..<3000 {
            let text = generator.hostileText(alphabet: Array("0123456{}[]\",:ab-/sidpingIntervalTimeout".utf8))
            _ = EngineIOPacket.decode(text)
        }
    }
}

extension Result {
    /// The error of a failure, nil on success (tests only).
    var failureValue: Failure? { if case .failure(let error) = self { error } else { nil } }
}

/// SplitMix64: deterministic, so a failing hostile input is reproducible from the seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Up to 64 bytes, mostly from `alphabet` (the syntax a decoder cares about), sometimes any byte, decoded as
    /// UTF-8 with repair (what a WebSocket text frame can hold is valid UTF-8).
    mutating func hostileText(alphabet: [UInt8]) -> String {
        let count = Int.random(in: 0...64, using: &self)
        var bytes: [UInt8] = []
        for _ in 0..<count {
            bytes.append(Bool.random(using: &self) ? alphabet.randomElement(using: &self)! : UInt8.random(in: 0...255, using: &self))
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

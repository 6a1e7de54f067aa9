import JSON

/// One Engine.IO (protocol 4) packet as a WebSocket text frame carries it: a type digit, then the data.
/// Only the WebSocket transport and text frames are spoken (binary frames would carry binary messages, which the
/// Socket.IO preset refuses). Heartbeat in protocol 4: the server sends `2`, the client answers `3` with the same
/// data; a client that hears no ping within pingInterval + pingTimeout treats the server as dead.
package enum EngineIOPacket: Sendable, Equatable {
    /// `0{...}`: the handshake the server sends first.
    case open(EngineIOHandshake)
    /// `1`: the transport is closing.
    case close
    /// `2` + optional data (`2probe` during an upgrade).
    case ping(String)
    /// `3` + optional data, echoing the ping's.
    case pong(String)
    /// `4` + a Socket.IO packet (``SocketIOPacket``).
    case message(String)
    /// `5`: upgrade (never used on a connection that starts on WebSocket).
    case upgrade
    /// `6`: noop.
    case noop

    /// Decodes one text frame. Input over 1 MiB, an empty frame, an unknown type, trailing data on `1`/`5`/`6`
    /// or a malformed handshake is an error; never traps.
    package static func decode(_ text: String) -> Result<EngineIOPacket, FlowProtocolError> {
        if let error = FlowProtocolError.oversized(text, what: "Engine.IO packet") { return .failure(error) }
        let utf8 = text.utf8
        guard let type = utf8.first else {
            return .failure(FlowProtocolError(offset: 0, message: "empty Engine.IO packet"))
        }
        // The type is one ASCII byte, so the data is exactly the bytes after it (dropping a Character could eat
        // a combining mark that follows the digit).
        let rest = String(decoding: utf8.dropFirst(), as: UTF8.self)
        func bare(_ packet: EngineIOPacket, _ name: String) -> Result<EngineIOPacket, FlowProtocolError> {
            rest.isEmpty ? .success(packet)
                : .failure(FlowProtocolError(offset: 1, message: "Engine.IO \(name) packet carries data"))
        }
        switch type {
        case UInt8(ascii: "0"):
            return EngineIOHandshake.decode(Array(utf8.dropFirst())[...], offset: 1).map { .open($0) }
        case UInt8(ascii: "1"): return bare(.close, "close")
        case UInt8(ascii: "2"): return .success(.ping(rest))
        case UInt8(ascii: "3"): return .success(.pong(rest))
        case UInt8(ascii: "4"): return .success(.message(rest))
        case UInt8(ascii: "5"): return bare(.upgrade, "upgrade")
        case UInt8(ascii: "6"): return bare(.noop, "noop")
        default: return .failure(FlowProtocolError(offset: 0, message: "unknown Engine.IO packet type"))
        }
    }

    /// The packet as a text frame's payload.
    package var encoded: String {
        switch self {
        case .open(let handshake): "0" + handshake.json.formatted(pretty: false)
        case .close: "1"
        case .ping(let data): "2" + data
        case .pong(let data): "3" + data
        case .message(let data): "4" + data
        case .upgrade: "5"
        case .noop: "6"
        }
    }
}

/// The fields of the Engine.IO open packet (`0{"sid":..,"upgrades":[..],"pingInterval":25000,"pingTimeout":20000,
/// "maxPayload":1000000}`); intervals are milliseconds on the wire.
package struct EngineIOHandshake: Sendable, Equatable {
    /// The Engine.IO session id (not the Socket.IO one, which the namespace connect gives).
    package var sid: String
    /// Transports the server offers to upgrade to (empty on a WebSocket-first connection).
    package var upgrades: [String]
    /// How often the server pings.
    package var pingInterval: Duration
    /// How long the server waits for the pong (and the client, added to pingInterval, for the next ping).
    package var pingTimeout: Duration
    /// The largest payload the server accepts, in bytes.
    package var maxPayload: Int

    package init(sid: String, upgrades: [String], pingInterval: Duration, pingTimeout: Duration, maxPayload: Int) {
        self.sid = sid
        self.upgrades = upgrades
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.maxPayload = maxPayload
    }

    /// The largest interval accepted from a server (one day); more is a malformed handshake, never an overflow.
    static let maximumMilliseconds = 86_400_000
    /// maxPayload when the server leaves it out (Engine.IO's default).
    static let defaultMaxPayload = 1_000_000

    var json: JSONValue {
        var object = JSONObject()
        object["sid"] = .string(sid)
        object["upgrades"] = .array(upgrades.map { .string($0) })
        object["pingInterval"] = JSONValue(Self.milliseconds(pingInterval))
        object["pingTimeout"] = JSONValue(Self.milliseconds(pingTimeout))
        object["maxPayload"] = JSONValue(maxPayload)
        return .object(object)
    }

    /// Whole milliseconds, saturating (a handshake built by hand may hold any duration).
    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000_000).partialValue
    }

    static func decode(_ bytes: ArraySlice<UInt8>, offset: Int) -> Result<EngineIOHandshake, FlowProtocolError> {
        let value: JSONValue
        switch parsePresetJSON(bytes, offset: offset, what: "Engine.IO open packet") {
        case .success(let parsed): value = parsed
        case .failure(let error): return .failure(error)
        }
        func fail(_ message: String) -> Result<EngineIOHandshake, FlowProtocolError> {
            .failure(FlowProtocolError(offset: offset, message: "Engine.IO open packet: \(message)"))
        }
        guard let object = value.objectValue else { return fail("not an object") }
        guard let sid = object["sid"]?.stringValue, !sid.isEmpty else { return fail("sid is not a non-empty string") }
        var upgrades: [String] = []
        if let list = object["upgrades"] {
            guard let elements = list.arrayValue else { return fail("upgrades is not an array") }
            for element in elements {
                guard let name = element.stringValue else { return fail("upgrades holds a non-string") }
                upgrades.append(name)
            }
        }
        // Any finite number of milliseconds in 0...maximum, a fraction rounded up: servers differ (python-engineio
        // 4.x sends `int(seconds) * 1000`, so 0.5 s goes out as 0; a JavaScript server may send 500.5).
        func interval(_ key: String) -> Int? {
            guard let number = object[key]?.numberValue, number.isFinite, number >= 0,
                  number <= Double(maximumMilliseconds) else { return nil }
            return Int(number.rounded(.up))
        }
        guard let pingInterval = interval("pingInterval") else {
            return fail("pingInterval is not a number of milliseconds in 0...\(maximumMilliseconds)")
        }
        guard let pingTimeout = interval("pingTimeout") else {
            return fail("pingTimeout is not a number of milliseconds in 0...\(maximumMilliseconds)")
        }
        var maxPayload = defaultMaxPayload
        if let limit = object["maxPayload"] {
            guard let number = limit.integerValue, number > 0 else {
                return fail("maxPayload is not a positive integer")
            }
            maxPayload = number
        }
        return .success(EngineIOHandshake(
            sid: sid, upgrades: upgrades, pingInterval: .milliseconds(pingInterval),
            pingTimeout: .milliseconds(pingTimeout), maxPayload: maxPayload))
    }
}

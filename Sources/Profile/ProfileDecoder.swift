import Crypto
import HTTP1
import JSON
import Lifecycle
import WebSocket

/// One thing wrong with a profile: where (a JSON path such as `scenarios[1].stages[0].duration`), what,
/// and how to fix it.
public struct ProfileProblem: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String
    public var hint: String?

    public var description: String {
        (path.isEmpty ? "" : path + ": ") + message + (hint.map { " (\($0))" } ?? "")
    }
}

/// Every problem found: object by object in document order, an object's unknown keys first.
public struct ProfileError: Error, Sendable, CustomStringConvertible {
    public var problems: [ProfileProblem]
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}

/// Turns a profile document into a ``Profile``, checking everything before anything runs: unknown keys,
/// kinds, ranges, durations, URLs, thresholds, cross-references. Reports every problem at once.
public enum ProfileDecoder {
    /// The keys each object of the profile may have. The decoder rejects any other key with this table,
    /// and a test holds `Profiles/profile.schema.json` to it, so the schema and the decoder cannot drift.
    public static let keys: [String: [String]] = [
        "profile": [
            "$schema", "version", "name", "description", "target", "tls", "headers", "auth", "duration", "gracefulStop",
            "loops", "seed", "scenarios", "thresholds", "chaos", "report",
        ],
        "chaos": ["at", "action", "fraction", "code", "for"],
        "tls": ["caFile", "insecure", "serverName"],
        "auth": ["type", "name", "tokenEnv", "tokenFile"],
        "report": ["directory", "interval"],
        "scenario": [
            "name", "kind", "startAfter", "pattern", "path", "connections", "stages", "pingInterval", "pingTimeout",
            "reconnect", "subprotocols", "compression", "message", "schedule", "messagesPerConnection", "subscribe",
            "typeName", "transfer",
        ],
        "transfer": [
            "url", "path", "size", "file", "segments", "connections", "minSegmentSize", "repeats", "interrupt", "method",
            "multipart", "sha256", "bandwidthLimit", "requestTimeout", "retry", "directory", "keepFiles",
        ],
        "stage": ["target", "duration"],
        "reconnect": ["initial", "max", "multiplier", "jitter", "maxAttempts"],
        "retry": ["initial", "max", "multiplier", "jitter", "maxAttempts"],
        "message": ["size", "format"],
        "sizeRange": ["min", "max"],
        "sizeChoice": ["size", "weight"],
        "schedule": ["model", "thinkTime", "rate", "per"],
        "threshold": ["expression", "abortOnFail", "abortDelay"],
    ]

    /// The largest profile read (a profile is configuration, not data).
    public static let maximumSize = 1 << 20
    /// The most connections one scenario (and one process) may ask for: the box's descriptor limit.
    public static let maximumConnections = 1_000_000
    /// The largest message a scenario may send.
    public static let maximumMessageSize = 64 << 20

    /// Decodes a chaos timeline on its own (`wsload proxy --chaos`): a JSON array of events as in a profile.
    /// - Throws: ``ProfileError`` listing every problem (paths start at `chaos`).
    public static func decodeChaos(_ bytes: [UInt8]) throws(ProfileError) -> [ChaosEvent] {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes)
        } catch {
            throw ProfileError(problems: [ProfileProblem(path: "chaos", message: "not valid JSON: \(error)", hint: nil)])
        }
        var reader = Reader()
        let events = reader.chaos(document, target: nil, duration: nil)
        guard reader.problems.isEmpty else { throw ProfileError(problems: reader.problems) }
        return events
    }

    /// Decodes a profile document. - Throws: ``ProfileError`` listing every problem.
    public static func decode(_ bytes: [UInt8]) throws(ProfileError) -> Profile {
        guard bytes.count <= maximumSize else {
            throw ProfileError(problems: [ProfileProblem(
                path: "", message: "the profile is \(bytes.count) bytes; the limit is \(maximumSize)", hint: nil)])
        }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes)
        } catch {
            throw ProfileError(problems: [ProfileProblem(path: "", message: "not valid JSON: \(error)", hint: nil)])
        }
        var reader = Reader()
        let profile = reader.profile(document)
        guard reader.problems.isEmpty, var profile else { throw ProfileError(problems: reader.problems) }
        profile.document = document
        return profile
    }
}

/// Walks the document, collecting problems instead of stopping at the first.
private struct Reader {
    var problems: [ProfileProblem] = []

    mutating func problem(_ path: String, _ message: String, hint: String? = nil) {
        problems.append(ProfileProblem(path: path, message: message, hint: hint))
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : path + "." + key }

    /// The object at `path`, with unknown keys reported (and a spelling suggestion when one is close).
    mutating func object(_ value: JSONValue?, _ path: String, kind: String) -> JSONObject? {
        guard let value else { return nil }
        guard let object = value.objectValue else {
            problem(path, "expected an object, found \(value.kindName)")
            return nil
        }
        let known = ProfileDecoder.keys[kind]!
        for key in object.keys where !known.contains(key) {
            problem(Self.join(path, key), "unknown key", hint: suggestion(for: key, among: known)
                ?? "expected one of: " + known.filter { $0 != "$schema" }.joined(separator: ", "))
        }
        return object
    }

    mutating func required(_ object: JSONObject, _ key: String, _ path: String, hint: String? = nil) -> JSONValue? {
        if let value = object[key] { return value }
        problem(Self.join(path, key), "is required", hint: hint)
        return nil
    }

    mutating func string(_ value: JSONValue?, _ path: String, nonEmpty: Bool = true) -> String? {
        guard let value else { return nil }
        guard let text = value.stringValue else {
            problem(path, "expected a string, found \(value.kindName)")
            return nil
        }
        if nonEmpty && text.isEmpty {
            problem(path, "must not be empty")
            return nil
        }
        return text
    }

    mutating func bool(_ value: JSONValue?, _ path: String) -> Bool? {
        guard let value else { return nil }
        guard let flag = value.boolValue else {
            problem(path, "expected true or false, found \(value.kindName)")
            return nil
        }
        return flag
    }

    mutating func integer(_ value: JSONValue?, _ path: String, in range: ClosedRange<Int>) -> Int? {
        guard let value else { return nil }
        guard let number = value.integerValue else {
            problem(path, value.numberValue != nil ? "expected a whole number, found \(formatNumber(value.numberValue!))"
                : "expected a whole number, found \(value.kindName)")
            return nil
        }
        guard range.contains(number) else {
            problem(path, "\(number) is out of range", hint: "use \(range.lowerBound)...\(range.upperBound)")
            return nil
        }
        return number
    }

    mutating func number(_ value: JSONValue?, _ path: String, minimum: Double, maximum: Double) -> Double? {
        guard let value else { return nil }
        guard let number = value.numberValue else {
            problem(path, "expected a number, found \(value.kindName)")
            return nil
        }
        guard number >= minimum, number <= maximum else {
            problem(path, "\(formatNumber(number)) is out of range", hint: "use \(formatNumber(minimum))...\(formatNumber(maximum))")
            return nil
        }
        return number
    }

    mutating func duration(_ value: JSONValue?, _ path: String, minimum: Duration = .zero) -> Duration? {
        guard let value else { return nil }
        guard let text = value.stringValue else {
            problem(path, "expected a duration string, found \(value.kindName)", hint: "use 500ms, 10s, 5m, 2h")
            return nil
        }
        guard let duration = parseDuration(text) else {
            problem(path, "\"\(text)\" is not a duration", hint: "use 500ms, 10s, 5m, 2h")
            return nil
        }
        guard duration >= minimum else {
            problem(path, "\"\(text)\" is too short", hint: "at least \(formatDuration(minimum))")
            return nil
        }
        return duration
    }

    mutating func choice<T: RawRepresentable & CaseIterable>(_ value: JSONValue?, _ path: String, as type: T.Type) -> T?
    where T.RawValue == String {
        guard let text = string(value, path) else { return nil }
        if let choice = T(rawValue: text) { return choice }
        let names = T.allCases.map(\.rawValue)
        problem(path, "\"\(text)\" is not one of " + names.map { "\"\($0)\"" }.joined(separator: ", "),
            hint: suggestion(for: text, among: names))
        return nil
    }

    mutating func array(_ value: JSONValue?, _ path: String) -> [JSONValue]? {
        guard let value else { return nil }
        guard let elements = value.arrayValue else {
            problem(path, "expected an array, found \(value.kindName)")
            return nil
        }
        return elements
    }

    // MARK: The profile

    mutating func profile(_ document: JSONValue) -> Profile? {
        guard let root = object(document, "", kind: "profile") else { return nil }
        var version = Profile.currentVersion
        if let value = required(root, "version", "", hint: "this build reads version \(Profile.currentVersion)") {
            if let number = integer(value, "version", in: 1...Int.max) {
                if number != Profile.currentVersion {
                    problem("version", "version \(number) is not supported", hint: "this build reads version \(Profile.currentVersion)")
                }
                version = number
            }
        }
        let name = required(root, "name", "").flatMap { string($0, "name") }
        if let name, !name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) {
            problem("name", "\"\(name)\" may only hold letters, digits, '-', '_' and '.'", hint: "it names the report file")
        }
        _ = string(root["description"], "description", nonEmpty: false)
        let target = required(root, "target", "", hint: "a ws:// or wss:// URL, or \"embedded\"").flatMap { self.target($0) }
        let tls = self.tlsOptions(root["tls"])
        let headers = self.headers(root["headers"])
        let authentication = self.authentication(root["auth"])
        let duration = required(root, "duration", "").flatMap { self.duration($0, "duration", minimum: .milliseconds(1)) }
        let gracefulStop = self.duration(root["gracefulStop"], "gracefulStop") ?? .seconds(5)
        let loops = integer(root["loops"], "loops", in: 1...256)
        let seed = integer(root["seed"], "seed", in: 0...Int.max).map { UInt64($0) }
        var scenarios: [Scenario] = []
        if let list = required(root, "scenarios", "").flatMap({ array($0, "scenarios") }) {
            if list.isEmpty { problem("scenarios", "must hold at least one scenario") }
            for (index, element) in list.enumerated() {
                if let scenario = self.scenario(element, "scenarios[\(index)]") { scenarios.append(scenario) }
            }
            var seen: Set<String> = []
            for (index, scenario) in scenarios.enumerated() where !seen.insert(scenario.name).inserted {
                problem("scenarios[\(index)].name", "\"\(scenario.name)\" names two scenarios", hint: "names must be unique")
            }
        }
        let thresholds = self.thresholds(root["thresholds"], scenarioNames: Set(scenarios.map(\.name)))
        let chaos = self.chaos(root["chaos"], target: target, duration: duration)
        let report = reportOptions(root["report"])
        if case .embedded? = target, tls.caFile != nil || tls.serverName != nil {
            problem("tls", "the embedded target speaks plain ws://", hint: "remove tls, or target a wss:// URL")
        }
        guard problems.isEmpty, let name, let target, let duration else { return nil }
        var profile = Profile(version: version, name: name, target: target, duration: duration, scenarios: scenarios)
        profile.tls = tls
        profile.headers = headers
        profile.authentication = authentication
        profile.gracefulStop = gracefulStop
        profile.loops = loops
        profile.seed = seed
        profile.thresholds = thresholds
        profile.chaos = chaos
        profile.report = report
        return profile
    }

    mutating func target(_ value: JSONValue) -> Profile.Target? {
        guard let text = string(value, "target") else { return nil }
        if text == "embedded" { return .embedded }
        do {
            return .url(try WebSocketURL(text))
        } catch {
            problem("target", error.description, hint: "e.g. ws://127.0.0.1:8080/ws, or \"embedded\"")
            return nil
        }
    }

    mutating func tlsOptions(_ value: JSONValue?) -> Profile.TLSOptions {
        var options = Profile.TLSOptions()
        guard let object = object(value, "tls", kind: "tls") else { return options }
        options.caFile = string(object["caFile"], "tls.caFile")
        options.isInsecure = bool(object["insecure"], "tls.insecure") ?? false
        options.serverName = string(object["serverName"], "tls.serverName")
        if options.isInsecure && options.caFile != nil {
            problem("tls.insecure", "insecure and caFile contradict each other", hint: "verify with caFile, or set insecure alone")
        }
        return options
    }

    mutating func headers(_ value: JSONValue?) -> [(name: String, value: String)] {
        guard let value else { return [] }
        guard let object = value.objectValue else {
            problem("headers", "expected an object of header names to values, found \(value.kindName)")
            return []
        }
        let reserved = ["host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
                        "sec-websocket-extensions", "sec-websocket-protocol", "content-length", "transfer-encoding"]
        var headers: [(name: String, value: String)] = []
        for (name, element) in object.members {
            let path = "headers." + name
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else {
                problem(path, "\"\(name)\" is not a valid header name")
                continue
            }
            if reserved.contains(name.lowercased()) {
                problem(path, "\(name) is set by the handshake itself",
                        hint: name.lowercased() == "sec-websocket-protocol" ? "use the scenario's subprotocols" : nil)
                continue
            }
            if name.lowercased() == "authorization" {
                problem(path, "a credential in the profile would be copied wherever the profile goes",
                        hint: "use auth with tokenEnv or tokenFile")
                continue
            }
            guard let text = string(element, path, nonEmpty: false) else { continue }
            guard !text.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                problem(path, "header values cannot contain CR, LF or NUL")
                continue
            }
            headers.append((name, text))
        }
        return headers
    }

    mutating func authentication(_ value: JSONValue?) -> Profile.Authentication? {
        guard let object = object(value, "auth", kind: "auth") else { return nil }
        enum Kind: String, CaseIterable { case bearer, header, query }
        let kind = required(object, "type", "auth", hint: "bearer, header or query").flatMap { choice($0, "auth.type", as: Kind.self) }
        let name = string(object["name"], "auth.name")
        let environment = string(object["tokenEnv"], "auth.tokenEnv")
        let file = string(object["tokenFile"], "auth.tokenFile")
        let source: Profile.Authentication.Source?
        switch (environment, file) {
        case (let variable?, nil): source = .environment(variable)
        case (nil, let path?): source = .file(path)
        case (.some, .some):
            problem("auth", "tokenEnv and tokenFile are both set", hint: "choose one")
            source = nil
        case (nil, nil):
            if object["tokenEnv"] == nil && object["tokenFile"] == nil {
                problem("auth", "needs tokenEnv or tokenFile", hint: "the token itself never goes in a profile")
            }
            source = nil
        }
        let placement: Profile.Authentication.Placement?
        switch kind {
        case .bearer?:
            if name != nil { problem("auth.name", "a bearer token needs no name", hint: "name is for header and query") }
            placement = .bearer
        case .header?, .query?:
            if let name {
                if kind == .header && !name.utf8.allSatisfy(isTokenByte) {
                    problem("auth.name", "\"\(name)\" is not a valid header name")
                }
                placement = kind == .header ? .header(name: name) : .query(name: name)
            } else {
                if object["name"] == nil { problem("auth.name", "is required for type \(kind!.rawValue)") }
                placement = nil
            }
        case nil: placement = nil
        }
        guard let placement, let source else { return nil }
        return Profile.Authentication(placement: placement, source: source)
    }

    /// The `chaos` timeline: faults applied to the embedded server at moments of the run.
    mutating func chaos(_ value: JSONValue?, target: Profile.Target?, duration: Duration?) -> [ChaosEvent] {
        guard let list = array(value, "chaos") else { return [] }
        if target != nil && target != .embedded {
            problem("chaos", "a chaos timeline acts on the embedded server", hint: "set \"target\": \"embedded\"")
        }
        var events: [ChaosEvent] = []
        for (index, element) in list.enumerated() {
            let path = "chaos[\(index)]"
            guard let object = object(element, path, kind: "chaos") else { continue }
            let at = required(object, "at", path).flatMap { self.duration($0, Self.join(path, "at")) }
            if let at, let duration, at >= duration {
                problem(Self.join(path, "at"), "\(formatDuration(at)) is not within the run's duration (\(formatDuration(duration)))")
            }
            let fraction = number(object["fraction"], Self.join(path, "fraction"), minimum: 0, maximum: 1) ?? 1
            let pause = self.duration(object["for"], Self.join(path, "for"), minimum: .milliseconds(1))
            guard let actionName = required(object, "action", path, hint: "kill, reset, close, stall or restart").flatMap({
                string($0, Self.join(path, "action"))
            }) else { continue }
            let action: ServerChaosAction?
            switch actionName {
            case "kill":
                action = .kill(fraction: fraction)
            case "reset":
                action = .reset(fraction: fraction)
            case "close":
                let code = integer(object["code"], Self.join(path, "code"), in: 1000...4999) ?? 1001
                let closeCode = WebSocketCloseCode(rawValue: UInt16(code))
                if !closeCode.isValidOnWire { problem(Self.join(path, "code"), "\(code) may not be sent in a close frame") }
                action = .close(code: closeCode, fraction: fraction)
            case "stall":
                if pause == nil && object["for"] == nil { problem(Self.join(path, "for"), "is required for stall", hint: "e.g. \"5s\"") }
                action = pause.map { .stall(duration: $0, fraction: fraction) }
            case "restart":
                if pause == nil && object["for"] == nil { problem(Self.join(path, "for"), "is required for restart", hint: "e.g. \"2s\"") }
                if object["fraction"] != nil { problem(Self.join(path, "fraction"), "a restart drops every connection") }
                action = pause.map { .restart(downFor: $0) }
            default:
                problem(Self.join(path, "action"), "\"\(actionName)\" is not kill, reset, close, stall or restart",
                        hint: suggestion(for: actionName, among: ["kill", "reset", "close", "stall", "restart"]))
                action = nil
            }
            if actionName != "close" && object["code"] != nil { problem(Self.join(path, "code"), "only close sends a code") }
            if actionName != "stall" && actionName != "restart" && object["for"] != nil {
                problem(Self.join(path, "for"), "only stall and restart last")
            }
            if let at, let action { events.append(ChaosEvent(at: at, action: action)) }
        }
        return events.sorted { $0.at < $1.at }
    }

    mutating func reportOptions(_ value: JSONValue?) -> Profile.ReportOptions {
        var options = Profile.ReportOptions()
        guard let object = object(value, "report", kind: "report") else { return options }
        if let directory = string(object["directory"], "report.directory") { options.directory = directory }
        if let interval = duration(object["interval"], "report.interval", minimum: .milliseconds(100)) {
            options.interval = interval
        }
        return options
    }

    // MARK: Scenarios

    mutating func scenario(_ value: JSONValue, _ path: String) -> Scenario? {
        guard let object = object(value, path, kind: "scenario") else { return nil }
        let problemsBefore = problems.count
        let name = required(object, "name", path).flatMap { string($0, Self.join(path, "name")) }
        let kind = choice(object["kind"], Self.join(path, "kind"), as: Scenario.Kind.self) ?? .websocket
        let startAfter = duration(object["startAfter"], Self.join(path, "startAfter")) ?? .zero
        if kind != .websocket {
            return transferScenario(object, path, name: name, kind: kind, startAfter: startAfter, problemsBefore: problemsBefore)
        }
        if object["transfer"] != nil {
            problem(Self.join(path, "transfer"), "only download and upload scenarios transfer", hint: "set \"kind\"")
        }
        let pattern = required(object, "pattern", path, hint: "echo, idle, receive or typed").flatMap {
            choice($0, Self.join(path, "pattern"), as: WebSocketScenario.Pattern.self)
        }
        var websocket = WebSocketScenario(pattern: pattern ?? .echo, connections: 0)
        if let text = string(object["path"], Self.join(path, "path")) {
            if text.hasPrefix("/") && !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7f }) {
                websocket.path = text
            } else {
                problem(Self.join(path, "path"), "\"\(text)\" is not a request path", hint: "it starts with / and has no spaces")
            }
        }
        concurrency(object, path, into: &websocket)
        websocket.pingInterval = duration(object["pingInterval"], Self.join(path, "pingInterval"), minimum: .milliseconds(10))
        if let timeout = duration(object["pingTimeout"], Self.join(path, "pingTimeout"), minimum: .milliseconds(10)) {
            websocket.pingTimeout = timeout
        }
        if pattern == .idle && websocket.pingInterval == nil && object["pingInterval"] == nil {
            problem(Self.join(path, "pingInterval"), "is required for the idle pattern", hint: "e.g. \"30s\"")
        }
        websocket.reconnect = reconnect(object["reconnect"], Self.join(path, "reconnect"))
        if let list = array(object["subprotocols"], Self.join(path, "subprotocols")) {
            for (index, element) in list.enumerated() {
                let elementPath = Self.join(path, "subprotocols") + "[\(index)]"
                guard let text = string(element, elementPath) else { continue }
                if text.utf8.allSatisfy(isTokenByte) { websocket.subprotocols.append(text) } else {
                    problem(elementPath, "\"\(text)\" is not a valid subprotocol token", hint: "RFC 6455 §4.1: an HTTP token")
                }
            }
        }
        websocket.compression = bool(object["compression"], Self.join(path, "compression")) ?? false
        message(object["message"], Self.join(path, "message"), into: &websocket)
        let connectionCount = websocket.connections
        if let schedule = self.schedule(object["schedule"], Self.join(path, "schedule"), connections: connectionCount) {
            websocket.schedule = schedule
            if case .open = schedule, pattern == .idle || pattern == .receive {
                problem(Self.join(path, "schedule"), "the \(pattern!.rawValue) pattern sends no requests",
                        hint: "schedule applies to echo and typed")
            }
        }
        websocket.messagesPerConnection = integer(object["messagesPerConnection"], Self.join(path, "messagesPerConnection"), in: 1...Int.max)
        websocket.subscribe = string(object["subscribe"], Self.join(path, "subscribe"), nonEmpty: false)
        if websocket.subscribe != nil && pattern != .receive {
            problem(Self.join(path, "subscribe"), "only the receive pattern subscribes")
        }
        if let typeName = string(object["typeName"], Self.join(path, "typeName")) {
            websocket.typeName = typeName
            if pattern != .typed { problem(Self.join(path, "typeName"), "only the typed pattern sends envelopes") }
        }
        let headerSize = EchoPayload.headerSize * (websocket.messageFormat == .text ? 2 : 1)
        if pattern == .echo, websocket.messageSize.minimum < headerSize {
            problem(Self.join(path, "message.size"),
                    "echo \(websocket.messageFormat.rawValue) messages carry a \(headerSize)-byte sequence header",
                    hint: "use sizes of at least \(headerSize)")
        }
        guard problems.count == problemsBefore, let name, pattern != nil else { return nil }
        return Scenario(name: name, kind: kind, startAfter: startAfter, websocket: websocket)
    }

    /// `connections` and `stages`: how many connections (or transfers at once) and how they ramp.
    mutating func concurrency(_ object: JSONObject, _ path: String, into websocket: inout WebSocketScenario) {
        let connections = integer(object["connections"], Self.join(path, "connections"), in: 1...ProfileDecoder.maximumConnections)
        var stages: [WebSocketScenario.Stage] = []
        if let list = array(object["stages"], Self.join(path, "stages")) {
            if list.isEmpty { problem(Self.join(path, "stages"), "must hold at least one stage, or be left out") }
            for (index, element) in list.enumerated() {
                let stagePath = Self.join(path, "stages") + "[\(index)]"
                guard let stage = self.object(element, stagePath, kind: "stage") else { continue }
                let target = required(stage, "target", stagePath).flatMap {
                    integer($0, Self.join(stagePath, "target"), in: 0...ProfileDecoder.maximumConnections)
                }
                let duration = required(stage, "duration", stagePath).flatMap { self.duration($0, Self.join(stagePath, "duration")) }
                if let target, let duration { stages.append(.init(target: target, duration: duration)) }
            }
        }
        if connections == nil && object["connections"] == nil && object["stages"] == nil {
            problem(Self.join(path, "connections"), "is required", hint: "or give stages")
        }
        if let connections, !stages.isEmpty, connections != stages.map(\.target).max() {
            problem(Self.join(path, "connections"), "\(connections) disagrees with the stages' peak \(stages.map(\.target).max()!)",
                    hint: "leave connections out when giving stages")
        }
        websocket.connections = connections ?? stages.map(\.target).max() ?? 0
        if !stages.isEmpty && websocket.connections == 0 {
            problem(Self.join(path, "stages"), "no stage has a target above 0")
        }
        websocket.stages = stages
    }

    /// A download or upload scenario: concurrency (`connections`, `stages`) and the `transfer` object.
    mutating func transferScenario(
        _ object: JSONObject, _ path: String, name: String?, kind: Scenario.Kind, startAfter: Duration, problemsBefore: Int
    ) -> Scenario? {
        let websocketOnly = ["pattern", "path", "pingInterval", "pingTimeout", "reconnect", "subprotocols", "compression", "message",
                             "schedule", "messagesPerConnection", "subscribe", "typeName"]
        for key in websocketOnly where object[key] != nil {
            problem(Self.join(path, key), "is for websocket scenarios", hint: "transfer settings go in \"transfer\"")
        }
        var websocket = WebSocketScenario(pattern: .idle, connections: 0)
        concurrency(object, path, into: &websocket)
        let transferPath = Self.join(path, "transfer")
        var transfer = TransferScenario()
        if let body = required(object, "transfer", path).flatMap({ self.object($0, transferPath, kind: "transfer") }) {
            if let url = string(body["url"], Self.join(transferPath, "url")) {
                if (try? HTTPURL(url)) != nil { transfer.url = url } else {
                    problem(Self.join(transferPath, "url"), "\"\(url)\" is not an http:// or https:// URL")
                }
            }
            if let text = string(body["path"], Self.join(transferPath, "path")) {
                if text.hasPrefix("/") && !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7f }) { transfer.path = text } else {
                    problem(Self.join(transferPath, "path"), "\"\(text)\" is not a request path", hint: "it starts with / and has no spaces")
                }
            }
            transfer.size = byteSize(body["size"], Self.join(transferPath, "size"))
            transfer.file = string(body["file"], Self.join(transferPath, "file"))
            transfer.segments = integer(body["segments"], Self.join(transferPath, "segments"), in: 1...1024) ?? 1
            transfer.connectionsPerTransfer = integer(body["connections"], Self.join(transferPath, "connections"), in: 1...1024)
            if let size = byteSize(body["minSegmentSize"], Self.join(transferPath, "minSegmentSize")) {
                if size > 0 { transfer.minimumSegmentSize = size } else { problem(Self.join(transferPath, "minSegmentSize"), "must be above 0") }
            }
            transfer.repeats = integer(body["repeats"], Self.join(transferPath, "repeats"), in: 1...Int.max)
            transfer.interruptProbability = number(body["interrupt"], Self.join(transferPath, "interrupt"), minimum: 0, maximum: 1) ?? 0
            if let method = string(body["method"], Self.join(transferPath, "method")) {
                if method == "PUT" || method == "POST" { transfer.method = method } else {
                    problem(Self.join(transferPath, "method"), "\"\(method)\" is not PUT or POST")
                }
            }
            transfer.isMultipart = bool(body["multipart"], Self.join(transferPath, "multipart")) ?? false
            if let hex = string(body["sha256"], Self.join(transferPath, "sha256")) {
                if let bytes = hexBytes(hex), bytes.count == 32 { transfer.sha256 = bytes } else {
                    problem(Self.join(transferPath, "sha256"), "\"\(hex)\" is not 64 hex digits")
                }
            }
            if let limit = byteSize(body["bandwidthLimit"], Self.join(transferPath, "bandwidthLimit")) {
                if limit > 0 { transfer.bandwidthLimit = limit } else { problem(Self.join(transferPath, "bandwidthLimit"), "must be above 0") }
            }
            if let timeout = duration(body["requestTimeout"], Self.join(transferPath, "requestTimeout"), minimum: .milliseconds(10)) {
                transfer.requestTimeout = timeout
            }
            transfer.retry = reconnect(body["retry"], Self.join(transferPath, "retry"), kind: "retry")
            transfer.directory = string(body["directory"], Self.join(transferPath, "directory"))
            transfer.keepsFiles = bool(body["keepFiles"], Self.join(transferPath, "keepFiles")) ?? false
            let sources = [body["url"], body["path"], body["size"]].compactMap { $0 }.count
            if kind == .download {
                if sources != 1 {
                    problem(transferPath, "a download needs exactly one of url, path or size",
                            hint: "size downloads the embedded server's generated /bytes/<size>")
                }
                for key in ["file", "method", "multipart"] where body[key] != nil {
                    problem(Self.join(transferPath, key), "is for uploads")
                }
                if transfer.keepsFiles && transfer.directory == nil {
                    problem(Self.join(transferPath, "keepFiles"), "needs a directory to keep the files in")
                }
            } else {
                if (body["file"] == nil) == (body["size"] == nil) {
                    problem(transferPath, "an upload needs exactly one of file or size", hint: "size uploads a generated file")
                }
                if body["url"] != nil && body["path"] != nil { problem(transferPath, "give url or path, not both") }
                for key in ["segments", "connections", "minSegmentSize", "interrupt", "sha256", "directory", "keepFiles"]
                where body[key] != nil {
                    problem(Self.join(transferPath, key), "is for downloads")
                }
            }
        }
        guard problems.count == problemsBefore, let name else { return nil }
        return Scenario(name: name, kind: kind, startAfter: startAfter, websocket: websocket, transfer: transfer)
    }

    mutating func byteSize(_ value: JSONValue?, _ path: String) -> Int64? {
        guard let value else { return nil }
        if let number = value.numberValue, number >= 0, number.rounded() == number, number < 9e15 { return Int64(number) }
        guard let text = value.stringValue, let size = parseByteSize(text) else {
            problem(path, "\(value.stringValue.map { "\"\($0)\"" } ?? value.kindName) is not a size", hint: "use 65536, 512KiB, 256MiB, 1GiB")
            return nil
        }
        return size
    }

    mutating func reconnect(_ value: JSONValue?, _ path: String, kind: String = "reconnect") -> ReconnectPolicy? {
        guard let object = object(value, path, kind: kind) else { return nil }
        var policy = ReconnectPolicy()
        if let initial = duration(object["initial"], Self.join(path, "initial"), minimum: .milliseconds(1)) {
            policy.initialDelay = initial
        }
        if let maximum = duration(object["max"], Self.join(path, "max"), minimum: .milliseconds(1)) {
            policy.maximumDelay = maximum
        }
        if let multiplier = number(object["multiplier"], Self.join(path, "multiplier"), minimum: 1, maximum: 100) {
            policy.multiplier = multiplier
        }
        if let jitter = choice(object["jitter"], Self.join(path, "jitter"), as: ReconnectPolicy.Jitter.self) {
            policy.jitter = jitter
        }
        if let attempts = integer(object["maxAttempts"], Self.join(path, "maxAttempts"), in: 1...Int.max) {
            policy.maximumAttempts = attempts
        }
        if policy.maximumDelay < policy.initialDelay {
            problem(Self.join(path, "max"), "is below initial (\(formatDuration(policy.initialDelay)))")
        }
        return policy
    }

    mutating func message(_ value: JSONValue?, _ path: String, into websocket: inout WebSocketScenario) {
        guard let object = object(value, path, kind: "message") else { return }
        if let format = choice(object["format"], Self.join(path, "format"), as: WebSocketScenario.MessageFormat.self) {
            websocket.messageFormat = format
        }
        guard let size = object["size"] else { return }
        let sizePath = Self.join(path, "size")
        let limit = 0...ProfileDecoder.maximumMessageSize
        switch size {
        case .number:
            if let fixed = integer(size, sizePath, in: limit) { websocket.messageSize = .fixed(fixed) }
        case .object:
            guard let range = self.object(size, sizePath, kind: "sizeRange") else { return }
            let minimum = required(range, "min", sizePath).flatMap { integer($0, Self.join(sizePath, "min"), in: limit) }
            let maximum = required(range, "max", sizePath).flatMap { integer($0, Self.join(sizePath, "max"), in: limit) }
            guard let minimum, let maximum else { return }
            if minimum > maximum {
                problem(Self.join(sizePath, "min"), "\(minimum) is above max \(maximum)")
            } else {
                websocket.messageSize = .uniform(minimum...maximum)
            }
        case .array(let elements):
            var choices: [(size: Int, weight: Double)] = []
            if elements.isEmpty { problem(sizePath, "must hold at least one choice") }
            for (index, element) in elements.enumerated() {
                let choicePath = sizePath + "[\(index)]"
                guard let choice = self.object(element, choicePath, kind: "sizeChoice") else { continue }
                let size = required(choice, "size", choicePath).flatMap { integer($0, Self.join(choicePath, "size"), in: limit) }
                let weight = number(choice["weight"], Self.join(choicePath, "weight"), minimum: 0, maximum: 1e9) ?? 1
                if let size { choices.append((size, weight)) }
            }
            if !choices.isEmpty && choices.allSatisfy({ $0.weight == 0 }) {
                problem(sizePath, "every weight is 0")
            } else if choices.count == elements.count && !elements.isEmpty {
                websocket.messageSize = .weighted(choices)
            }
        default:
            problem(sizePath, "expected a size in bytes, {\"min\", \"max\"} or [{\"size\", \"weight\"}], found \(size.kindName)")
        }
    }

    mutating func schedule(_ value: JSONValue?, _ path: String, connections: Int) -> WebSocketScenario.Schedule? {
        guard let object = object(value, path, kind: "schedule") else { return nil }
        enum Model: String, CaseIterable { case closed, open }
        enum Per: String, CaseIterable { case connection, total }
        guard let model = required(object, "model", path, hint: "closed or open").flatMap({
            choice($0, Self.join(path, "model"), as: Model.self)
        }) else { return nil }
        switch model {
        case .closed:
            for key in ["rate", "per"] where object[key] != nil {
                problem(Self.join(path, key), "applies to the open model only")
            }
            return .closed(thinkTime: duration(object["thinkTime"], Self.join(path, "thinkTime")) ?? .zero)
        case .open:
            if object["thinkTime"] != nil {
                problem(Self.join(path, "thinkTime"), "applies to the closed model only", hint: "the open model sends at rate")
            }
            let rate = required(object, "rate", path, hint: "messages per second").flatMap {
                number($0, Self.join(path, "rate"), minimum: 0.001, maximum: 10_000_000)
            }
            let per = choice(object["per"], Self.join(path, "per"), as: Per.self) ?? .connection
            guard let rate else { return nil }
            let perConnection = per == .connection ? rate : rate / Double(max(connections, 1))
            if perConnection > 100_000 {
                problem(Self.join(path, "rate"), "\(formatNumber(perConnection)) messages/s on one connection is beyond what one connection can carry",
                        hint: "spread the rate over more connections")
                return nil
            }
            return .open(perConnection: perConnection)
        }
    }

    // MARK: Thresholds

    mutating func thresholds(_ value: JSONValue?, scenarioNames: Set<String>) -> [Threshold] {
        guard let list = array(value, "thresholds") else { return [] }
        var thresholds: [Threshold] = []
        for (index, element) in list.enumerated() {
            let path = "thresholds[\(index)]"
            var expression: String?
            var abortOnFail = false
            var abortDelay: Duration = .zero
            if case .object = element {
                guard let object = object(element, path, kind: "threshold") else { continue }
                expression = required(object, "expression", path).flatMap { string($0, Self.join(path, "expression")) }
                abortOnFail = bool(object["abortOnFail"], Self.join(path, "abortOnFail")) ?? false
                abortDelay = duration(object["abortDelay"], Self.join(path, "abortDelay")) ?? .zero
            } else if case .string(let text) = element {
                expression = text
            } else {
                problem(path, "expected a threshold string or object, found \(element.kindName)",
                        hint: "e.g. \"\(Threshold.example)\"")
            }
            guard let expression else { continue }
            switch Threshold.parse(expression) {
            case .failure(let error):
                problem(path, error.message, hint: error.hint)
            case .success(var threshold):
                if let scenario = threshold.scenario, !scenarioNames.contains(scenario) {
                    problem(path, "no scenario is named \"\(scenario)\"",
                            hint: suggestion(for: scenario, among: scenarioNames.sorted()))
                    continue
                }
                threshold.abortOnFail = abortOnFail
                threshold.abortDelay = abortDelay
                thresholds.append(threshold)
            }
        }
        return thresholds
    }
}

/// RFC 9110 token characters (header names, subprotocols).
func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
    default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}

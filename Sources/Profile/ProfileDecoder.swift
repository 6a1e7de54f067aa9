import JSON

/// One thing wrong with a profile: where (a JSON path such as `scenarios[1].stages[0].duration`), what,
/// and how to fix it.
package struct ProfileProblem: Sendable, Equatable, CustomStringConvertible {
    package var path: String
    package var message: String
    package var hint: String?

    package var description: String {
        (path.isEmpty ? "" : path + ": ") + message + (hint.map { " (\($0))" } ?? "")
    }
}

/// Every problem found: object by object in document order, an object's unknown keys first.
package struct ProfileError: Error, Sendable, CustomStringConvertible {
    package var problems: [ProfileProblem]
    package var description: String { problems.map(\.description).joined(separator: "\n") }
}

/// Turns a profile document into a ``Profile``, checking everything before anything runs: unknown keys,
/// kinds, ranges, durations, URLs, thresholds, cross-references. Reports every problem at once.
package enum ProfileDecoder {
    /// The keys each object of the profile may have. The decoder rejects any other key with this table,
    /// and a test holds `Profiles/profile.schema.json` to it, so the schema and the decoder cannot drift.
    package static let keys: [String: [String]] = [
        "profile": [
            "$schema", "version", "name", "description", "target", "tls", "headers", "auth", "duration", "gracefulStop",
            "loops", "seed", "scenarios", "thresholds", "chaos", "report", "data",
        ],
        "chaos": ["at", "action", "fraction", "code", "for"],
        "tls": ["caFile", "insecure", "serverName"],
        "auth": ["type", "name", "tokenEnv", "tokenFile"],
        "report": ["directory", "interval", "maxIntervals"],
        "scenario": [
            "name", "kind", "startAfter", "pattern", "path", "connections", "stages", "pingInterval", "pingTimeout",
            "reconnect", "subprotocols", "compression", "message", "schedule", "messagesPerConnection", "subscribe",
            "typeName", "transfer", "steps", "protocol", "classify", "headers", "query", "socketio", "graphql",
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
        // Feeders and flows (ProfileDecoder+Flow*.swift).
        "dataSource": ["file", "format", "mode", "secret"],
        "flowStep": [
            "name", "send", "expect", "think", "loop", "group", "ping", "close", "reconnect", "mark", "if", "emit", "on",
            "query", "subscribe", "unsubscribe",
        ],
        "send": ["text", "binary", "json"],
        "bytes": ["hex", "base64"],
        "expect": ["json", "text", "binary", "any", "within", "capture", "skip", "onTimeout", "from"],
        "textMatcher": ["regex"],
        "binaryMatcher": ["length", "prefix"],
        "condition": ["path", "equals", "exists", "oneOf", "regex", "lt", "le", "gt", "ge"],
        "captureGroup": ["group"],
        "thinkRange": ["min", "max"],
        "loop": ["count", "for", "rate", "per", "steps"],
        "group": ["steps"],
        "ping": ["within", "onTimeout"],
        "close": ["code", "reason"],
        "reconnectStep": [],
        "if": ["var", "equals", "exists", "then", "else"],
        "emit": ["event", "args", "ack", "within", "match", "capture", "onTimeout"],
        "on": ["event", "match", "capture", "within", "skip", "onTimeout", "from"],
        "graphqlQuery": ["query", "variables", "operationName", "within", "match", "capture", "onTimeout"],
        "graphqlSubscribe": ["query", "variables", "operationName", "count", "within", "match", "onTimeout"],
        "classifier": ["type", "json", "text", "binary", "any"],
        "socketio": ["namespace", "auth", "timeout"],
        "graphql": ["payload", "timeout"],
    ]

    /// The largest profile read (a profile is configuration, not data).
    package static let maximumSize = 1 << 20
    /// The most connections one scenario (and one process) may ask for: the box's descriptor limit.
    package static let maximumConnections = 1_000_000
    /// The largest message a scenario may send.
    package static let maximumMessageSize = 64 << 20

    /// Decodes a chaos timeline on its own (`wsload proxy --chaos`): a JSON array of events as in a profile.
    /// - Throws: ``ProfileError`` listing every problem (paths start at `chaos`).
    package static func decodeChaos(_ bytes: [UInt8]) throws(ProfileError) -> [ChaosEvent] {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes)
        } catch {
            throw ProfileError(problems: [ProfileProblem(path: "chaos", message: "not valid JSON: \(error)", hint: nil)])
        }
        var reader = ProfileReader()
        let events = reader.chaos(document, target: nil, duration: nil)
        guard reader.problems.isEmpty else { throw ProfileError(problems: reader.problems) }
        return events
    }

    /// Decodes a profile document. - Throws: ``ProfileError`` listing every problem.
    package static func decode(_ bytes: [UInt8]) throws(ProfileError) -> Profile {
        try decode(bytes, overrides: ProfileOverrides())
    }

    /// Decodes a profile document with the command line's `overrides` written into it first, so the profile that
    /// will run is the one validated (and the one its ``Profile/document`` holds); a problem with an overridden
    /// value names the option. - Throws: ``ProfileError`` listing every problem.
    package static func decode(_ bytes: [UInt8], overrides: ProfileOverrides) throws(ProfileError) -> Profile {
        guard bytes.count <= maximumSize else {
            throw ProfileError(problems: [ProfileProblem(
                path: "", message: "the profile is \(bytes.count) bytes; the limit is \(maximumSize)", hint: nil)])
        }
        let parsed: JSONValue
        do {
            parsed = try JSONValue(parsing: bytes)
        } catch {
            throw ProfileError(problems: [ProfileProblem(path: "", message: "not valid JSON: \(error)", hint: nil)])
        }
        let document = overrides.applied(to: parsed)
        var reader = ProfileReader(overrides: overrides)
        let profile = reader.profile(document)
        guard reader.problems.isEmpty, var profile else { throw ProfileError(problems: reader.problems) }
        profile.document = document
        return profile
    }
}

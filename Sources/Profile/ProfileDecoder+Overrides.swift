import JSON

/// Command-line values that replace a profile's own (`wsload run` and `wsload validate`: `--target`, `--duration`,
/// `--seed`, `--loops`). `ProfileDecoder.decode(_:overrides:)` writes them into the document before it validates,
/// so the overridden profile meets every check the file does (a chaos timeline against an external `--target`, chaos
/// after an overridden `--duration`), its problems name the option, and the report embeds the profile that ran.
package struct ProfileOverrides: Sendable, Equatable {
    /// `--target`: a `ws://` or `wss://` URL, or `embedded`, as the profile's `target` is written.
    package var target: String?
    /// `--duration`, as the profile's `duration` is written (`10s`).
    package var duration: String?
    /// `--seed`: the profile's `seed`.
    package var seed: UInt64?
    /// `--loops`: the profile's `loops`, in the decoded profile only. Threads are the host's business (the report's
    /// `host.loops` records them), and shards run with different `--loops` on different hosts must still merge,
    /// which needs equal documents.
    package var loops: Int?

    package init(target: String? = nil, duration: String? = nil, seed: UInt64? = nil, loops: Int? = nil) {
        self.target = target
        self.duration = duration
        self.seed = seed
        self.loops = loops
    }

    /// The option that gave the top-level profile key `key`, if one did.
    func option(for key: String) -> String? {
        switch key {
        case "target": target != nil ? "--target" : nil
        case "duration": duration != nil ? "--duration" : nil
        case "seed": seed != nil ? "--seed" : nil
        case "loops": loops != nil ? "--loops" : nil
        default: nil
        }
    }

    /// `document` with the overridden keys replaced in place (appended when the file leaves them out).
    func applied(to document: JSONValue) -> JSONValue {
        // A document that is not an object is refused by the reader as it stands.
        guard var root = document.objectValue else { return document }
        if let target { root["target"] = .string(target) }
        if let duration { root["duration"] = .string(duration) }
        if let seed {
            // Profile numbers are exact below 2^53 (JSONValue holds a Double), and a report's embedded profile is
            // decoded again: a larger seed cannot be written as a number that reads back, so the document leaves it
            // out and the report's `run.seed` (a string) holds it. The decoded profile keeps it exactly.
            // (Spelled out: a bare `nil` here would be JSONValue's nil literal, `null`, which no profile reads.)
            root["seed"] = seed < 1 << 53 ? JSONValue(seed) : Optional<JSONValue>.none
        }
        return .object(root)
    }
}

import JSON

/// Command-line values that replace a profile's own (`wsload run` and `wsload validate`: `--target`, `--duration`,
/// `--seed`, `--loops`). `ProfileDecoder.decode(_:overrides:)` writes what the run is (target, duration) into the
/// document before it validates, and applies the host's choices (seed, loops) to the decoded profile,
/// so the overridden profile meets every check the file does (a chaos timeline against an external `--target`, chaos
/// after an overridden `--duration`), its problems name the option, and the report embeds the profile that ran.
package struct ProfileOverrides: Sendable, Equatable {
    /// `--target`: a `ws://` or `wss://` URL, or `embedded`, as the profile's `target` is written.
    package var target: String?
    /// `--duration`, as the profile's `duration` is written (`10s`).
    package var duration: String?
    /// `--seed`: the profile's `seed`, in the decoded profile only, like `loops`: runs of one profile with
    /// different seeds must still merge and compare as one profile (the profile digest is the document's), and the
    /// report's `run.seed` records the seed that ran.
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

    /// The option that wrote the document's top-level key `key`, if one did. Only target and duration are written
    /// into the document; the document's seed and loops are always the file's.
    func option(for key: String) -> String? {
        switch key {
        case "target": target != nil ? "--target" : nil
        case "duration": duration != nil ? "--duration" : nil
        default: nil
        }
    }

    /// `document` with the overridden keys replaced in place (appended when the file leaves them out).
    func applied(to document: JSONValue) -> JSONValue {
        // A document that is not an object is refused by the reader as it stands.
        guard var root = document.objectValue else { return document }
        if let target { root["target"] = .string(target) }
        if let duration { root["duration"] = .string(duration) }
        return .object(root)
    }
}

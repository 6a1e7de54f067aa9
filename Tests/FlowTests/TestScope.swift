import Flow
import JSON

/// A template scope with fixed values and a counting generator, for deterministic expansion tests.
struct TestScope: TemplateScope {
    var vu = 7
    var iteration = 3
    var sequence: UInt64 = 11
    var nowMilliseconds: Int64 = 1_700_000_000_123
    var randomDraws: [UInt64] = []
    var drawCount = 0
    var feeders: [String: [String: JSONValue]] = [:]
    var variables: [String: JSONValue] = [:]

    /// The listed draws in turn (repeating), or a SplitMix64 sequence from 0 when none are listed.
    mutating func nextRandom() -> UInt64 {
        defer { drawCount += 1 }
        if !randomDraws.isEmpty { return randomDraws[drawCount % randomDraws.count] }
        var z = UInt64(drawCount + 1) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    func feederValue(source: String, column: String) -> JSONValue? { feeders[source]?[column] }
    func variable(_ name: String) -> JSONValue? { variables[name] }
}

extension Result {
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
    var success: Success? { if case .success(let value) = self { value } else { nil } }
}

/// SplitMix64: a small, fast, seedable generator, so runs with the same seed repeat exactly (chaos
/// draws, jitter in tests, the load engine's schedules). Not for keys: use `SecureRandomNumberGenerator`.
public struct SeededRandomNumberGenerator: RandomNumberGenerator, Sendable, Hashable {
    private var state: UInt64

    /// - Parameter seed: the seed; nil draws one from the system generator.
    public init(seed: UInt64?) {
        var system = SystemRandomNumberGenerator()
        state = seed ?? system.next()
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }

    /// An independent generator derived from this one (e.g. one per connection).
    public mutating func split() -> SeededRandomNumberGenerator { SeededRandomNumberGenerator(seed: next()) }
}

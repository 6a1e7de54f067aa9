import Crypto
/// One of `count` equal, deterministic slices of a profile (`--shard 2/4`, 1-based as written): run
/// them in `count` processes (on one box, past the per-process file limit, or on several machines) and
/// merge their reports into the whole run.
package struct Shard: Sendable, Hashable, CustomStringConvertible {
    /// 0-based.
    package var index: Int
    package var count: Int

    package init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// Parses `i/n` with 1 ≤ i ≤ n ≤ 1000.
    package init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let position = Int(parts[0]), let count = Int(parts[1]),
            (1...1000).contains(count), (1...count).contains(position)
        else { return nil }
        self.init(index: position - 1, count: count)
    }

    package var description: String { "\(index + 1)/\(count)" }

    /// This slice's share of `total`: the slices' shares differ by at most one and sum to `total`.
    package func share(of total: Int) -> Int {
        total * (index + 1) / count - total * index / count
    }

    /// The profile this slice runs: every scenario's connections and stage targets are this slice's share
    /// (per-connection rates stay; a total rate was divided over all connections, so the slices' rates sum
    /// to it), and the seed is derived from the profile's and the slice.
    package func slice(_ profile: Profile, seed: UInt64) -> (profile: Profile, seed: UInt64) {
        var sliced = profile
        for index in sliced.scenarios.indices {
            var websocket = sliced.scenarios[index].websocket
            websocket.connections = share(of: websocket.connections)
            websocket.stages = websocket.stages.map { .init(target: share(of: $0.target), duration: $0.duration) }
            sliced.scenarios[index].websocket = websocket
        }
        // A different, well-mixed seed per slice, the same every time.
        var mixer = SeededRandomNumberGenerator(seed: seed &+ UInt64(index))
        return (sliced, mixer.next())
    }
}

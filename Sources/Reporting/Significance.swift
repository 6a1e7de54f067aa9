import Crypto
import Glibc
import Histogram

/// The tests `compare` decides significance with. Pure, deterministic (seeded), no I/O.
package enum Significance {
    /// Two-sided Mann–Whitney U test (as benchstat uses across repeated runs): the p-value that the two
    /// samples come from one distribution. Exact for small samples without ties, normal approximation
    /// with tie correction otherwise. With 3 runs a side the smallest possible p is 0.1: repeat runs
    /// 5 or more times for α = 0.05.
    package static func mannWhitney(_ first: [Double], _ second: [Double]) -> Double {
        let n1 = first.count, n2 = second.count
        guard n1 > 0, n2 > 0 else { return 1 }
        // Ranks with ties averaged.
        let pooled = (first.map { ($0, 0) } + second.map { ($0, 1) }).sorted { $0.0 < $1.0 }
        var ranks = [Double](repeating: 0, count: pooled.count)
        var tieGroups: [Int] = []
        var index = 0
        while index < pooled.count {
            var end = index
            while end + 1 < pooled.count && pooled[end + 1].0 == pooled[index].0 { end += 1 }
            let rank = Double(index + end + 2) / 2
            for position in index...end { ranks[position] = rank }
            if end > index { tieGroups.append(end - index + 1) }
            index = end + 1
        }
        let rankSum = zip(pooled, ranks).filter { $0.0.1 == 0 }.reduce(0) { $0 + $1.1 }
        let u1 = rankSum - Double(n1 * (n1 + 1)) / 2
        let u = min(u1, Double(n1 * n2) - u1)
        if tieGroups.isEmpty && n1 <= 50 && n2 <= 50 {
            // Exact: the number of arrangements with U ≤ u, by the standard recurrence.
            let distribution = exactUDistribution(n1, n2)
            let total = distribution.reduce(0, +)
            let below = distribution.prefix(Int(u) + 1).reduce(0, +)
            return min(1, 2 * below / total)
        }
        let mean = Double(n1 * n2) / 2
        let n = Double(n1 + n2)
        let tieTerm = tieGroups.reduce(0.0) { $0 + Double($1 * $1 * $1 - $1) }
        let variance = Double(n1 * n2) / 12 * ((n + 1) - tieTerm / (n * (n - 1)))
        guard variance > 0 else { return 1 }
        let z = (abs(u - mean) - 0.5) / variance.squareRoot()
        return min(1, 2 * normalUpperTail(max(0, z)))
    }

    /// Counts of arrangements giving each U (0…n1·n2) for samples of n1 and n2 without ties.
    package static func exactUDistribution(_ n1: Int, _ n2: Int) -> [Double] {
        // f[m][n][u]: arrangements of m and n items with U = u. Build up in n2 layers.
        var table = [[[Double]]](repeating: [], count: n1 + 1)
        for m in 0...n1 {
            table[m] = [[Double]](repeating: [], count: n2 + 1)
            for n in 0...n2 {
                var counts = [Double](repeating: 0, count: m * n + 1)
                if m == 0 || n == 0 {
                    counts[0] = 1
                } else {
                    // The largest item belongs to the first sample (adds n to U) or the second.
                    for (u, count) in table[m - 1][n].enumerated() where count > 0 { counts[u + n] += count }
                    for (u, count) in table[m][n - 1].enumerated() where count > 0 { counts[u] += count }
                }
                table[m][n] = counts
            }
        }
        return table[n1][n2]
    }

    /// P(Z > z) for a standard normal.
    static func normalUpperTail(_ z: Double) -> Double { 0.5 * erfc(z / 2.squareRoot()) }

    /// A bootstrap over two histograms: resamples each (every slot's count redrawn as a Poisson variable
    /// of that mean, which approximates resampling the recorded values) `replicates` times and returns
    /// the two-sided p-value that `statistic` is the same for both, from how often the resampled
    /// difference crosses zero.
    package static func bootstrap(
        _ base: Histogram, _ head: Histogram, replicates: Int = 400, seed: UInt64 = 0x5157_4C4F_4144,
        statistic: (Histogram) -> Double
    ) -> Double {
        guard base.totalCount > 0, head.totalCount > 0 else { return 1 }
        var random = SeededRandomNumberGenerator(seed: seed)
        var below = 0
        var above = 0
        for _ in 0..<replicates {
            let difference = statistic(resample(head, &random)) - statistic(resample(base, &random))
            if difference <= 0 { below += 1 }
            if difference >= 0 { above += 1 }
        }
        return min(1, 2 * Double(min(below, above) + 1) / Double(replicates + 1))
    }

    private static func resample(_ histogram: Histogram, _ random: inout SeededRandomNumberGenerator) -> Histogram {
        var copy = histogram
        copy.resampleCounts { count in poisson(mean: Double(count), &random) }
        return copy
    }

    private static func poisson(mean: Double, _ random: inout SeededRandomNumberGenerator) -> UInt64 {
        if mean > 30 {
            // Normal approximation (Box–Muller), rounded and kept non-negative.
            let u1 = random.nextUnit() + 1e-300, u2 = random.nextUnit()
            let normal = (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
            // Counts merged from reports reach UInt64.max, where a draw above the mean is 2^64 or more.
            let draw = max(0, (mean + normal * mean.squareRoot()).rounded())
            return draw >= 0x1p64 ? .max : UInt64(draw)
        }
        // Knuth: multiply uniforms until below e^-mean.
        let limit = exp(-mean)
        var product = random.nextUnit()
        var count: UInt64 = 0
        while product > limit {
            count += 1
            product *= random.nextUnit()
        }
        return count
    }

    /// Two Poisson rates (counts over durations): the two-sided p-value that they are equal.
    package static func poissonRates(_ count1: Double, _ seconds1: Double, _ count2: Double, _ seconds2: Double) -> Double {
        guard seconds1 > 0, seconds2 > 0 else { return 1 }
        let variance = count1 / (seconds1 * seconds1) + count2 / (seconds2 * seconds2)
        guard variance > 0 else { return 1 }
        let z = abs(count2 / seconds2 - count1 / seconds1) / variance.squareRoot()
        return min(1, 2 * normalUpperTail(z))
    }

    /// Two proportions (events out of trials): the two-sided p-value that they are equal.
    package static func proportions(_ events1: Double, _ trials1: Double, _ events2: Double, _ trials2: Double) -> Double {
        guard trials1 > 0, trials2 > 0 else { return 1 }
        let pooled = (events1 + events2) / (trials1 + trials2)
        let variance = pooled * (1 - pooled) * (1 / trials1 + 1 / trials2)
        guard variance > 0 else { return 1 }
        let z = abs(events2 / trials2 - events1 / trials1) / variance.squareRoot()
        return min(1, 2 * normalUpperTail(z))
    }
}

extension SeededRandomNumberGenerator {
    /// A uniform Double in [0, 1).
    mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

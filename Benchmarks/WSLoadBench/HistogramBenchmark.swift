import Crypto
import Foundation
import Histogram
import Runtime

/// What recording into, querying, merging and serializing an HDR histogram costs.
struct HistogramBenchmark {
    var samples: Int

    func run() {
        var random = SeededRandomNumberGenerator(seed: 1)
        // Lognormal-ish latencies in µs: 50 µs to minutes, so every bucket range is exercised.
        let values = (0..<samples).map { _ -> UInt64 in
            let exponent = Double(random.next() % 1_000_000) / 1_000_000 * 20
            return UInt64(50 * pow(2, exponent))
        }
        var histogram = Histogram()
        var started = ContinuousClock.now
        for value in values { histogram.record(value) }
        var elapsed = ContinuousClock.now - started
        print("histogram record: \(format(elapsed, per: samples)) ns per value (\(samples) values, \(histogram.footprintBytes / 1024) KiB of counts)")

        started = ContinuousClock.now
        for value in values { histogram.recordCorrected(value, expectedInterval: 1_000_000) }
        elapsed = ContinuousClock.now - started
        print("histogram recordCorrected (1 s interval): \(format(elapsed, per: samples)) ns per value")

        let percentiles = [50.0, 90, 99, 99.9, 99.99]
        let rounds = 200
        started = ContinuousClock.now
        var sink: UInt64 = 0
        for _ in 0..<rounds { for percentile in percentiles { sink &+= histogram.value(atPercentile: percentile) } }
        elapsed = ContinuousClock.now - started
        print("histogram percentile query: \(format(elapsed, per: rounds * percentiles.count, unit: 1_000)) µs each")

        var merged = Histogram()
        started = ContinuousClock.now
        for _ in 0..<rounds { try? merged.add(histogram) }
        elapsed = ContinuousClock.now - started
        print("histogram merge (add): \(format(elapsed, per: rounds, unit: 1_000)) µs each")

        started = ContinuousClock.now
        var blob = ""
        for _ in 0..<20 { blob = histogram.serialized() }
        elapsed = ContinuousClock.now - started
        print("histogram serialize: \(format(elapsed, per: 20, unit: 1_000)) µs each, \(blob.utf8.count) bytes of base64")
        started = ContinuousClock.now
        for _ in 0..<20 { sink &+= (try? Histogram(serialized: blob))?.totalCount ?? 0 }
        elapsed = ContinuousClock.now - started
        print("histogram decode: \(format(elapsed, per: 20, unit: 1_000)) µs each" + (sink == 0 ? " " : ""))
    }

    private func format(_ duration: Duration, per count: Int, unit: Double = 1) -> String {
        String(format: "%.2f", duration.figureNanoseconds / Double(count) / unit)
    }
}

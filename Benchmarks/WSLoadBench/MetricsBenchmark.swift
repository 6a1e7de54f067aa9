import Crypto
import Foundation
import Histogram
import LiveView
import Profile
import Reporting

/// What one `/metrics` scrape costs to render: `scenarios` scenarios, each with every latency of the catalogue,
/// throughput and `steps` flow steps (about 20 histograms), filled with `samples` values spread from 50 µs to
/// seconds, at the default 4 buckets per doubling (85 latency buckets). Times are the thread's CPU time (this box is
/// shared: wall time there measures the neighbours), median and p90 of 200 renders.
struct MetricsBenchmark {
    var scenarios: Int
    var steps: Int
    var samples: Int

    func run() {
        var random = SeededRandomNumberGenerator(seed: 1)
        func histogram() -> Histogram {
            var histogram = Histogram()
            for _ in 0..<samples {
                let exponent = Double(random.next() % 1_000_000) / 1_000_000 * 15
                histogram.record(UInt64(50 * pow(2, exponent)))
            }
            return histogram
        }
        var snapshot = MetricsSnapshot(profileName: "bench", runID: "r", shard: "")
        var histogramCount = 0
        for index in 0..<scenarios {
            var total = MetricSet()
            for metric in MetricCatalog.all where metric.kind.isHistogram {
                total.histograms[metric.name] = histogram()
            }
            for step in 0..<steps { total.histograms[MetricFamily.flowStep.name("step\(step)")] = histogram() }
            for metric in MetricCatalog.all where metric.kind == .counter { total.counters[metric.name] = random.next() % 1_000_000 }
            total.errors = ["timeout": 3, "connect": 1]
            total.disconnects = [1000: 10, 1006: 2]
            histogramCount += total.histograms.count
            snapshot.scenarios.append(.init(name: "scenario-\(index)", liveConnections: 100, targetConnections: 100, total: total))
        }
        let exposition = PrometheusExposition(bucketsPerDoubling: 4)
        let limits = exposition.latencyBounds.map(\.limit)
        var counting: [Double] = []
        var sink: UInt64 = 0
        for _ in 0..<50 {
            let started = threadMicroseconds()
            for scenario in snapshot.scenarios {
                for histogram in scenario.total.histograms.values {
                    sink &+= histogram.cumulativeCounts(atOrBelow: limits).last ?? 0
                    sink &+= UInt64(histogram.midpointSum)
                }
            }
            counting.append(threadMicroseconds() - started)
        }
        counting.sort()
        print("metrics: of which bucket counts and sums: median \(String(format: "%.0f", counting[counting.count / 2])) µs (\(sink % 2))")
        for format in [PrometheusExposition.Format.prometheus, .openMetrics] {
            var bytes = 0
            var times: [Double] = []
            for _ in 0..<200 {
                let started = threadMicroseconds()
                bytes = exposition.renderBytes(snapshot, format: format).count
                times.append(threadMicroseconds() - started)
            }
            times.sort()
            print("metrics render (\(format)): \(scenarios) scenarios × \(histogramCount / max(scenarios, 1)) histograms × "
                + "\(exposition.latencyBounds.count) buckets, \(bytes / 1024) KiB: median \(String(format: "%.0f", times[times.count / 2])) µs, "
                + "p90 \(String(format: "%.0f", times[times.count * 9 / 10])) µs")
        }
    }
}

/// The calling thread's CPU time in microseconds.
private func threadMicroseconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e6 + Double(time.tv_nsec) / 1e3
}

import Testing
@testable import Histogram

/// A sparse histogram (what compare keeps of each interval) adds exactly as the dense one it was made from.
@Suite(.timeLimit(.minutes(1))) struct SparseHistogramTests {
    private func recorded(_ values: [UInt64], highest: UInt64 = Histogram.microsecondsUpToOneHour) -> Histogram {
        var histogram = Histogram(highestTrackableValue: highest)
        for value in values { histogram.record(value) }
        return histogram
    }

    @Test("adding sparse histograms gives the dense sum, slot for slot, with totals, extremes and clamps")
    func sumsAgree() throws {
        var random = SystemRandomNumberGenerator()
        let parts = (0..<20).map { part in
            recorded((0..<(part * 37)).map { _ in UInt64.random(in: 1...5_000_000, using: &random) }
                + (part == 3 ? [Histogram.microsecondsUpToOneHour * 2] : []))  // one clamped value
        }
        var dense = Histogram()
        var fromSparse = try #require(parts.first.map(SparseHistogram.init)).emptyDense()
        for part in parts {
            try dense.add(part)
            try fromSparse.add(SparseHistogram(part))
        }
        #expect(fromSparse == dense)
        #expect(fromSparse.clampedCount == 1)
        #expect(fromSparse.value(atPercentile: 99) == dense.value(atPercentile: 99))
    }

    @Test("an empty sparse histogram adds nothing, and keeps no slot")
    func empty() throws {
        let sparse = SparseHistogram(Histogram())
        #expect(sparse.slots.isEmpty && sparse.totalCount == 0)
        var dense = recorded([5, 10])
        let before = dense
        try dense.add(sparse)
        #expect(dense == before)
    }

    @Test("a sparse histogram of another layout is refused, and nothing is added")
    func otherLayout() throws {
        var dense = recorded([5, 10])
        let before = dense
        let other = SparseHistogram(recorded([7], highest: 1_000_000))
        #expect(throws: Histogram.LayoutMismatch.self) { try dense.add(other) }
        #expect(dense == before)
    }
}

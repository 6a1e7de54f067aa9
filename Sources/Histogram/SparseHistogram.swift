/// A histogram's nonzero slots only: what a bootstrap keeps of each interval, so that hundreds of intervals cost
/// kilobytes each, not the 188 KB of a dense latency histogram. Adding one to a ``Histogram`` of its layout gives
/// exactly what adding the dense histogram gives.
package struct SparseHistogram: Sendable, Equatable {
    package let lowestDiscernibleValue: UInt64
    package let highestTrackableValue: UInt64
    package let significantDigits: Int
    /// The slots with a count, ascending, and their counts.
    let slots: [Int32]
    let counts: [UInt64]
    package let totalCount: UInt64
    let clampedCount: UInt64
    let minimumRecorded: UInt64
    let maximumRecorded: UInt64

    package init(_ histogram: Histogram) {
        lowestDiscernibleValue = histogram.lowestDiscernibleValue
        highestTrackableValue = histogram.highestTrackableValue
        significantDigits = histogram.significantDigits
        var slots: [Int32] = []
        var counts: [UInt64] = []
        if histogram.totalCount > 0 {
            for index in histogram.recordedSlots where histogram.counts[index] != 0 {
                slots.append(Int32(index))  // slot counts are bounded by the layout (far below Int32.max)
                counts.append(histogram.counts[index])
            }
        }
        self.slots = slots
        self.counts = counts
        totalCount = histogram.totalCount
        clampedCount = histogram.clampedCount
        minimumRecorded = histogram.minimumRecorded
        maximumRecorded = histogram.maximumRecorded
    }

    /// An empty dense histogram of this layout (to add sparse ones to).
    package func emptyDense() -> Histogram {
        // The layout came from a valid histogram, so it is valid.
        Histogram(validatingLowest: lowestDiscernibleValue, highest: highestTrackableValue,
                  significantDigits: significantDigits)!
    }
}

extension Histogram {
    /// Adds every count of `other`, exactly as adding the dense histogram it was made from.
    /// - Throws: ``LayoutMismatch`` if the layouts differ (nothing is added).
    package mutating func add(_ other: SparseHistogram) throws(LayoutMismatch) {
        try checkLayout(other.lowestDiscernibleValue, other.highestTrackableValue, other.significantDigits)
        guard other.totalCount > 0 else { return }
        counts.withUnsafeMutableBufferPointer { mine in
            for (slot, count) in zip(other.slots, other.counts) {
                let (sum, overflow) = mine[Int(slot)].addingReportingOverflow(count)
                mine[Int(slot)] = overflow ? .max : sum
            }
        }
        addSummary(total: other.totalCount, clamped: other.clampedCount, minimum: other.minimumRecorded,
                   maximum: other.maximumRecorded)
    }
}

extension Histogram {
    /// Whether sums over the counts fit wrapping 64-bit arithmetic exactly: the counts add up to ``totalCount``, and
    /// a count times a sub-bucket index (below 2^12 at any precision wsload uses) stays below 2^64. Only counts
    /// merged from reports can be larger; they take the checked (slower) path.
    private var isSummableWithoutOverflow: Bool { totalCount <= UInt64.max >> 12 && subBucketCount <= 1 << 12 }

    /// For each of `bounds` (ascending values), how many recorded values lie in slots wholly at or below it: the
    /// cumulative counts of a Prometheus histogram's buckets, exact at the histogram's resolution (a slot that
    /// straddles a bound counts above it, so a count never includes a value past its bound). One pass over the
    /// recorded slots, whatever the number of bounds.
    /// - Precondition: `bounds` ascending (the caller's fixed layout, never input).
    package func cumulativeCounts(atOrBelow bounds: [UInt64]) -> [UInt64] {
        var cumulative = [UInt64](repeating: 0, count: bounds.count)
        guard totalCount > 0 else { return cumulative }
        let slots = recordedSlots
        let isFast = isSummableWithoutOverflow
        var running: UInt64 = 0
        var next = slots.lowerBound
        counts.withUnsafeBufferPointer { counts in
            for (position, bound) in bounds.enumerated() {
                precondition(position == 0 || bounds[position - 1] <= bound, "bucket bounds must ascend")
                // The last slot whose every value is ≤ bound: the bound's own slot if the bound ends it, else the one before.
                let index = min(countsIndex(of: bound), counts.count - 1)
                let last = highestEquivalentValue(valueFromIndex(index)) <= bound ? index : index - 1
                let end = min(last, slots.upperBound)
                if next <= end {
                    if isFast {
                        for slot in next...end { running &+= counts[slot] }  // a plain sum the compiler vectorizes
                    } else {
                        for slot in next...end {
                            let (sum, overflow) = running.addingReportingOverflow(counts[slot])
                            running = overflow ? .max : sum
                        }
                    }
                    next = end + 1
                }
                cumulative[position] = running
            }
        }
        return cumulative
    }

    /// The sum of the recorded values, each taken as the middle of its slot: ``mean`` × ``totalCount`` (what a
    /// Prometheus histogram's `_sum` is), in one pass over the recorded slots with no index arithmetic per slot:
    /// within one bucket every slot has the same width, so the bucket's sum is Σ count × sub-bucket, scaled once by
    /// the width, plus half the width per value.
    package var midpointSum: Double {
        guard totalCount > 0 else { return 0 }
        let slots = recordedSlots
        let isFast = isSummableWithoutOverflow
        var sum = 0.0
        var index = slots.lowerBound
        counts.withUnsafeBufferPointer { counts in
            while index <= slots.upperBound {
                // Bucket 0 holds the first subBucketCount slots (sub-bucket = index); bucket b > 0 the
                // subBucketHalfCount slots whose index >> subBucketHalfCountMagnitude is b + 1 (sub-buckets from
                // subBucketHalfCount up).
                let isFirst = index < subBucketCount
                let bucketIndex = isFirst ? 0 : (index >> subBucketHalfCountMagnitude) - 1
                let end = min(isFirst ? subBucketCount - 1 : ((bucketIndex + 2) << subBucketHalfCountMagnitude) - 1, slots.upperBound)
                let firstSubBucket = UInt64(isFirst ? index : (index & (subBucketHalfCount - 1)) + subBucketHalfCount)
                var weightedSum = 0.0
                var valueSum = 0.0
                if isFast {
                    var weighted: UInt64 = 0
                    var values: UInt64 = 0
                    var subBucket = firstSubBucket
                    for slot in index...end {
                        weighted &+= counts[slot] &* subBucket
                        values &+= counts[slot]
                        subBucket &+= 1
                    }
                    weightedSum = Double(weighted)
                    valueSum = Double(values)
                } else {
                    for (offset, slot) in (index...end).enumerated() {
                        weightedSum += Double(counts[slot]) * Double(firstSubBucket + UInt64(offset))
                        valueSum += Double(counts[slot])
                    }
                }
                let width = Double(UInt64(1) << UInt64(bucketIndex + unitMagnitude))
                sum += weightedSum * width + valueSum * (width / 2).rounded(.down)
                index = end + 1
            }
        }
        return sum
    }
}

extension Histogram {
    /// For each of `bounds` (ascending values), how many recorded values lie in slots wholly at or below it: the
    /// cumulative counts of a Prometheus histogram's buckets, exact at the histogram's resolution (a slot that
    /// straddles a bound counts above it, so a count never includes a value past its bound). One pass over the
    /// recorded slots, whatever the number of bounds.
    /// - Precondition: `bounds` ascending (the caller's fixed layout, never input).
    package func cumulativeCounts(atOrBelow bounds: [UInt64]) -> [UInt64] {
        var cumulative = [UInt64](repeating: 0, count: bounds.count)
        guard totalCount > 0 else { return cumulative }
        let slots = recordedSlots
        var running: UInt64 = 0
        var next = slots.lowerBound
        for (position, bound) in bounds.enumerated() {
            precondition(position == 0 || bounds[position - 1] <= bound, "bucket bounds must ascend")
            // The last slot whose every value is ≤ bound: the bound's own slot if the bound ends it, else the one before.
            let index = min(countsIndex(of: bound), counts.count - 1)
            let last = highestEquivalentValue(valueFromIndex(index)) <= bound ? index : index - 1
            let end = min(last, slots.upperBound)
            if next <= end {
                for slot in next...end {
                    let (sum, overflow) = running.addingReportingOverflow(counts[slot])
                    running = overflow ? .max : sum
                }
                next = end + 1
            }
            cumulative[position] = running
        }
        return cumulative
    }
}

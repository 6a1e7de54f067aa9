/// A High Dynamic Range histogram of non-negative integer values (wsload records microseconds), laid out
/// exactly as HdrHistogram_c lays it out so that percentiles, merges and the serialized form agree with
/// every other HdrHistogram implementation.
///
/// Values are grouped in buckets whose width doubles; each bucket has `subBucketCount` linear slots, so a
/// value is stored with a relative error of at most 10^-significantDigits. Recording is O(1) and never
/// allocates: the counts array is sized once at init from the trackable range.
package struct Histogram: Sendable, Equatable {
    /// The smallest value distinguishable from 0 (values are rounded down to multiples of it).
    package let lowestDiscernibleValue: UInt64
    /// The largest value recorded as such; larger values are clamped to it and counted in ``clampedCount``.
    package let highestTrackableValue: UInt64
    /// Decimal digits of precision kept for every value (1–5).
    package let significantDigits: Int

    let unitMagnitude: Int
    let subBucketHalfCountMagnitude: Int
    let subBucketCount: Int
    let subBucketHalfCount: Int
    let subBucketMask: UInt64
    let leadingZeroCountBase: Int
    let bucketCount: Int
    var counts: [UInt64]

    /// The number of values recorded.
    package internal(set) var totalCount: UInt64 = 0
    /// How many recorded values exceeded ``highestTrackableValue`` and were stored as it.
    package private(set) var clampedCount: UInt64 = 0
    /// The exact smallest and largest values recorded (`UInt64.max` / 0 when empty).
    package internal(set) var minimumRecorded: UInt64 = .max
    package internal(set) var maximumRecorded: UInt64 = 0

    /// The default for latencies in microseconds: 1 µs to one hour at 3 significant digits (188 KB).
    package static let microsecondsUpToOneHour: UInt64 = 3_600_000_000

    /// - Precondition: `lowestDiscernibleValue >= 1`, `highestTrackableValue >= 2 * lowestDiscernibleValue`,
    ///   `1...5 ~= significantDigits` (programmer errors: the layout is chosen by code, never by input;
    ///   decoding untrusted layouts goes through ``init(validatingLowest:highest:significantDigits:)``).
    package init(
        lowestDiscernibleValue: UInt64 = 1,
        highestTrackableValue: UInt64 = Histogram.microsecondsUpToOneHour,
        significantDigits: Int = 3
    ) {
        guard let histogram = Histogram(
            validatingLowest: lowestDiscernibleValue, highest: highestTrackableValue, significantDigits: significantDigits)
        else {
            preconditionFailure("invalid histogram layout \(lowestDiscernibleValue)...\(highestTrackableValue)/\(significantDigits)")
        }
        self = histogram
    }

    /// The layout for the given range, or nil if it is not a valid HdrHistogram layout or needs more than
    /// `maximumSlots` counts (checked before the counts are allocated: refusing an untrusted layout costs nothing).
    package init?(validatingLowest lowest: UInt64, highest: UInt64, significantDigits: Int, maximumSlots: Int = .max) {
        guard let layout = Layout(lowest: lowest, highest: highest, significantDigits: significantDigits),
            layout.slots <= maximumSlots
        else { return nil }
        lowestDiscernibleValue = lowest
        highestTrackableValue = highest
        self.significantDigits = significantDigits
        unitMagnitude = layout.unitMagnitude
        subBucketHalfCountMagnitude = layout.subBucketHalfCountMagnitude
        subBucketCount = 1 << (subBucketHalfCountMagnitude + 1)
        subBucketHalfCount = subBucketCount / 2
        subBucketMask = UInt64(subBucketCount - 1) << UInt64(unitMagnitude)
        leadingZeroCountBase = 64 - unitMagnitude - subBucketHalfCountMagnitude - 1
        bucketCount = layout.buckets
        counts = [UInt64](repeating: 0, count: layout.slots)
    }

    /// How many counts the layout for `lowest...highest` at `significantDigits` holds, computed without
    /// allocating them; nil for an invalid layout.
    package static func slotCount(lowest: UInt64, highest: UInt64, significantDigits: Int) -> Int? {
        Layout(lowest: lowest, highest: highest, significantDigits: significantDigits)?.slots
    }

    /// The shape of a layout, computed from its range alone.
    private struct Layout {
        var unitMagnitude: Int
        var subBucketHalfCountMagnitude: Int
        var buckets: Int
        /// `(buckets + 1) * subBucketHalfCount`: at most 65 buckets of at most 2^17: no overflow.
        var slots: Int

        init?(lowest: UInt64, highest: UInt64, significantDigits: Int) {
            guard lowest >= 1, highest / 2 >= lowest, highest <= UInt64(Int64.max), (1...5).contains(significantDigits)
            else { return nil }
            var largestSingleUnit = 2
            for _ in 0..<significantDigits { largestSingleUnit *= 10 }
            unitMagnitude = 63 - lowest.leadingZeroBitCount
            let subBucketCountMagnitude = Int.bitWidth - (largestSingleUnit - 1).leadingZeroBitCount  // ceil(log2)
            subBucketHalfCountMagnitude = max(subBucketCountMagnitude, 1) - 1
            guard unitMagnitude + subBucketHalfCountMagnitude <= 61 else { return nil }
            let subBucketCount = 1 << (subBucketHalfCountMagnitude + 1)
            var smallestUntrackable = UInt64(subBucketCount) << UInt64(unitMagnitude)
            var buckets = 1
            while smallestUntrackable <= highest {
                if smallestUntrackable > UInt64(Int64.max) / 2 {
                    buckets += 1
                    break
                }
                smallestUntrackable <<= 1
                buckets += 1
            }
            self.buckets = buckets
            slots = (buckets + 1) * (subBucketCount / 2)
        }
    }

    // MARK: Recording

    @inline(__always)
    func countsIndex(of value: UInt64) -> Int {
        let bucketIndex = leadingZeroCountBase - (value | subBucketMask).leadingZeroBitCount
        let subBucketIndex = Int(truncatingIfNeeded: value >> UInt64(bucketIndex + unitMagnitude))
        return ((bucketIndex + 1) << subBucketHalfCountMagnitude) + (subBucketIndex - subBucketHalfCount)
    }

    /// Records `value` `count` times. O(1), no allocation.
    @inline(__always)
    package mutating func record(_ value: UInt64, count: UInt64 = 1) {
        var value = value
        if value > highestTrackableValue {
            value = highestTrackableValue
            clampedCount &+= count
        }
        counts[countsIndex(of: value)] &+= count
        totalCount &+= count
        if value < minimumRecorded { minimumRecorded = value }
        if value > maximumRecorded { maximumRecorded = value }
    }

    /// Records a duration in whole microseconds (negative durations record as 0).
    @inline(__always)
    package mutating func record(microseconds duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return record(0) }
        let micros = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000)
        record(micros.overflow ? .max : micros.partialValue &+ UInt64(attoseconds / 1_000_000_000_000))
    }

    /// Records `value` and, when it exceeds `expectedInterval`, the values a sampler that was not blocked
    /// would have seen meanwhile: `value - k·expectedInterval` for every k while that stays at or above the
    /// interval (HdrHistogram's coordinated-omission correction for a closed loop with a known period).
    package mutating func recordCorrected(_ value: UInt64, expectedInterval: UInt64) {
        record(value)
        guard expectedInterval > 0, value > expectedInterval else { return }
        var missing = value - expectedInterval
        while missing >= expectedInterval {
            record(missing)
            missing -= expectedInterval
        }
    }

    /// Clears every count, keeping the layout (and the storage).
    package mutating func reset() {
        for index in counts.indices { counts[index] = 0 }
        totalCount = 0
        clampedCount = 0
        minimumRecorded = .max
        maximumRecorded = 0
    }

    // MARK: Merging

    /// Whether `other` has the same layout, so that ``add(_:)`` is exact.
    package func hasSameLayout(as other: Histogram) -> Bool {
        lowestDiscernibleValue == other.lowestDiscernibleValue && highestTrackableValue == other.highestTrackableValue
            && significantDigits == other.significantDigits
    }

    /// Throws unless a histogram of this range and precision has this layout (so that adding it is exact).
    func checkLayout(_ lowest: UInt64, _ highest: UInt64, _ digits: Int) throws(LayoutMismatch) {
        guard lowestDiscernibleValue == lowest, highestTrackableValue == highest, significantDigits == digits else {
            throw LayoutMismatch(description: "cannot add a histogram of range \(lowest)...\(highest)/\(digits) digits to "
                + "one of range \(lowestDiscernibleValue)...\(highestTrackableValue)/\(significantDigits) digits")
        }
    }

    /// Two histograms of different layouts (precision or range) cannot be added exactly.
    package struct LayoutMismatch: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// Adds every count of `other`: exact, because both share one layout.
    /// - Throws: ``LayoutMismatch`` if the layouts differ (nothing is added).
    package mutating func add(_ other: Histogram) throws(LayoutMismatch) {
        try checkLayout(other.lowestDiscernibleValue, other.highestTrackableValue, other.significantDigits)
        guard other.totalCount > 0 else { return }
        let slots = other.recordedSlots
        counts.withUnsafeMutableBufferPointer { mine in
            other.counts.withUnsafeBufferPointer { theirs in
                // Merged reports' counts saturate: a wrapped sum would turn a huge count into a tiny one.
                for index in slots where theirs[index] != 0 {
                    let (sum, overflow) = mine[index].addingReportingOverflow(theirs[index])
                    mine[index] = overflow ? .max : sum
                }
            }
        }
        addSummary(total: other.totalCount, clamped: other.clampedCount, minimum: other.minimumRecorded,
                   maximum: other.maximumRecorded)
    }

    /// Adds another histogram's totals and extremes once its counts are added (saturating, as the counts do).
    mutating func addSummary(total: UInt64, clamped: UInt64, minimum: UInt64, maximum: UInt64) {
        let (sum, totalOverflow) = totalCount.addingReportingOverflow(total)
        totalCount = totalOverflow ? .max : sum
        let (clampedSum, clampedOverflow) = clampedCount.addingReportingOverflow(clamped)
        clampedCount = clampedOverflow ? .max : clampedSum
        minimumRecorded = min(minimumRecorded, minimum)
        maximumRecorded = max(maximumRecorded, maximum)
    }

    // MARK: Values of slots

    func valueFromIndex(_ index: Int) -> UInt64 {
        var bucketIndex = (index >> subBucketHalfCountMagnitude) - 1
        var subBucketIndex = (index & (subBucketHalfCount - 1)) + subBucketHalfCount
        if bucketIndex < 0 {
            subBucketIndex -= subBucketHalfCount
            bucketIndex = 0
        }
        return UInt64(subBucketIndex) << UInt64(bucketIndex + unitMagnitude)
    }

    /// The width of the slot `value` falls in.
    package func sizeOfEquivalentRange(_ value: UInt64) -> UInt64 {
        let bucketIndex = leadingZeroCountBase - (value | subBucketMask).leadingZeroBitCount
        let subBucketIndex = Int(truncatingIfNeeded: value >> UInt64(bucketIndex + unitMagnitude))
        let adjustedBucket = subBucketIndex >= subBucketCount ? bucketIndex + 1 : bucketIndex
        return 1 << UInt64(unitMagnitude + adjustedBucket)
    }

    /// The smallest value in `value`'s slot.
    package func lowestEquivalentValue(_ value: UInt64) -> UInt64 { valueFromIndex(countsIndex(of: value)) }

    /// The largest value in `value`'s slot.
    package func highestEquivalentValue(_ value: UInt64) -> UInt64 {
        lowestEquivalentValue(value) + sizeOfEquivalentRange(value) - 1
    }

    func medianEquivalentValue(_ value: UInt64) -> UInt64 {
        lowestEquivalentValue(value) + sizeOfEquivalentRange(value) >> 1
    }

    // MARK: Statistics

    /// The value at `percentile` (0–100): the highest value of the slot where the cumulative count first
    /// reaches `round(percentile% × total)` (at least 1), as every HdrHistogram reports it; 0 when empty.
    package func value(atPercentile percentile: Double) -> UInt64 {
        guard totalCount > 0 else { return 0 }
        let requested = percentile.isNaN ? 0 : min(max(percentile, 0), 100)
        // Double(totalCount) rounds up to 2^64 near UInt64.max, which UInt64(_:) cannot hold: saturate.
        let exact = (requested / 100 * Double(totalCount) + 0.5).rounded(.down)
        let target = max(exact >= 0x1p64 ? .max : UInt64(exact), 1)
        var cumulative: UInt64 = 0
        for index in recordedSlots {
            let (sum, overflow) = cumulative.addingReportingOverflow(counts[index])
            cumulative = overflow ? .max : sum
            if cumulative >= target {
                let value = valueFromIndex(index)
                return requested == 0 ? lowestEquivalentValue(value) : highestEquivalentValue(value)
            }
        }
        return 0
    }

    /// The smallest recorded value, rounded down to its slot (0 when empty).
    package var minimum: UInt64 { totalCount == 0 ? 0 : lowestEquivalentValue(minimumRecorded) }
    /// The largest recorded value, rounded up to its slot (0 when empty).
    package var maximum: UInt64 { totalCount == 0 ? 0 : highestEquivalentValue(maximumRecorded) }

    /// The slots that can hold counts: from the smallest recorded value's to the largest's (scans stay
    /// short: latencies cover a few hundred of the 23,552 slots).
    var recordedSlots: ClosedRange<Int> {
        totalCount == 0 ? 0...0 : countsIndex(of: minimumRecorded)...countsIndex(of: maximumRecorded)
    }

    /// Slots with a count, as (value in the middle of the slot, count).
    func forEachRecorded(_ body: (_ median: UInt64, _ count: UInt64) -> Void) {
        for index in recordedSlots where counts[index] != 0 {
            body(medianEquivalentValue(valueFromIndex(index)), counts[index])
        }
    }

    /// The mean, taking each value as the middle of its slot.
    package var mean: Double {
        guard totalCount > 0 else { return 0 }
        var total = 0.0
        forEachRecorded { total += Double($0) * Double($1) }
        return total / Double(totalCount)
    }

    /// The population standard deviation, taking each value as the middle of its slot.
    package var standardDeviation: Double {
        guard totalCount > 0 else { return 0 }
        let mean = mean
        var total = 0.0
        forEachRecorded { value, count in
            let deviation = Double(value) - mean
            total += deviation * deviation * Double(count)
        }
        return (total / Double(totalCount)).squareRoot()
    }

    /// Replaces every non-zero count by `transform(count)` (for resampling: a bootstrap redraws each
    /// slot's count); totals, minimum and maximum follow.
    package mutating func resampleCounts(_ transform: (UInt64) -> UInt64) {
        var total: UInt64 = 0
        var lowest = UInt64.max
        var highest: UInt64 = 0
        for index in recordedSlots where counts[index] != 0 {
            let count = transform(counts[index])
            counts[index] = count
            guard count > 0 else { continue }
            let (sum, overflow) = total.addingReportingOverflow(count)
            total = overflow ? .max : sum
            let value = valueFromIndex(index)
            lowest = min(lowest, value)
            highest = max(highest, value)
        }
        totalCount = total
        minimumRecorded = lowest
        maximumRecorded = highest
    }

    /// How many slots the counts array has (what a decode budget is charged).
    package var slotCount: Int { counts.count }

    /// The memory the counts occupy, in bytes.
    package var footprintBytes: Int { counts.count * MemoryLayout<UInt64>.stride }
}

import Testing

@testable import Histogram

/// Histogram blobs and figures from untrusted files (issue 13): refused or saturated, never a trap or a
/// 32 MiB allocation for 60 bytes.
@Suite(.timeLimit(.minutes(2))) struct HistogramLimitTests {
    /// The payload of an empty histogram of the given layout, built by hand (no counts array allocated).
    private func emptyPayload(lowest: UInt64, highest: UInt64, digits: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendBigEndian(Histogram.encodingCookie)
        bytes.appendBigEndian(UInt32(0))
        bytes.appendBigEndian(UInt32(0))
        bytes.appendBigEndian(digits)
        bytes.appendBigEndian(lowest)
        bytes.appendBigEndian(highest)
        bytes.appendBigEndian((1.0 as Double).bitPattern)
        return bytes
    }

    @Test func aTinyBlobDeclaringAHugeLayoutIsRefusedBeforeAllocating() throws {
        // 5 digits up to 2^47-1: 4,063,232 slots (31 MiB) for a 40-byte payload. Before: decoded (allocated).
        #expect(Histogram.slotCount(lowest: 1, highest: (1 << 47) - 1, significantDigits: 5) == 4_063_232)
        let error = #expect(throws: Histogram.DecodingError.self) {
            _ = try Histogram(payload: emptyPayload(lowest: 1, highest: (1 << 47) - 1, digits: 5))
        }
        #expect(error?.offset == 20)
        #expect(error?.description.contains("4063232 slots") == true, "\(String(describing: error))")
        // wsload's own layout still decodes; a budget below it refuses it, naming the budget.
        let own = Histogram()
        #expect(try Histogram(compressedBytes: own.compressedBytes()) == own)
        let budget = #expect(throws: Histogram.DecodingError.self) {
            _ = try Histogram(compressedBytes: own.compressedBytes(), maximumSlots: own.slotCount - 1)
        }
        #expect(budget?.description.contains("decode budget") == true, "\(String(describing: budget))")
    }

    @Test func aLowestValueNearTwoToThe64IsRefusedNotTrapped() {
        // Before: `2 * lowest` overflowed (a trap) on the untrusted layout.
        #expect(throws: Histogram.DecodingError.self) {
            _ = try Histogram(payload: emptyPayload(lowest: 1 << 63, highest: .max, digits: 3))
        }
        #expect(Histogram.slotCount(lowest: .max, highest: .max, significantDigits: 3) == nil)
    }

    @Test func countsAddingUpPastInt64MaxAreRefused() throws {
        var histogram = Histogram()
        histogram.record(10, count: UInt64(Int64.max))
        histogram.record(20, count: UInt64(Int64.max))
        let error = #expect(throws: Histogram.DecodingError.self) { _ = try Histogram(compressedBytes: histogram.compressedBytes()) }
        #expect(error?.reason.contains("2^63") == true, "\(String(describing: error))")
    }

    @Test func percentilesAndMergesOfHugeTotalsSaturate() throws {
        var histogram = Histogram()
        histogram.record(10, count: .max)
        // Before: UInt64(Double(UInt64.max)) = UInt64(2^64) trapped at p100.
        #expect(histogram.value(atPercentile: 100) == histogram.highestEquivalentValue(10))
        #expect(histogram.value(atPercentile: .nan) == histogram.lowestEquivalentValue(10))
        var merged = histogram
        try merged.add(histogram)
        #expect(merged.totalCount == .max)
        #expect(merged.value(atPercentile: 50) == histogram.highestEquivalentValue(10))
    }
}

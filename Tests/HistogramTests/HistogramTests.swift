import Crypto
import Foundation
import Testing

@testable import Histogram
import Runtime
import TestSupport

@Suite(.timeLimit(.minutes(2))) struct HistogramTests {
    @Test func layoutMatchesHdrHistogramC() {
        let histogram = Histogram()
        // 3 digits: 2048 linear slots per bucket, 1 µs ... 1 h needs 22 buckets.
        #expect(histogram.subBucketCount == 2048)
        #expect(histogram.bucketCount == 22)
        #expect(histogram.counts.count == 23 * 1024)
        #expect(histogram.footprintBytes == 188_416)
        #expect(Histogram(validatingLowest: 0, highest: 10, significantDigits: 3) == nil)
        #expect(Histogram(validatingLowest: 1, highest: 1_000, significantDigits: 6) == nil)
    }

    @Test func valuesBelowTwoThousandAreExact() {
        var histogram = Histogram()
        for value in 1...1000 as ClosedRange<UInt64> { histogram.record(value) }
        #expect(histogram.totalCount == 1000)
        #expect(histogram.value(atPercentile: 50) == 500)
        #expect(histogram.value(atPercentile: 99) == 990)
        #expect(histogram.value(atPercentile: 100) == 1000)
        #expect(histogram.value(atPercentile: 0) == 1)
        #expect(histogram.minimum == 1)
        #expect(histogram.maximum == 1000)
        #expect(histogram.mean == 500.5)
        #expect(abs(histogram.standardDeviation - 288.6749) < 0.001)
    }

    @Test func slotsDoubleInWidthPerBucket() {
        var histogram = Histogram()
        histogram.record(5000)  // bucket 2: 4096..<8192 in slots of 4
        #expect(histogram.lowestEquivalentValue(5001) == 5000)
        #expect(histogram.highestEquivalentValue(5000) == 5003)
        #expect(histogram.value(atPercentile: 50) == 5003)
        #expect(histogram.sizeOfEquivalentRange(3_000_000_000) == 2_097_152)
    }

    @Test func uniformDistributionPercentilesWithinPrecision() {
        var histogram = Histogram()
        for value in 1...100_000 as ClosedRange<UInt64> { histogram.record(value) }
        for percentile in [1.0, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100] {
            let exact = Double(max(1, Int((percentile / 100 * 100_000).rounded())))
            let measured = Double(histogram.value(atPercentile: percentile))
            #expect(abs(measured - exact) <= exact / 1000 + 1, "p\(percentile): \(measured) vs \(exact)")
        }
        #expect(abs(histogram.mean - 50_000.5) / 50_000.5 < 0.001)
    }

    @Test func lognormalLatenciesMatchSortedPercentiles() {
        var random = SeededRandomNumberGenerator(seed: 42)
        var values: [UInt64] = []
        var histogram = Histogram()
        for _ in 0..<200_000 {
            // Box–Muller normal → lognormal around 2 ms with a long tail, in µs.
            let u1 = Double(random.next() >> 11) / Double(1 << 53) + 1e-12
            let u2 = Double(random.next() >> 11) / Double(1 << 53)
            let normal = (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
            let value = UInt64(exp(7.6 + 0.8 * normal))
            values.append(value)
            histogram.record(value)
        }
        values.sort()
        for percentile in [50.0, 90, 99, 99.9, 99.99] {
            let exact = Double(values[Int((percentile / 100 * Double(values.count)).rounded()) - 1])
            let measured = Double(histogram.value(atPercentile: percentile))
            #expect(measured >= exact && measured <= exact * 1.001 + 1, "p\(percentile): \(measured) vs \(exact)")
        }
        #expect(histogram.minimum <= values.first! && histogram.maximum >= values.last!)
        let exactMean = Double(values.reduce(0, +)) / Double(values.count)
        #expect(abs(histogram.mean - exactMean) / exactMean < 0.001)
    }

    @Test func coordinatedOmissionCorrectionBackfillsTheStall() {
        var histogram = Histogram()
        histogram.recordCorrected(1000, expectedInterval: 100)
        #expect(histogram.totalCount == 10)  // 1000, 900, ..., 100
        #expect(histogram.value(atPercentile: 0) == 100)
        histogram.recordCorrected(50, expectedInterval: 100)
        #expect(histogram.totalCount == 11)
        histogram.recordCorrected(70, expectedInterval: 0)
        #expect(histogram.totalCount == 12)
    }

    @Test func clampsValuesAboveTheRangeAndCountsThem() {
        var histogram = Histogram(highestTrackableValue: 1_000_000)
        histogram.record(5_000_000)
        histogram.record(7)
        #expect(histogram.clampedCount == 1)
        #expect(histogram.totalCount == 2)
        #expect(histogram.maximum == histogram.highestEquivalentValue(1_000_000))
    }

    @Test func recordsDurationsInMicroseconds() {
        var histogram = Histogram()
        histogram.record(microseconds: .milliseconds(12) + .nanoseconds(999))
        histogram.record(microseconds: .seconds(-1))
        #expect(histogram.maximumRecorded == 12_000)
        #expect(histogram.minimum == 0)
    }

    @Test func mergeIsExactAndChecksLayout() throws {
        var whole = Histogram()
        var left = Histogram()
        var right = Histogram()
        var random = SeededRandomNumberGenerator(seed: 7)
        for index in 0..<50_000 {
            let value = random.next() % 10_000_000
            whole.record(value)
            if index % 3 == 0 { left.record(value) } else { right.record(value) }
        }
        var merged = left
        try merged.add(right)
        #expect(merged == whole)
        var other = Histogram(highestTrackableValue: 60_000_000)
        #expect(throws: Histogram.LayoutMismatch.self) { try other.add(whole) }
        #expect(other.totalCount == 0)
    }

    @Test func serializationRoundTripsExactly() throws {
        var histogram = Histogram()
        var random = SeededRandomNumberGenerator(seed: 3)
        for _ in 0..<10_000 { histogram.record(random.next() % 3_600_000_000, count: random.next() % 3 + 1) }
        histogram.record(0)
        let decoded = try Histogram(serialized: histogram.serialized())
        #expect(decoded.counts == histogram.counts)
        #expect(decoded.totalCount == histogram.totalCount)
        #expect(decoded.minimum == histogram.minimum && decoded.maximum == histogram.maximum)
        for percentile in [0.0, 50, 99, 99.999, 100] {
            #expect(decoded.value(atPercentile: percentile) == histogram.value(atPercentile: percentile))
        }
        let empty = try Histogram(serialized: Histogram().serialized())
        #expect(empty.totalCount == 0 && empty.counts == Histogram().counts)
    }

    @Test func zigZagMatchesHdrHistogramVectors() {
        var bytes: [UInt8] = []
        bytes.appendZigZag(0)
        bytes.appendZigZag(-1)
        bytes.appendZigZag(1)
        bytes.appendZigZag(64)
        bytes.appendZigZag(-300)
        #expect(bytes == [0x00, 0x01, 0x02, 0x80, 0x01, 0xd7, 0x04])
        var big: [UInt8] = []
        big.appendZigZag(.max)
        #expect(big.count == 9)
        var position = 0
        #expect(big.readZigZag(at: &position) == .max)
        #expect(position == 9)
    }

    @Test func refusesBadBlobsWithTheirOffset() throws {
        #expect(throws: Histogram.DecodingError(offset: 0, reason: "not base64")) {
            try Histogram(serialized: "!!!")
        }
        var bytes = Histogram().compressedBytes()
        bytes[0] = 0
        #expect(throws: Histogram.DecodingError.self) { try Histogram(compressedBytes: bytes) }
        let valid = Histogram().compressedBytes()
        do {
            _ = try Histogram(compressedBytes: Array(valid.dropLast(3)))
            Issue.record("a truncated blob decoded")
        } catch {
            #expect(error.offset == 4)
        }
        // A zero run that passes the last slot.
        var payload = Histogram(highestTrackableValue: 10_000).payloadBytes()
        payload.appendZigZag(-1_000_000)
        payload.replaceSubrange(4..<8, with: [0, 0, 0, UInt8(payload.count - 40)])
        do {
            _ = try Histogram(payload: payload)
            Issue.record("an overlong zero run decoded")
        } catch {
            #expect(error.offset == 48 && error.reason.contains("passes the last slot"))
        }
    }

    @Test func agreesWithPythonHdrHistogram() async throws {
        var histogram = Histogram()
        var random = SeededRandomNumberGenerator(seed: 11)
        var values: [[UInt64]] = []
        for _ in 0..<5_000 {
            let value = (random.next() % 1_000_000) * (random.next() % 100 == 0 ? 1000 : 1)
            let count = random.next() % 4 + 1
            histogram.record(value, count: count)
            values.append([value, count])
        }
        let percentiles = [0.0, 1, 25, 50, 90, 99, 99.9, 99.99, 100]
        let request: [String: Any] = [
            "lowest": 1, "highest": Histogram.microsecondsUpToOneHour, "digits": 3, "values": values,
            "blob": histogram.serialized(), "percentiles": percentiles,
        ]
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hdr-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json")
        try JSONSerialization.data(withJSONObject: request).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers/hdr_check.py").path
        let output = try await TestProcess.runOffPool(["python3", script, file.path]).output
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        #expect(answer["decodedCountsEqual"] as? Bool == true)
        for key in ["reference", "decoded"] {
            let stats = try #require(answer[key] as? [String: Any])
            #expect((stats["total"] as? NSNumber)?.uint64Value == histogram.totalCount, "\(key)")
            #expect((stats["min"] as? NSNumber)?.uint64Value == histogram.minimum, "\(key)")
            #expect((stats["max"] as? NSNumber)?.uint64Value == histogram.maximum, "\(key)")
            #expect(abs(((stats["mean"] as? NSNumber)?.doubleValue ?? 0) - histogram.mean) < 1e-6 * histogram.mean)
            #expect(abs(((stats["stdev"] as? NSNumber)?.doubleValue ?? 0) - histogram.standardDeviation)
                < 1e-6 * histogram.standardDeviation)
            let theirs = (stats["percentiles"] as? [NSNumber])?.map(\.uint64Value)
            #expect(theirs == percentiles.map { histogram.value(atPercentile: $0) }, "\(key)")
        }
        let theirBlob = try #require(answer["blob"] as? String)
        let decoded = try Histogram(serialized: theirBlob)
        #expect(decoded.counts == histogram.counts)
    }
}


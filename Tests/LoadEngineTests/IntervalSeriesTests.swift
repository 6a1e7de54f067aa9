import Crypto
import Histogram
import LoadEngine
import Profile
import Reporting
import Testing

/// The bounded interval series (issue 15 item 1), pure: appended base intervals against what the series holds —
/// never more than its maximum, every sample kept (merging preserves totals exactly), the factor doubling, the last
/// entry partial, spans and live connections right.
@Suite("Interval series: bounded, exact, downsampled by pairs", .timeLimit(.minutes(1)))
struct IntervalSeriesTests {
    /// Base interval `index`: one second long, `index + 1` live connections, one message sent (so an entry's count of
    /// them is how many base intervals it covers), and a few round trips whose values depend on the index.
    static func base(_ index: Int, random: inout SeededRandomNumberGenerator) -> RunResult.Interval {
        var metrics = MetricSet()
        metrics[counter: .messagesSent] = 1
        metrics[counter: .messagesReceived] = UInt64(index % 7)
        var rtt = Histogram()
        for _ in 0..<(1 + index % 5) { rtt.record(100 + random.next() % 50_000) }
        metrics[histogram: .messageRoundTrip] = rtt
        if index % 3 == 0 { metrics.errors["connect"] = UInt64(index) }
        if index % 4 == 1 { metrics.disconnects[1006] = 2 }
        return .init(start: .seconds(index), end: .seconds(index + 1), liveConnections: index + 1, metrics: metrics)
    }

    static func json(_ metrics: MetricSet) -> String { metrics.json(seconds: 1, operations: 0).formatted(pretty: false) }

    @Test("for maxima 2, 3, 5, 8 and 600 and up to 130 base intervals: the invariants of the series after every append",
          arguments: [2, 3, 5, 8, 600])
    func invariantsAfterEveryAppend(maximum: Int) async throws {
        // Off the cooperative pool (decoding the entries again and again is seconds of CPU in a debug build, which
        // would hold one of the pool's threads other suites' tests need); what broke comes back as text.
        let problems = try await offPool { try Self.checkEveryAppend(maximum: maximum) }
        #expect(problems.isEmpty, "\(problems.count) problems, the first: \(problems.prefix(5))")
    }

    /// Appends 130 base intervals, checking the series after each; returns what did not hold.
    private static func checkEveryAppend(maximum: Int) throws -> [String] {
        var problems: [String] = []
        func check(_ condition: Bool, _ what: @autoclosure () -> String) { if !condition { problems.append(what()) } }
        var series = IntervalSeries(maximumCount: maximum)
        var random = SeededRandomNumberGenerator(seed: UInt64(maximum))
        var sum = MetricSet()
        var appended: [RunResult.Interval] = []
        for index in 0..<130 {
            let interval = Self.base(index, random: &random)
            try series.append(interval)
            try sum.add(interval.metrics)
            appended.append(interval)
            let count = index + 1
            check(series.count == count, "count \(series.count) after \(count)")
            check(series.entryCount <= maximum, "\(series.entryCount) entries: more than the maximum \(maximum)")
            // The factor is the smallest power of two whose entries fit: it doubles, never skips, never shrinks.
            var expectedFactor = 1
            while (count + expectedFactor - 1) / expectedFactor > maximum { expectedFactor *= 2 }
            check(series.factor == expectedFactor, "factor \(series.factor) after \(count) at most \(maximum): \(expectedFactor) due")
            check(series.isDownsampled == (expectedFactor > 1), "isDownsampled after \(count)")
            check(series.entryCount == (count + expectedFactor - 1) / expectedFactor, "\(series.entryCount) entries after \(count)")
            // The entries themselves (decoded) after every append while small, then around each merge and at the end.
            guard count <= 24 || count % maximum <= 1 || count % 17 == 0 || count == 130 else { continue }
            let entries = series.entries
            check(entries.count == series.entryCount, "entries decoded: \(entries.count)")
            var merged = MetricSet()
            for (position, entry) in entries.enumerated() {
                let metrics = try entry.metrics
                try merged.add(metrics)
                // Entry k covers base intervals k×factor ..< (k+1)×factor; only the last may cover fewer.
                let first = position * series.factor
                let last = min(count, first + series.factor) - 1
                check(metrics.counter(.messagesSent) == UInt64(last - first + 1), "entry \(position) after \(count): "
                    + "\(metrics.counter(.messagesSent)) base intervals, \(last - first + 1) due")
                check(entry.start == appended[first].start && entry.end == appended[last].end,
                      "entry \(position) after \(count): span \(entry.start)–\(entry.end), not the union")
                check(entry.liveConnections == appended[last].liveConnections, "entry \(position): live, not the later one's")
                if position < entries.count - 1 {
                    check(last - first + 1 == series.factor, "entry \(position) after \(count): partial, not last")
                }
            }
            check(json(merged) == json(sum), "after \(count): the entries do not add up to what was appended")
            check(series.histogramSlots == entries.reduce(0) { $0 + $1.histogramSlots }, "histogramSlots after \(count)")
        }
        check(maximum < 130 ? series.factor > 1 : series.factor == 1, "final factor \(series.factor)")
        return problems
    }

    @Test("the last entry is partial: 10 base intervals at most 4 entries are 4 + 4 + 2 at factor 4")
    func lastEntryPartial() throws {
        var series = IntervalSeries(maximumCount: 4)
        var random = SeededRandomNumberGenerator(seed: 1)
        for index in 0..<10 { try series.append(Self.base(index, random: &random)) }
        #expect(series.factor == 4)
        #expect(series.entries.map { $0.counts.counter(.messagesSent) } == [4, 4, 2])
        #expect(series.entries.map(\.start) == [.seconds(0), .seconds(4), .seconds(8)])
        #expect(series.entries.last?.end == .seconds(10))
        #expect(series.log(baseSeconds: 0.1, file: "r.intervals.jsonl")
            == RunResult.IntervalLog(file: "r.intervals.jsonl", count: 10, baseSeconds: 0.1, factor: 4))
    }

    @Test("an odd maximum: the unpaired last entry covers fewer than the new factor and fills up first")
    func oddMaximum() throws {
        var series = IntervalSeries(maximumCount: 3)
        var random = SeededRandomNumberGenerator(seed: 2)
        for index in 0..<4 { try series.append(Self.base(index, random: &random)) }
        // 3 entries of 1, full; the 4th coarsens to (0,1),(2) and joins (2).
        #expect(series.factor == 2)
        #expect(series.entries.map { $0.counts.counter(.messagesSent) } == [2, 2])
    }

    @Test("clamped samples survive an entry at rest and a merge (the compressed form does not carry their count)")
    func clampedSamplesKept() throws {
        var series = IntervalSeries(maximumCount: 2)
        for index in 0..<5 {
            var metrics = MetricSet()
            var rtt = Histogram()
            rtt.record(Histogram.microsecondsUpToOneHour * 2)  // past the range: stored as one hour, counted clamped
            rtt.record(500)
            metrics[histogram: .messageRoundTrip] = rtt
            try series.append(.init(start: .seconds(index), end: .seconds(index + 1), liveConnections: 1, metrics: metrics))
        }
        let entries = series.entries
        #expect(try entries.map { try $0.histogram(named: Metric.messageRoundTrip.name)?.clampedCount } == [4, 1])
        #expect(try entries.map { try $0.histogram(named: Metric.messageRoundTrip.name)?.totalCount } == [8, 2])
    }

    @Test("histograms of another layout in one series are refused (possible only in a crafted file)")
    func layoutMismatchThrows() throws {
        var series = IntervalSeries(maximumCount: 2)
        var metrics = MetricSet()
        metrics[histogram: .messageRoundTrip] = Histogram()
        try series.append(.init(start: .zero, end: .seconds(1), liveConnections: 0, metrics: metrics))
        try series.append(.init(start: .seconds(1), end: .seconds(2), liveConnections: 0, metrics: metrics))
        try series.append(.init(start: .seconds(2), end: .seconds(3), liveConnections: 0, metrics: metrics))
        // Factor 2 now: the next base interval adds into the last entry.
        metrics[histogram: .messageRoundTrip] = Histogram(lowestDiscernibleValue: 1, highestTrackableValue: 1000, significantDigits: 2)
        #expect(throws: ReportFormatError.self) {
            try series.append(.init(start: .seconds(3), end: .seconds(4), liveConnections: 0, metrics: metrics))
        }
    }

    @Test("coarsened(by:): runs of `ratio` entries merged, the last run shorter; ratio 1 keeps them")
    func coarsenedByRatio() throws {
        var random = SeededRandomNumberGenerator(seed: 3)
        let intervals = (0..<7).map { Self.base($0, random: &random) }
        #expect(try IntervalSeries.coarsened(intervals, by: 1).map(\.start) == intervals.map(\.start))
        let byFour = try IntervalSeries.coarsened(intervals, by: 4)
        #expect(byFour.map { $0.counts.counter(.messagesSent) } == [4, 3])
        #expect(byFour.map(\.end) == [.seconds(4), .seconds(7)])
        #expect(byFour.map(\.liveConnections) == [4, 7])
    }

    @Test("a maximum below 2 is taken as 2; the series and its log are Sendable")
    func smallestMaximumAndSendable() throws {
        #expect(IntervalSeries(maximumCount: 0).maximumCount == 2)
        func sendable<T: Sendable>(_: T.Type) -> Bool { true }
        #expect(sendable(IntervalSeries.self) && sendable(RunResult.IntervalLog.self))
    }

    @Test("storm slots: the peak over every slot, and only the slots of the last gather kept")
    func stormSlots() {
        var peak = SlotPeak()
        #expect(peak.peak == nil, "nothing counted: no storm")
        for gather in 0..<1000 {
            let base = UInt64(gather * 10)
            // Two loops; each gather's snapshots hold ten 100 ms slots, and the first straddles the previous gather.
            peak.add([base: 2, base + 1: 3, base + 9: 1])
            peak.add([base: 1, base + 5: gather == 500 ? 40 : 4])
            peak.settle(before: base + 1)
            #expect(peak.openSlotCount <= 3, "after gather \(gather)")
        }
        #expect(peak.peak == 40)
        var straddling = SlotPeak()
        straddling.add([7: 3])
        straddling.settle(before: 7)
        straddling.add([7: 2])  // the rest of slot 7, from a snapshot taken after the gather started
        straddling.settle(before: 8)
        #expect(straddling.peak == 5, "a slot is folded into the peak only once it is complete")
        #expect(straddling.openSlotCount == 0)
    }
}

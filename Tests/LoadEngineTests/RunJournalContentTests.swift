import Foundation
import Synchronization
import LoadEngine
import Profile
import Reporting
import Testing

/// The journal against what the run measured: a real run journals every interval, and recovering that journal
/// gives back the run's own intervals and totals, exactly (the SIGKILL test can only compare a recovery with itself).
@Suite("Run journal content", .serialized, .timeLimit(.minutes(2)))
struct RunJournalContentTests {
    @Test("a finished run's journal recovers to exactly the run's intervals, scenario metrics and totals")
    func journalMatchesTheRun() async throws {
        let directory = try scratchDirectory("journal-content")
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = directory.appendingPathComponent("r.json").path
        let journal = RunJournal(toolVersion: "test", commit: nil, reportPath: { _ in report })
        let result = try await withServer { server in
            var run = LoadRun(profile: try profile("""
                {"version": 1, "name": "journal", "target": "\(server.url)", "duration": "2s", "seed": 5,
                 "scenarios": [{"name": "a", "pattern": "echo", "connections": 3, "schedule": {"model": "closed", "thinkTime": "2ms"}},
                               {"name": "b", "pattern": "echo", "connections": 2, "schedule": {"model": "closed", "thinkTime": "5ms"}}],
                 "report": {"interval": "250ms"}}
                """))
            run.journal = journal
            return try await run.run()
        }
        journal.close()  // kept, as after a crash
        #expect(journal.problem == nil)
        #expect(journal.intervalCount == result.intervals.count)
        #expect(result.intervals.count >= 4, "a 2 s run at 250 ms intervals")
        #expect(result.total.counter(.messagesReceived) > 0)

        let recovered = try JournalRecovery(contentsOf: report + ".partial").result
        #expect(recovered.runID == journal.runID)
        #expect(recovered.intervals.count == result.intervals.count)
        for (journaled, measured) in zip(recovered.intervals, result.intervals) {
            // Bounds are written in milliseconds, as in a report.
            let ms = { (duration: Duration) in (Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15).rounded() }
            #expect(ms(journaled.start) == ms(measured.start) && ms(journaled.end) == ms(measured.end), "\(journaled.start) \(measured.start)")
            #expect(journaled.liveConnections == measured.liveConnections)
            #expect(try fingerprint(journaled.metrics) == fingerprint(measured.metrics), "interval at \(measured.start)")
        }
        #expect(fingerprint(recovered.total) == fingerprint(result.total), "the journal's sum is what the run measured")
        #expect(recovered.scenarios.map { fingerprint($0.metrics) } == result.scenarios.map { fingerprint($0.metrics) })
        #expect(recovered.seed == 5)
    }

    @Test("a journal that cannot be created tells its problem at once, once, and the run's journal calls stay harmless")
    func problemToldAtOnce() throws {
        let directory = try scratchDirectory("journal-problem")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("file").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let told = Mutex<[String]>([])
        let journal = RunJournal(toolVersion: "test", commit: nil, reportPath: { _ in file + "/r.json" },
                                 onProblem: { problem in told.withLock { $0.append(problem) } })
        let decoded = try profile("""
            {"version": 1, "name": "p", "target": "ws://127.0.0.1:1/", "duration": "1s",
             "scenarios": [{"name": "a", "pattern": "echo", "connections": 1}]}
            """)
        journal.begin(profile: decoded, seed: 1, shard: nil, loops: 1, startedAt: Date())
        #expect(told.withLock { $0.count } == 1, "told as the journal failed, before any interval")
        #expect(told.withLock { $0.first?.contains(file) } == true, "\(told.withLock { $0 })")
        journal.append(.init(start: .zero, end: .seconds(1), liveConnections: 0, metrics: MetricSet()), scenarios: [],
                       invariants: InvariantReport())
        #expect(told.withLock { $0.count } == 1, "told once")
        #expect(journal.intervalCount == 0 && journal.problem != nil)
    }
}

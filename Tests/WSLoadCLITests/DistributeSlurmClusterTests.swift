import Foundation
import JSON
import Testing
import TestSupport

/// The JSON number or string at a path of keys.
private func value(_ document: JSONValue, _ keys: String...) -> JSONValue? {
    keys.reduce(Optional(document)) { $0?.objectValue?[$1] }
}

private func count(_ report: JSONValue, _ metric: String) -> Int {
    value(report, "total", "metrics", metric, "count")?.integerValue ?? -1
}

/// Holds an exclusive lock on a file while `body` runs: one Slurm cluster per host (munged and the daemons' ports are
/// the host's), so two checkouts running this suite at once (the mutation probe's scratch tree and the main one) take
/// turns instead of stopping each other's daemons.
private func withHostLock<T>(_ path: String, within deadline: Duration, _ body: () async throws -> T) async throws -> T {
    let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw TestProcess.Failure(description: "cannot open \(path)") }
    defer { close(descriptor) }
    let end = ContinuousClock.now + deadline
    while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
        guard ContinuousClock.now < end else { throw TestProcess.Failure(description: "\(path) stayed locked for \(deadline)") }
        try await Task.sleep(for: .milliseconds(200))
    }
    return try await body()
}

/// The end-to-end run on the real engine. Root only: the test starts munged (as the munge user), slurmctld and slurmd
/// itself, which needs root; CI runs as root (`.ci/run`, with `scripts/install-dependencies.sh --test` installing
/// slurm-wlm and munge), and elsewhere the suite is skipped. Daemons, the server and the shards all stay on 127.0.0.1.
@Suite("wsload distribute slurm on a single-node Slurm cluster", .serialized, .timeLimit(.minutes(10)),
       .enabled(if: getuid() == 0, "starts Slurm's daemons: root only (CI runs as root)"))
struct DistributeSlurmClusterTests {
    static let clusterScript = SourceTree.root.appendingPathComponent("scripts/slurm-cluster.sh").path

    @Test("4 shards as a job array start together against wsload serve; the merge job's report adds them up exactly")
    func fourShards() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/slurmctld") else {
            Issue.record("slurm-wlm is not installed: scripts/install-dependencies.sh --test installs it")
            return
        }
        try await withHostLock("/tmp/wsload-slurm-cluster.lock", within: .seconds(480)) {
            let scratch = try DistributeScratch(name: slurmHostileName)
            // Slurm's own state in a plain path (slurm.conf names it); the run's files where the path is hostile.
            let state = scratch.root + "/slurm"
            let clock = ContinuousClock()
            let upStarted = clock.now
            let up = try await runScript(["bash", Self.clusterScript, "up", state], deadline: .seconds(90))
            let upTime = clock.now - upStarted
            var failure: (any Error)?
            do {
                #expect(up.status == 0, "slurm-cluster.sh up: \(up.errors)")
                if up.status == 0 { try await run(in: scratch, slurmConf: state + "/slurm.conf", upTime: upTime) }
            } catch {
                failure = error
            }
            let downStarted = clock.now
            let down = try await runScript(["bash", Self.clusterScript, "down", state], deadline: .seconds(90))
            #expect(down.status == 0, "slurm-cluster.sh down: \(down.errors)")
            print("slurm cluster: up \(upTime), down \(clock.now - downStarted)")
            if let failure { throw failure }
        }
    }

    private func run(in scratch: DistributeScratch, slurmConf: String, upTime: Duration) async throws {
        let server = try await ServeChild(["--duration", "600s"])
        defer { server.child.stop() }
        // Light on purpose (8 connections, 20 echoes a second each): the suite shares two cores with everything else.
        let profile = try scratch.write("echo-4.json", """
            {"version": 1, "name": "echo-4", "target": "embedded", "duration": "3s", "gracefulStop": "3s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 8, "schedule": {"model": "closed", "thinkTime": "50ms"}}]}
            """)
        let out = scratch.file("run")
        // The built wsload writes the files, so the jobs run it (the default --wsload).
        let distributed = try await runScript([wsloadExecutable, "distribute", "slurm", profile, "--shards", "4", "--out", out,
                                               "--target", server.url, "--lead", "5s"])
        #expect(distributed.status == 0, "\(distributed.errors)")
        let clock = ContinuousClock()
        let submitted = clock.now
        let submit = try await runScript(["sh", out + "/submit.sh"], environment: ["SLURM_CONF": slurmConf])
        #expect(submit.status == 0, "\(submit.output) \(submit.errors)")
        let array = try #require(submit.output.firstMatch(of: #/array job: (\d+) /#).map { String($0.output.1) }, "\(submit.output)")
        let merge = try #require(submit.output.firstMatch(of: #/merge job: (\d+) /#).map { String($0.output.1) }, "\(submit.output)")

        // Poll the queue and the merged file (finished jobs leave squeue; sacct has no accounting here).
        let merged = out + "/echo-4-merged.json"
        let deadline = clock.now + .seconds(300)
        var queueEmptySince: ContinuousClock.Instant?
        while !FileManager.default.fileExists(atPath: merged) {
            let queue = try await runScript(["squeue", "-h", "-j", "\(array),\(merge)", "-o", "%i %T %r"],
                                            environment: ["SLURM_CONF": slurmConf])
            if queue.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                // The merge job writes the file just before it leaves the queue: give the file system a moment.
                if let since = queueEmptySince, clock.now - since > .seconds(5) {
                    let logs = (try? FileManager.default.contentsOfDirectory(atPath: out + "/logs")) ?? []
                    let text = try logs.map { "\($0):\n" + (try String(contentsOfFile: out + "/logs/" + $0, encoding: .utf8)) }
                    Issue.record("the jobs left the queue without a merged report; logs:\n\(text.joined(separator: "\n"))")
                    return
                }
                queueEmptySince = queueEmptySince ?? clock.now
            }
            guard clock.now < deadline else {
                Issue.record("no merged report within 300 s; queue: \(queue.output)")
                return
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        let elapsed = clock.now - submitted

        let report = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: merged))))
        var shards: [JSONValue] = []
        for index in 1...4 {
            let path = out + "/reports/echo-4-shard\(index)of4.json"
            shards.append(try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
            #expect(value(shards[index - 1], "run", "shard")?.stringValue == "\(index)/4")
        }
        #expect(value(report, "run", "mergedFrom")?.arrayValue?.count == 4)
        for metric in ["ws.connections_opened", "ws.connect_attempts", "ws.messages_sent", "ws.messages_received"] {
            let sum = shards.map { count($0, metric) }.reduce(0, +)
            #expect(count(report, metric) == sum, "\(metric): merged \(count(report, metric)), shards \(sum)")
        }
        #expect(count(report, "ws.connections_opened") == 8)
        #expect(count(report, "ws.messages_received") > 0)
        #expect(value(report, "invariantsHeld")?.boolValue == true)
        #expect(shards.allSatisfy { value($0, "invariantsHeld")?.boolValue == true })
        // One start for all: every shard's run.startAt is the launch time + 5 s, and the merge records their spread.
        let starts = Set(shards.compactMap { value($0, "run", "startAt")?.stringValue })
        #expect(starts.count == 1, "\(starts)")
        #expect(value(report, "run", "startAt")?.stringValue == starts.first)
        let skew = try #require(value(report, "run", "startSkew")?.numberValue, "run.startSkew is recorded")
        #expect(skew >= 0 && skew < 5, "a skew of \(skew) s: not below the lead")
        // DIR's name has quotes, $(…), %x, a newline: Slurm and the scripts took it as one path.
        #expect(!scratch.wasInjected)
        let late = shards.map { value($0, "run", "lateBy")?.numberValue ?? 0 }
        print("slurm end to end: cluster up in \(upTime); submit to merged report \(elapsed); start skew across 4 shards "
            + "\(Int((skew * 1000).rounded())) ms; lateBy \(late.map { "\(Int(($0 * 1000).rounded())) ms" }); "
            + "\(count(report, "ws.messages_received")) echoes")
    }
}

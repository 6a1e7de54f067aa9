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
            var upTime = Duration.zero
            var failure: (any Error)?
            // Processes of jobs still running when the test ends (on purpose, or because it failed): `down` must end them.
            var running: [(pid: pid_t, what: String)] = []
            do {
                // Inside the do: a failing or hanging `up` still gets its `down`.
                let up = try await runScript(["bash", Self.clusterScript, "up", state], deadline: .seconds(90))
                upTime = clock.now - upStarted
                #expect(up.status == 0, "slurm-cluster.sh up: \(up.errors)")
                if up.status == 0 {
                    let server = try await ServeChild(["--duration", "600s"])
                    defer { server.child.stop() }
                    try await run(in: scratch, slurmConf: state + "/slurm.conf", server: server, upTime: upTime)
                    running = try await leaveRunning(in: scratch, slurmConf: state + "/slurm.conf", server: server)
                }
            } catch {
                failure = error
            }
            let downStarted = clock.now
            let down = try await runScript(["bash", Self.clusterScript, "down", state], deadline: .seconds(120))
            #expect(down.status == 0, "slurm-cluster.sh down: \(down.errors)")
            // Gone, or a zombie (ended: nothing reaps orphans in a sandbox whose PID 1 is not init).
            let alive = running.filter { process in
                guard let stat = try? String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8) else { return false }
                return stat.split(separator: ")").last?.split(separator: " ").first != "Z"
            }
            #expect(alive.isEmpty, "slurm-cluster.sh down left the jobs' processes running: \(alive)")
            print("slurm cluster: up \(upTime), down \(clock.now - downStarted) (ending \(running.count) processes of running jobs)")
            if let failure { throw failure }
        }
    }

    /// Submits a 2-shard, 120 s run and a job that ignores SIGTERM, waits until both run, and returns their processes
    /// (`scontrol listpids` and each step's slurmstepd): what a test failing mid-run leaves for `down`.
    private func leaveRunning(in scratch: DistributeScratch, slurmConf: String, server: ServeChild) async throws
        -> [(pid: pid_t, what: String)]
    {
        let environment = ["SLURM_CONF": slurmConf]
        let profile = try scratch.write("long.json", """
            {"version": 1, "name": "long", "target": "embedded", "duration": "120s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2, "schedule": {"model": "closed", "thinkTime": "500ms"}}]}
            """)
        let out = scratch.file("long")
        let distributed = try await runScript([wsloadExecutable, "distribute", "slurm", profile, "--shards", "2", "--out", out,
                                               "--target", server.url, "--lead", "1s"])
        #expect(distributed.status == 0, "\(distributed.errors)")
        let submit = try await runScript(["sh", out + "/submit.sh"], environment: environment)
        #expect(submit.status == 0, "\(submit.output) \(submit.errors)")
        let stubborn = try await runScript(["sbatch", "--parsable", "--output=/dev/null", "--chdir=/tmp", "--wrap",
                                            "trap '' TERM; sleep 300"], environment: environment)
        #expect(stubborn.status == 0, "\(stubborn.errors)")
        // Three batch steps (two shards and the stubborn job) running on the node: each step's processes and its
        // slurmstepd (the parent of the step's first task), polled until all three have shown up.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(60)
        var processes: [(pid: pid_t, what: String)] = []
        var listedLast = ""
        while clock.now < deadline {
            let listed = try await runScript(["scontrol", "listpids"], environment: environment)
            listedLast = "listpids (exit \(listed.status)): \(listed.output) \(listed.errors)"

            let pids = listed.output.split(separator: "\n").dropFirst().compactMap { $0.split(separator: " ").first.flatMap { pid_t($0) } }
            processes = []
            for pid in pids {
                let command = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))?
                    .replacingOccurrences(of: "\0", with: " ") ?? "?"
                processes.append((pid, command))
                if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                    let parent = stat.split(separator: ")").last?.split(separator: " ").dropFirst().first.flatMap({ pid_t($0) }),
                    (try? String(contentsOfFile: "/proc/\(parent)/comm", encoding: .utf8)) == "slurmstepd\n",
                    !processes.contains(where: { $0.pid == parent })
                {
                    processes.append((parent, "slurmstepd"))
                }
            }
            let isRunning = processes.contains { $0.what.contains("wsload") && $0.what.contains(" run ") }
            if isRunning && processes.filter({ $0.what == "slurmstepd" }).count >= 3 { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        // When they did not show up, what Slurm said of its queue and node goes with the failure (once seen under a
        // full suite, never alone).
        var state = ""
        if !(processes.contains { $0.what.contains("wsload") && $0.what.contains(" run ") })
            || processes.filter({ $0.what == "slurmstepd" }).count < 3
        {
            let queue = try await runScript(["squeue", "--all", "-o", "%i %j %T %r"], environment: environment)
            let node = try await runScript(["sinfo", "-N", "-o", "%N %T %E"], environment: environment)
            state = "; \(listedLast); squeue: \(queue.output) \(queue.errors); sinfo: \(node.output) \(node.errors)"
        }
        #expect(processes.contains { $0.what.contains("wsload") && $0.what.contains(" run ") }, "the shards run: \(processes)\(state)")
        #expect(processes.filter { $0.what == "slurmstepd" }.count >= 3, "\(processes)\(state)")
        return processes
    }

    private func run(in scratch: DistributeScratch, slurmConf: String, server: ServeChild, upTime: Duration) async throws {
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

import Foundation
import Glibc
import LoadEngine
import Profile
import Reporting
import Runtime

/// The processes of one `wsload run --processes` run: the server processes (an `embedded` target), started first and
/// waited for until they listen, then one child per shard, all given one start time a few seconds ahead, then
/// watched to their end: their progress summed into one display, their stderr passed on line by line with their
/// name, a stop request forwarded on their control pipes (never as a second signal: a terminal's Ctrl-C already
/// reached the whole process group), and every wait bounded (then SIGKILL). The servers are stopped last, in every
/// case; the children's reports are left in `directory` for the merge.
struct ProcessFleet {
    var plan: ProcessPlan
    var profile: Profile
    var profilePath: String
    /// The user's options a shard and a server get too (`--target`, `--duration`, `--seed`, `--loops`), as arguments.
    var forwarded: [String]
    /// Where the children write their reports (the parent's private directory).
    var directory: String
    var output: CommandOutput
    var display: ProgressDisplay
    var live: LiveOutputs
    /// The executable the processes run (this one).
    var executable = ProcessSpawn.currentExecutable

    /// How long a server may take to listen.
    static let readyDeadline: Duration = .seconds(30)
    /// What every wait for the children allows beyond the run's own time (start lead, duration, gracefulStop).
    static let margin: Duration = .seconds(30)
    /// How long after a stop request the parent forwards it to the shards that have not begun stopping.
    static let forwardDelay: Duration = .seconds(1)
    /// How long stopped servers may take to exit before SIGKILL.
    static let serverStopDeadline: Duration = .seconds(15)

    /// What became of the processes.
    struct Outcome {
        /// The start time every shard was given.
        var startAt: Date?
        /// How each shard's process ended, by shard index (with its pid).
        var shards: [Int: (pid: Int32, termination: ProcessSpawn.Termination, isKilledAtDeadline: Bool)] = [:]
        /// The chaos timeline as the server processes fired it (hits summed over the servers).
        var chaos: [RunResult.ChaosRecord] = []
        /// Why the run could not start (a server that did not listen), or nil.
        var failure: String?
    }

    /// The report path of shard `index` in `directory`.
    func reportPath(ofShard index: Int) -> String { directory + "/shard-\(index + 1)of\(plan.children).json" }

    func run(shutdown: GracefulShutdown, startAt requested: Date?) async -> Outcome {
        let watch = ProcessWatch()
        defer { watch.stop() }
        var outcome = Outcome()
        var controls: [ProcessWatch.Role: Int32] = [:]
        defer { for descriptor in controls.values { ProcessPipe.close(descriptor) } }
        var open = Set<OpenPipe>()  // pipes not yet at their end
        var fired: [Int: (firedAt: Duration, affected: Int)] = [:]
        let clock = ContinuousClock()

        // Servers first: their URLs are the children's targets.
        var urls = [String?](repeating: nil, count: plan.servers)
        for index in 0..<plan.servers {
            let arguments = ["wsload", "serve", "--\(ProcessControl.profileServer)", profilePath,
                             "--host", ProcessPlan.serverHost(index),
                             "--\(ProcessControl.controlDescriptor)", String(ProcessControl.controlNumber)] + forwarded
            if let failure = spawn(.server(index), arguments, hasData: true, watch: watch, controls: &controls, open: &open) {
                outcome.failure = failure
                await stopServers(watch: watch, controls: controls, open: &open, fired: &fired)
                return outcome
            }
        }
        let readyBy = clock.now + Self.readyDeadline
        while urls.contains(nil) && outcome.failure == nil {
            guard let event = await watch.next() else { break }
            switch event {
            case .line(.server(let index), .data, let line):
                if case .ready(let url, _)? = ProfileServer.Line(parsing: line) { urls[index] = url }
            case .line(let role, .errors, let line): relay(role, line)
            case .exited(.server(let index), let pid, let termination):
                outcome.failure = "server \(index + 1) (pid \(pid)) \(termination) before it listened"
            case .closed(let role, let stream): open.remove(OpenPipe(role: role, stream: stream))
            case .tick:
                if shutdown.isRequested { outcome.failure = "stopped by \(signalName(shutdown.signal ?? SIGTERM)) before the run started" }
                if clock.now > readyBy { outcome.failure = "the server processes did not listen within \(Self.readyDeadline)" }
            default: break
            }
        }
        if outcome.failure != nil {
            await stopServers(watch: watch, controls: controls, open: &open, fired: &fired)
            return outcome
        }

        // One start for every shard (and every server's chaos timeline), a few seconds ahead: time to load and bind.
        let lead = 2.0 + 0.05 * Double(plan.children)
        let startAt = requested ?? Date(timeIntervalSince1970: ((Date().timeIntervalSince1970 + lead) * 1000).rounded() / 1000)
        outcome.startAt = startAt
        let startText = RFC3339Text.utc(startAt)
        for index in 0..<plan.servers {
            write(.start(millisecondsSince1970: Int64((startAt.timeIntervalSince1970 * 1000).rounded())), to: .server(index), controls)
        }
        for index in 0..<plan.children {
            var arguments = ["wsload", "run", profilePath, "--shard", "\(index + 1)/\(plan.children)", "--start-at", startText,
                             "--out", reportPath(ofShard: index), "--quiet",
                             "--\(ProcessControl.controlDescriptor)", String(ProcessControl.controlNumber),
                             "--\(ProcessControl.progressDescriptor)", String(ProcessControl.progressNumber)] + forwarded
            if plan.servers > 0, let url = urls[plan.server(ofChild: index)] {
                arguments += ["--\(ProcessControl.embeddedAt)", url]
            }
            let role = ProcessWatch.Role.shard(index, of: plan.children)
            if let failure = spawn(role, arguments, hasData: true, watch: watch, controls: &controls, open: &open) {
                output.printError("Error: \(role): \(failure)")
            }
        }

        // Watch the shards to their end.
        let runTime = Duration.seconds(max(0, startAt.timeIntervalSinceNow)) + profile.duration + profile.gracefulStop
        var deadline = clock.now + runTime + Self.margin
        var stopSeenAt: ContinuousClock.Instant?
        var isForwarded = false
        var latest: [Int: RunProgress] = [:]
        var isDirty = false
        var lastDrawn = clock.now
        var killedAtDeadline = Set<Int>()
        func shardsLeft() -> Bool {
            watch.running.contains { if case .shard = $0.role { true } else { false } }
                || open.contains { if case .shard = $0.role { true } else { false } }
        }
        while shardsLeft() {
            guard let event = await watch.next() else { break }
            switch event {
            case .line(.shard(let index, _), .data, let line):
                if let progress = try? ProgressLine.decode(line) {  // a torn line (a child killed mid-write) is dropped
                    latest[index] = progress
                    isDirty = true
                }
            case .line(.server, .data, let line):
                if case .chaos(let index, let firedAt, let affected)? = ProfileServer.Line(parsing: line) {
                    let before = fired[index] ?? (.zero, 0)
                    fired[index] = (max(before.firedAt, firedAt), before.affected &+ affected)
                }
            case .line(let role, .errors, let line): relay(role, line)
            case .exited(.shard(let index, _), let pid, let termination):
                outcome.shards[index] = (pid, termination, killedAtDeadline.contains(index))
            case .exited(.server(let index), let pid, let termination):
                display.finish()
                output.printError("warning: server \(index + 1) (pid \(pid)) \(termination) while the shards ran")
            case .closed(let role, let stream): open.remove(OpenPipe(role: role, stream: stream))
            case .tick:
                if let signal = shutdown.signal {
                    if stopSeenAt == nil {
                        stopSeenAt = clock.now
                        deadline = min(deadline, clock.now + profile.gracefulStop + Self.margin)
                    }
                    // Forwarded a moment later, and only to shards not stopping yet: a terminal's Ctrl-C (or a signal
                    // to the process group) reached them already, and a stop requested before their own signal
                    // arrives would make that signal their second, which exits at once without a report.
                    if !isForwarded, let seen = stopSeenAt, clock.now - seen >= Self.forwardDelay {
                        isForwarded = true
                        for index in 0..<plan.children where latest[index]?.isStopping != true {
                            write(.stop(signal: signal), to: .shard(index, of: plan.children), controls)
                        }
                    }
                }
                if clock.now > deadline {
                    for (role, pid) in watch.running {
                        guard case .shard(let index, _) = role, !killedAtDeadline.contains(index) else { continue }
                        killedAtDeadline.insert(index)
                        display.finish()
                        output.printError("Error: \(role) (pid \(pid)) still ran \(Self.margin) past the run's end: killed")
                        ProcessSpawn.send(SIGKILL, to: pid)
                    }
                    if clock.now > deadline + .seconds(5) { open = open.filter { if case .server = $0.role { true } else { false } } }
                }
                let every: Duration = latest.values.allSatisfy(\.isStopping) ? .milliseconds(250) : .seconds(1)
                if isDirty, clock.now - lastDrawn >= every, let sum = ProgressLine.aggregate(Array(latest.values)) {
                    isDirty = false
                    lastDrawn = clock.now
                    display.update(sum)
                    live.update(sum)
                }
            default: break
            }
        }
        await stopServers(watch: watch, controls: controls, open: &open, fired: &fired)
        outcome.chaos = fired.sorted { $0.key < $1.key }.compactMap { index, record in
            guard index < profile.chaos.count else { return nil }
            let event = profile.chaos[index]
            return RunResult.ChaosRecord(at: event.at, firedAt: record.firedAt, action: event.action.description,
                                         affected: record.affected)
        }
        return outcome
    }

    /// One pipe of one process, while it is open.
    private struct OpenPipe: Hashable {
        var role: ProcessWatch.Role
        var stream: ProcessWatch.Stream
    }

    /// Starts one process: stdin /dev/null; stdout /dev/null for a shard (which is quiet) or its data pipe for a
    /// server; stderr captured; the control pipe's read end as descriptor 3; a shard's progress pipe as 4.
    /// - Returns: why it could not start, or nil.
    private func spawn(_ role: ProcessWatch.Role, _ arguments: [String], hasData: Bool, watch: ProcessWatch,
                       controls: inout [ProcessWatch.Role: Int32], open: inout Set<OpenPipe>) -> String? {
        let control: ProcessPipe, data: ProcessPipe, errors: ProcessPipe
        do {
            (control, data, errors) = (try ProcessPipe(), try ProcessPipe(), try ProcessPipe())
        } catch {
            return "\(error)"
        }
        var descriptors: [Int32: ProcessSpawn.Descriptor] = [
            0: .null(isWritable: false), 2: .duplicate(errors.writeEnd), ProcessControl.controlNumber: .duplicate(control.readEnd),
        ]
        if case .server = role {
            descriptors[1] = .duplicate(data.writeEnd)
        } else {
            descriptors[1] = .null(isWritable: true)
            descriptors[ProcessControl.progressNumber] = .duplicate(data.writeEnd)
        }
        let pid: Int32
        do {
            pid = try ProcessSpawn.spawn(executable, arguments: arguments, descriptors: descriptors)
        } catch {
            for descriptor in [control.readEnd, control.writeEnd, data.readEnd, data.writeEnd, errors.readEnd, errors.writeEnd] {
                ProcessPipe.close(descriptor)
            }
            return "\(error)"
        }
        // The child holds its ends now; the parent keeps the other ends only (so a pipe ends when the child does).
        for descriptor in [control.readEnd, data.writeEnd, errors.writeEnd] { ProcessPipe.close(descriptor) }
        controls[role] = control.writeEnd
        open.insert(OpenPipe(role: role, stream: .data))
        open.insert(OpenPipe(role: role, stream: .errors))
        watch.add(role, pid: pid, data: data.readEnd, errors: errors.readEnd)
        return nil
    }

    private func write(_ message: ProcessControl.Message, to role: ProcessWatch.Role, _ controls: [ProcessWatch.Role: Int32]) {
        guard let descriptor = controls[role] else { return }
        ProcessPipe.write(message.line, to: descriptor)  // a child that already ended reads nothing: nothing to do
    }

    /// A process's stderr line, named (below the progress block, which is drawn again under it).
    private func relay(_ role: ProcessWatch.Role, _ line: String) {
        display.finish()
        output.printError("\(role): \(line)")
    }

    /// Stops every server process (a stop on its control pipe), reads what they still write, and waits for them,
    /// at most ``serverStopDeadline``, then SIGKILL.
    private func stopServers(watch: ProcessWatch, controls: [ProcessWatch.Role: Int32],
                             open: inout Set<OpenPipe>,
                             fired: inout [Int: (firedAt: Duration, affected: Int)]) async {
        for index in 0..<plan.servers { write(.stop(signal: SIGTERM), to: .server(index), controls) }
        let clock = ContinuousClock()
        let deadline = clock.now + Self.serverStopDeadline
        var isKilled = false
        while !watch.running.isEmpty || !open.isEmpty {
            guard let event = await watch.next() else { break }
            switch event {
            case .line(.server, .data, let line):
                if case .chaos(let index, let firedAt, let affected)? = ProfileServer.Line(parsing: line) {
                    let before = fired[index] ?? (.zero, 0)
                    fired[index] = (max(before.firedAt, firedAt), before.affected &+ affected)
                }
            case .line(let role, .errors, let line): relay(role, line)
            case .closed(let role, let stream): open.remove(OpenPipe(role: role, stream: stream))
            case .tick where clock.now > deadline:
                if isKilled {
                    open.removeAll()  // a grandchild holding a pipe open does not keep the parent waiting
                    continue
                }
                isKilled = true
                for (role, pid) in watch.running {
                    output.printError("Error: \(role) (pid \(pid)) did not stop within \(Self.serverStopDeadline): killed")
                    ProcessSpawn.send(SIGKILL, to: pid)
                }
            default: break
            }
        }
    }
}

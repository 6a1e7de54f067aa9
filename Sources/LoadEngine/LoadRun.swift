import Clients
import Crypto
import FileInput
import Foundation
import HTTP1
import Histogram
import Profile
import Reporting
import Runtime
import WebSocket

/// Why a run could not start (the profile was valid, the environment was not).
package struct LoadRunError: Error, Sendable, CustomStringConvertible {
    package var description: String
    package init(description: String) { self.description = description }
}

/// What a run reports while it goes (about once a second) and what it ends with.
package struct RunProgress: Sendable {
    package var elapsed: Duration
    package var duration: Duration
    package var liveConnections: Int
    package var targetConnections: Int
    /// Since the previous progress report.
    package var recent: MetricSet
    package var recentSeconds: Double
    package var total: MetricSet
    /// After the duration: connections still closing are `liveConnections`; this is what is left of
    /// `gracefulStop`.
    package var isStopping: Bool
    package var stopTimeLeft: Duration = .zero
    /// Per scenario, in the profile's order: its name, live connections, the target it follows and its totals so
    /// far (what `--metrics` labels by scenario and `--dashboard` shows). Empty while stopping.
    package var scenarios: [ScenarioProgress] = []
    /// Every invariant check and violation so far (cumulative).
    package var invariants = InvariantReport()
}

extension RunProgress {
    /// A progress assembled outside the engine (`wsload run --processes` sums its children's): the memberwise
    /// initializer is internal.
    package static func assembled(elapsed: Duration, duration: Duration, liveConnections: Int, targetConnections: Int,
                                  recent: MetricSet, recentSeconds: Double, total: MetricSet, isStopping: Bool) -> RunProgress {
        RunProgress(elapsed: elapsed, duration: duration, liveConnections: liveConnections, targetConnections: targetConnections,
                    recent: recent, recentSeconds: recentSeconds, total: total, isStopping: isStopping)
    }
}

/// One scenario's share of a ``RunProgress``.
package struct ScenarioProgress: Sendable {
    package var name: String
    package var liveConnections: Int
    package var targetConnections: Int
    /// Everything the scenario recorded so far (cumulative, histograms lossless).
    package var total: MetricSet

    package init(name: String, liveConnections: Int, targetConnections: Int, total: MetricSet) {
        self.name = name
        self.liveConnections = liveConnections
        self.targetConnections = targetConnections
        self.total = total
    }
}

/// Applies a chaos timeline's action to the server under load (the embedded server's, handed in by whoever
/// started it) and says how many connections it hit.
package protocol ChaosController: Sendable {
    /// Applies `action`; `seed` picks the connections a fraction hits, so a seeded run hits the same ones.
    func apply(_ action: ServerChaosAction, seed: UInt64) async -> Int
}

/// Where a run sends its load, resolved: the WebSocket URL, the HTTP origin transfer scenarios use, and, for
/// a server in this process (the embedded one), its chaos controller.
package struct RunTarget: Sendable {
    package var url: WebSocketURL
    /// `http(s)://host:port` that transfer paths are appended to.
    package var httpOrigin: String
    /// Applies the profile's chaos timeline; nil: the timeline is not applied (only the embedded server has one).
    package var chaos: (any ChaosController)?
    /// The server runs in this process: its sockets count against the same open-file limit as the clients'.
    package var isInProcess: Bool

    /// - Parameter httpOrigin: nil: the URL's scheme (`http` for `ws`, `https` for `wss`) and authority.
    package init(url: WebSocketURL, httpOrigin: String? = nil, chaos: (any ChaosController)? = nil, isInProcess: Bool = false) {
        self.url = url
        self.httpOrigin = httpOrigin ?? (url.isSecure ? "https://" : "http://")
            + url.description.dropFirst(url.isSecure ? 6 : 5).prefix { $0 != "/" }
        self.chaos = chaos
        self.isInProcess = isInProcess
    }
}

/// Runs a validated profile against a resolved target: ramps each scenario's connections up and down on
/// its own schedule, collects every loop's recorders once a second, checks abort thresholds, stops
/// gracefully (closing handshakes, then cancellation after `gracefulStop`), and evaluates thresholds.
/// The embedded server is not started here: `RunHost` starts it and hands its URL and chaos controller in.
package struct LoadRun: Sendable {
    package var profile: Profile
    /// Where `auth.tokenEnv` is looked up.
    package var environment: [String: String]
    /// A stop request (Ctrl-C) ends the load early; the result is still complete.
    package var shutdown: GracefulShutdown?
    /// Called about once a second from the coordinating task.
    package var onProgress: (@Sendable (RunProgress) -> Void)?
    /// Run only this slice of the profile.
    package var shard: Shard?
    /// Where tests bend the run to prove the oracle catches it; empty (every seam honest) in real runs, and
    /// the command line cannot set it.
    package var faults = RunFaults()
    /// Where the run's header and every closed interval are appended while it goes (`wsload run` journals beside
    /// its report); nil: no journal.
    package var journal: RunJournal?
    /// The wall-clock instant the coordinator starts at (`--start-at`; the ramps' zero): the run loads, binds its loops
    /// and waits for it (``StartGate``); a stop request during the wait throws ``StartWaitInterrupted``. nil: at once.
    package var startAt: Date?

    package init(profile: Profile, environment: [String: String] = ProcessInfo.processInfo.environment,
                shutdown: GracefulShutdown? = nil, shard: Shard? = nil,
                onProgress: (@Sendable (RunProgress) -> Void)? = nil) {
        self.profile = profile
        self.environment = environment
        self.shutdown = shutdown
        self.shard = shard
        self.onProgress = onProgress
    }

    /// A run with `faults` injected at its seams (the oracle's proofs).
    package init(profile: Profile, environment: [String: String] = ProcessInfo.processInfo.environment,
                 shutdown: GracefulShutdown? = nil, shard: Shard? = nil, faults: RunFaults,
                 onProgress: (@Sendable (RunProgress) -> Void)? = nil) {
        self.init(profile: profile, environment: environment, shutdown: shutdown, shard: shard, onProgress: onProgress)
        self.faults = faults
    }

    /// Runs a profile whose target is a URL. - Throws: ``LoadRunError`` for an `embedded` target (run it
    /// with `RunHost`, which starts the server), a missing token, too few files.
    package func run() async throws -> RunResult {
        guard case .url(let url) = profile.target else {
            throw LoadRunError(description: "the embedded target needs the embedded server started first (RunHost does)")
        }
        return try await run(target: RunTarget(url: url))
    }

    /// Runs the profile against `target`, whatever the profile's own `target` says.
    package func run(target: RunTarget) async throws -> RunResult {
        var seed = profile.seed ?? UInt64.random(in: 0...UInt64(Int64.max))
        var profile = self.profile
        if let shard { (profile, seed) = shard.slice(profile, seed: seed) }
        var random = SeededRandomNumberGenerator(seed: seed)
        let token = try resolveToken()
        let loopCount = profile.loops ?? EventLoopGroup.defaultLoopCount
        let neededFiles = OpenFileBudget.sockets(for: profile, serverInProcess: target.isInProcess)
        let openFiles = ResourceLimits.raiseOpenFileLimit()
        if !OpenFileBudget.fits(neededFiles, limit: openFiles) {
            throw LoadRunError(description: "the profile needs about \(neededFiles) sockets but this process may open "
                + "\(openFiles) files; lower the connections or split the run into shards")
        }
        let group = try EventLoopGroup(loopCount: loopCount)
        let plans: [ScenarioPlan]
        var scratchDirectories: [String] = []
        do {
            plans = try makePlans(profile, baseURL: target.url, httpOrigin: target.httpOrigin, token: token, seed: seed,
                                  handshakeWindow: HandshakeWindow(loops: group.loops), random: &random,
                                  scratch: &scratchDirectories)
        } catch {
            removeScratch(scratchDirectories)
            _ = group.shutdown()
            throw error
        }
        defer { removeScratch(scratchDirectories) }
        // The coordinator gets a thread of its own: ramps, gathers, progress and aborts keep their pace
        // even when the global pool is busy (or blocked by whatever else shares the process).
        let control: EventLoop
        do {
            control = try EventLoop(index: group.loops.count)
        } catch {
            _ = group.shutdown()
            throw LoadRunError(description: "could not start the control loop: \(error)")
        }
        var coordinator = Coordinator(
            profile: profile, plans: plans, group: group, control: control, random: random, shutdown: shutdown,
            onProgress: onProgress, seed: seed, chaos: target.chaos, journal: journal, shard: shard)
        // The wait for a start time runs where the coordinator will: it starts the moment the wait ends, with no hop.
        let startAt = self.startAt
        typealias Started = Result<CoordinatorOutcome, StartWaitInterrupted>
        let started = await withTaskExecutorPreference(control.taskExecutor) { () -> Started in
            if let startAt, let signal = await StartGate.wait(until: startAt, on: control, shutdown: shutdown) {
                return .failure(StartWaitInterrupted(signal: signal, startAt: startAt))
            }
            return .success(await coordinator.run())
        }
        _ = control.shutdown()
        var outcome: CoordinatorOutcome
        switch started {
        case .failure(let stop):
            _ = group.shutdown()  // nothing started on the loops: no connection, no journal
            throw stop
        case .success(let value):
            outcome = value
        }
        let undoFault = await faults.run?.handlesWillBeCounted(on: group.loops)
        // Let the loops run the close callbacks of what the run just closed before counting.
        for _ in 0..<3 { for loop in group.loops { await onLoop(loop) {} } }
        let liveHandlesAfterStop = group.liveHandleCount
        let waitingTasksAfterStop = group.waitingTaskCount
        undoFault?()
        checkNoTemporaryFiles(plans, into: &outcome.invariants)
        let isClean = liveHandlesAfterStop == 0 && waitingTasksAfterStop == 0
        outcome.invariants.checked[Invariant.cancellation.rawValue, default: 0] += 1
        if !isClean {
            outcome.invariants.violations[Invariant.cancellation.rawValue, default: 0] += 1
            outcome.invariants.examples[Invariant.cancellation.rawValue, default: []].append(.init(
                actor: -1, scenario: "", detail: "\(liveHandlesAfterStop) runtime handles open and "
                    + "\(waitingTasksAfterStop) tasks waiting after every connection ended", history: []))
        }
        _ = group.shutdown()
        return RunResult(
            profile: profile, seed: seed, loops: group.loops.count, startedAt: outcome.startedAt, endedAt: outcome.endedAt,
            elapsed: outcome.elapsed, interruptedBy: shutdown?.signal.map { $0 == 0 ? "request" : signalName($0) },
            abortedBy: outcome.abortedBy, scenarios: outcome.scenarios, total: outcome.total, intervals: outcome.intervals,
            intervalLog: outcome.intervalLog, unfinishedConnections: outcome.unfinishedConnections,
            liveHandlesAfterStop: liveHandlesAfterStop, waitingTasksAfterStop: waitingTasksAfterStop, shard: shard, mergedFrom: [], invariants: outcome.invariants,
            chaos: outcome.chaos, reconnectStorm: outcome.reconnectStorm,
            scheduledStart: startAt.map { .init(at: $0, lateBy: outcome.startedAt.timeIntervalSince($0)) })
    }

    /// Removes the run's scratch directories (transfer downloads without a `directory`).
    private func removeScratch(_ directories: [String]) {
        for directory in directories {
            // Best effort: a scratch directory under the temporary directory that cannot be removed is left to
            // the system's cleanup; the run's result does not depend on it.
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    private func resolveToken() throws -> String? {
        guard let authentication = profile.authentication else { return nil }
        switch authentication.source {
        case .environment(let name):
            guard let token = environment[name], !token.isEmpty else {
                throw LoadRunError(description: "auth.tokenEnv: the environment variable \(name) is not set")
            }
            return token
        case .file(let path):
            // A regular file of at most the cap (UntrustedFile): a FIFO or /dev/zero is refused, never waited on or read.
            let cap = 64 * 1024
            let bytes: [UInt8]
            do throws(UntrustedFile.Failure) {
                bytes = try UntrustedFile.read(path, cap: cap)
            } catch where error.isTooLarge {
                throw LoadRunError(description: "auth.tokenFile: \(path) is larger than 64 KiB")
            } catch {
                throw LoadRunError(description: "auth.tokenFile: cannot read \(path): \(error.reason)")
            }
            let data = Data(bytes)
            guard data.count <= cap, let text = String(data: data, encoding: .utf8) else {
                throw LoadRunError(description: "auth.tokenFile: \(path) is not a UTF-8 token of at most 64 KiB")
            }
            let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty, !token.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
                throw LoadRunError(description: "auth.tokenFile: \(path) holds no usable token (empty, or control characters)")
            }
            return token
        }
    }

    /// After the run: no partial download or temporary file may be left in any transfer directory.
    private func checkNoTemporaryFiles(_ plans: [ScenarioPlan], into invariants: inout InvariantReport) {
        var seen: Set<String> = []
        for plan in plans {
            guard let transfer = plan.transfer, seen.insert(transfer.directory).inserted else { continue }
            let name = Invariant.transferNoTemporaryFiles.rawValue
            invariants.checked[name, default: 0] += 1
            let leftovers = (FileSystem.contents(of: transfer.directory) ?? []).filter {
                $0.hasSuffix(".wsload-part") || $0.hasSuffix(".tmp")
            }
            guard !leftovers.isEmpty else { continue }
            invariants.violations[name, default: 0] += UInt64(leftovers.count)
            invariants.examples[name, default: []].append(.init(
                actor: -1, scenario: plan.scenario.name,
                detail: "\(leftovers.count) temporary files left in \(transfer.directory) after the run: "
                    + leftovers.prefix(3).joined(separator: ", "), history: []))
        }
    }

    /// The transfer side of a download or upload scenario: the URL, a directory, the expected digest, the
    /// file to upload.
    private func makeTransferPlan(
        _ scenario: Scenario, index: Int, httpOrigin: String, token: String?, seed: UInt64,
        scratch: inout [String]
    ) throws -> TransferPlan {
        let transfer = scenario.transfer!
        let path = "scenarios[\(index)].transfer"
        var urlText: String
        var expected = transfer.sha256
        if let url = transfer.url {
            urlText = url
        } else if let requestPath = transfer.path {
            urlText = httpOrigin + requestPath
        } else if scenario.kind == .download, let size = transfer.size {
            let contentSeed = seed &+ UInt64(index)
            urlText = httpOrigin + "/bytes/\(size)?seed=\(contentSeed)"
            expected = PatternContent.sha256(size: size, seed: contentSeed)
        } else {
            urlText = httpOrigin + "/upload"
        }
        let shownURL = urlText.split(separator: "?", maxSplits: 1).first.map { String($0) + (urlText.contains("?") ? "?…" : "") } ?? ""
        if let token, case .query(let name)? = profile.authentication?.placement {
            // Percent-encoded (RFC 3986 §3.4): a token with '&', '#', '=' or spaces stays one query value.
            urlText += (urlText.contains("?") ? "&" : "?") + "\(queryEncoded(name))=\(queryEncoded(token))"
        }
        let url: HTTPURL
        do {
            url = try HTTPURL(urlText)
        } catch {
            // Neither the token nor a signed query goes into the message: the URL is shown without its query.
            throw LoadRunError(description: "\(path): \"\(shownURL)\" is not an http(s) URL")
        }
        var configuration = TransferConfiguration()
        if url.isSecure || profile.tls.caFile != nil || profile.tls.isInsecure {
            do {
                configuration.tls = try TLSContext(role: .client, configuration: TLSConfiguration(
                    caFile: profile.tls.caFile, isInsecure: profile.tls.isInsecure))
            } catch {
                throw LoadRunError(description: "tls: \(error)")
            }
        }
        configuration.serverName = profile.tls.serverName
        for (name, value) in profile.headers { configuration.headers.add(name: name, value: value) }
        if let token, let authentication = profile.authentication {
            switch authentication.placement {
            case .bearer: configuration.bearerToken = token
            case .header(let name):
                configuration.headers.add(name: name, value: token)
                configuration.credentialHeaderNames.insert(name.lowercased())  // never sent to a redirect's other origin
            case .query: break
            }
        }
        configuration.requestTimeout = transfer.requestTimeout
        if let retry = transfer.retry { configuration.retry = retry }
        configuration.bandwidthLimit = transfer.bandwidthLimit
        let directory: String
        if let chosen = transfer.directory {
            do {
                try FileSystem.createDirectories(chosen)
            } catch {
                throw LoadRunError(description: "\(path).directory: \(error)")
            }
            directory = chosen
        } else {
            directory = NSTemporaryDirectory() + "wsload-run-\(getpid())-\(index)-\(UInt32.random(in: 0...UInt32.max))"
            do {
                try FileSystem.createDirectories(directory)
            } catch {
                throw LoadRunError(description: "\(path): cannot create a scratch directory: \(error)")
            }
            scratch.append(directory)
        }
        var uploadFile = transfer.file
        if scenario.kind == .upload, uploadFile == nil, let size = transfer.size {
            let file = directory + "/upload-\(size).bin"
            do {
                let output = try DataFile.open(file, mode: .createNew)
                var buffer: [UInt8] = []
                var offset: Int64 = 0
                while offset < size {
                    let count = Int(min(1 << 20, size - offset))
                    PatternContent.fill(&buffer, count: count, offset: offset, seed: seed &+ UInt64(index))
                    try output.write(buffer[...], at: offset)
                    offset += Int64(count)
                }
                output.close()
            } catch {
                throw LoadRunError(description: "\(path).size: cannot write the upload file \(file): \(error)")
            }
            uploadFile = file
        }
        if let uploadFile, FileSystem.status(of: uploadFile) == nil {
            throw LoadRunError(description: "\(path).file: \(uploadFile) is not a readable file")
        }
        return TransferPlan(kind: scenario.kind, scenario: transfer, url: url, configuration: configuration, directory: directory,
                            expectedDigest: expected, uploadFile: uploadFile)
    }

    private func makePlans(
        _ profile: Profile, baseURL: WebSocketURL, httpOrigin: String, token: String?, seed: UInt64,
        handshakeWindow: HandshakeWindow, random: inout SeededRandomNumberGenerator, scratch: inout [String]
    ) throws -> [ScenarioPlan] {
        var tlsContext: TLSContext?
        if baseURL.isSecure {
            do {
                tlsContext = try TLSContext(role: .client, configuration: TLSConfiguration(
                    caFile: profile.tls.caFile, isInsecure: profile.tls.isInsecure))
            } catch {
                throw LoadRunError(description: "tls: \(error)")
            }
        }
        let largest = profile.scenarios.map { $0.websocket.messageSize.maximum }.max() ?? 0
        // Printable, varied filler: compressible like real text, cheap to slice.
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        var filler = [UInt8](repeating: 0, count: max(largest, 2 * EchoPayload.headerSize))
        for index in filler.indices { filler[index] = alphabet[Int(random.next() % UInt64(alphabet.count))] }
        return try profile.scenarios.enumerated().map { index, scenario in
            if scenario.kind != .websocket {
                let transfer = try makeTransferPlan(scenario, index: index, httpOrigin: httpOrigin, token: token, seed: seed,
                                                    scratch: &scratch)
                return ScenarioPlan(index: index, scenario: scenario, url: baseURL, configuration: .init(), filler: [],
                                    transfer: transfer, stopBound: profile.gracefulStop, faults: faults)
            }
            var url = baseURL
            if let path = scenario.websocket.path { url.target = path }
            var configuration = WebSocketClientConfiguration()
            var headers = HTTPHeaders()
            for (name, value) in profile.headers { headers.add(name: name, value: value) }
            configuration.headers = headers
            configuration.subprotocols = scenario.websocket.subprotocols
            configuration.compression = scenario.websocket.compression ? PerMessageDeflateOffer() : nil
            configuration.tls = tlsContext
            configuration.serverName = profile.tls.serverName
            configuration.pongTimeout = scenario.websocket.pingTimeout
            configuration.handshakeWindow = handshakeWindow
            configuration.faults = faults.client
            if let token, let authentication = profile.authentication {
                switch authentication.placement {
                case .bearer: configuration.authentication = .bearer(token)
                case .header(let name): configuration.authentication = .header(name: name, value: token)
                case .query(let name): configuration.authentication = .query(name: name, token: token)
                }
            }
            // A flow's `${vu}` numbers connections as the unsharded run would: this slice starts at its offset.
            let vuOffset = shard.map { self.profile.scenarios[index].websocket.connections * $0.index / $0.count } ?? 0
            let flow = scenario.websocket.flow.map {
                // The unsharded profile: the feeder binding's unique offsets are the whole run's, as `${vu}` is.
                FlowPlan($0, profile: self.profile, scenarioIndex: index, vuOffset: vuOffset)
            }
            return ScenarioPlan(index: index, scenario: scenario, url: url, configuration: configuration, filler: filler,
                                stopBound: profile.gracefulStop, faults: faults, flow: flow)
        }
    }
}

/// `text` percent-encoded for a query name or value: everything but RFC 3986's unreserved characters.
private func queryEncoded(_ text: String) -> String {
    var output = ""
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            output.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            output += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }
    }
    return output
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}

import Clients
import Crypto
import Glibc
import HTTP1
import LoadEngine
import Profile
import Reporting
import Runtime

/// `wsload download`: one download, as curl and aria2 users expect it: single or ranged, resumable,
/// verified, with a progress bar on a TTY.
enum DownloadCommand: Subcommand {
    static let name = "download"
    static let summary = "Download one URL (single stream or ranged), resumable, with a progress bar."
    static let helpText = """
        OVERVIEW: Download one URL (single stream or ranged), resumable, with a progress bar.

        The file is written to FILE.wsload-part beside FILE and renamed into place only when it is complete
        (and matches --sha256). If the download fails or is interrupted (Ctrl-C), the partial file stays and its
        resume data is kept in FILE.wsload-resume; running the same command again continues where it stopped
        (Range with If-Range; a changed file on the server restarts cleanly). With --session ID the transfer is
        journaled in FILE's directory as ID.wsload-session (fsync'd): a process killed outright and started again
        with the same ID resumes from its last checkpoint and reports the completion exactly once.

        USAGE: wsload download <url> -o <file> [options]

        OPTIONS:
          -o, --output <file>     Where to put the file (required).
          --segments <n>          Split into n byte ranges (aria2 -s). (default: 1)
          --connections <m>       Use at most m connections at once (aria2 -x). (default: the segment count)
          --min-segment <size>    Smallest range to split off (aria2 -k). (default: 1MiB)
          --sha256 <hex>          Verify the finished file; a mismatch fails and keeps nothing at FILE.
          --digest                Print the finished file's SHA-256 (computed as it arrives when it can be).
          --session <id>          Journal the transfer so a killed process resumes it (see above).
          --limit-rate <size>     At most this many bytes per second.
          --timeout <duration>    Fail a request that sends nothing for this long. (default: 60s)
          --max-time <duration>   Fail the whole download after this long.
          --retries <n>           Retry a failed request or range this many times. (default: 5)
          --header <name: value>  Add a request header (repeatable; not Authorization).
          --token-env <var>       Send Authorization: Bearer with the token in this environment variable.
          --ca-file <file>        Trust this CA bundle (PEM) for https.
          --insecure              Do not verify the server's certificate.
          --quiet                 Print nothing but errors.
          -h, --help              Show help information.

        Resume data or a session journal made for another URL or file is never applied: a resume file for another
        URL is set aside (the download starts fresh), and a session whose journal holds an unfinished download of
        another URL or into another file is refused (finish it with its own command, or use another --session).
        Credentials (--token-env, credential --header values such as Cookie or X-Api-Key) go only to the URL's own
        origin: a redirect to another scheme, host or port is followed without them, one from https to http is
        refused. URL queries are shown as ?… in messages.

        EXIT CODES: 0 downloaded; 1 the transfer failed (resume data kept); 64 usage; 65 the session journal is
        unreadable (too large) or holds another download; 74 a local file error (disk full, file-size limit,
        permissions); 130 interrupted (resume data kept).

        """

    private struct Options {
        var url: HTTPURL
        var output: String
        var request: DownloadRequest
        var configuration: TransferConfiguration
        var session: String?
        var isQuiet: Bool
    }

    static func run(arguments: [String], output: CommandOutput) async -> ExitCode {
        let options: Options
        do {
            options = try parse(arguments)
        } catch {
            output.printError("Error: \(error)\nSee 'wsload download --help'.")
            return .usage
        }
        let group: EventLoopGroup
        do {
            group = try EventLoopGroup(loopCount: 1)
        } catch {
            output.printError("Error: cannot start an event loop: \(error)")
            return .failure
        }
        defer { group.shutdown() }
        let loop = group.loops[0]
        let bar = ProgressBar(output: output, isEnabled: output.isErrorTerminal && !options.isQuiet)
        let outcome: Result<(DownloadResult?, TransferCompletion?), TransferError>
        let signal: Int32?
        do {
            (outcome, signal) = try await withShutdownSignals(on: loop) { shutdown in
                try await withThrowingTaskGroup(of: (Result<(DownloadResult?, TransferCompletion?), TransferError>, Int32?)?.self) { tasks in
                    tasks.addTask(executorPreference: loop.taskExecutor) {
                        (await transfer(options, on: loop, bar: bar, output: output), nil)
                    }
                    tasks.addTask {
                        guard let signal = await shutdown.wait() else { return nil }
                        return (.failure(TransferError(.cancelled, "interrupted")), signal)
                    }
                    var signal: Int32?
                    while let next = try await tasks.next() {
                        guard let next else { continue }
                        if next.1 != nil {
                            signal = next.1
                            tasks.cancelAll()  // The transfer ends with cancelled and keeps its resume data.
                            continue
                        }
                        tasks.cancelAll()
                        return (next.0, signal)
                    }
                    return (.failure(TransferError(.cancelled, "interrupted")), signal)
                }
            }
        } catch {
            output.printError("Error: \(error)")
            return .failure
        }
        bar.finish()
        switch outcome {
        case .success(let (result, completion)):
            if !options.isQuiet { output.print(summary(result: result, completion: completion, output: options.output)) }
            return .success
        case .failure(let error):
            if error.code == .cancelled || signal != nil {
                output.printError("wsload download: interrupted; run the same command again to resume"
                    + (options.session == nil ? " (resume data in \(options.output).wsload-resume)" : " (session \(options.session!))"))
                return .interrupted
            }
            output.printError("Error: \(error)" + (error.resumeData != nil ? "\nThe partial file is kept; run the same command again to resume." : ""))
            switch error.code {
            case .file: return .ioError
            case .invalidRequest: return .invalidInput
            default: return .failure
            }
        }
    }

    private static func parse(_ arguments: [String]) throws -> Options {
        let parsed = try Arguments(
            arguments.map { $0 == "-o" ? "--output" : $0 },
            valueOptions: ["output", "segments", "connections", "min-segment", "sha256", "session", "limit-rate", "timeout", "max-time",
                           "retries", "header", "token-env", "ca-file"],
            flagOptions: ["insecure", "quiet", "digest"], acceptsPositional: true)
        guard parsed.positional.count == 1 else { throw UsageError("give exactly one URL") }
        let url: HTTPURL
        do {
            url = try HTTPURL(parsed.positional[0])
        } catch {
            throw UsageError("\(error)")
        }
        guard let output = parsed.value("output"), !output.isEmpty else { throw UsageError("-o/--output FILE is required") }
        guard !FileSystem.isDirectory(output) else { throw UsageError("-o: \(output) is a directory; name the file") }
        let segments = try parsed.integer("segments", in: 1...1024) ?? 1
        let connections = try parsed.integer("connections", in: 1...1024)
        var expected: [UInt8]?
        if let hex = parsed.value("sha256") {
            guard let bytes = hexBytes(hex), bytes.count == 32 else { throw UsageError("--sha256: \"\(hex)\" is not 64 hex digits") }
            expected = bytes
        }
        var configuration = TransferConfiguration()
        configuration.requestTimeout = try parsed.duration("timeout") ?? .seconds(60)
        if let maximum = try parsed.duration("max-time") { configuration.resourceTimeout = maximum }
        if let rate = try parsed.byteSize("limit-rate") {
            guard rate > 0 else { throw UsageError("--limit-rate must be more than 0") }
            configuration.bandwidthLimit = rate
        }
        configuration.retry.maximumAttempts = try parsed.integer("retries", in: 0...1000) ?? 5
        for header in parsed.values("header") {
            let (name, value) = try Arguments.header(header)
            guard name.lowercased() != "authorization" else { throw UsageError("--header: pass tokens with --token-env, not on the command line") }
            configuration.headers.add(name: name, value: value)
        }
        if let variable = parsed.value("token-env") {
            guard let token = getenv(variable).map({ String(cString: $0) }), !token.isEmpty else {
                throw UsageError("--token-env: the environment variable \(variable) is not set")
            }
            configuration.bearerToken = token
        }
        if url.isSecure || parsed.value("ca-file") != nil || parsed.has("insecure") {
            do {
                configuration.tls = try TLSContext(role: .client, configuration: TLSConfiguration(
                    caFile: parsed.value("ca-file"), isInsecure: parsed.has("insecure")))
            } catch {
                throw UsageError("TLS: \(error)")
            }
        }
        configuration.isDurable = parsed.value("session") != nil
        let request = DownloadRequest(
            url: url, destination: output, segments: segments, connections: connections,
            minimumSegmentSize: try parsed.byteSize("min-segment") ?? 1024 * 1024, expectedSHA256: expected,
            computesDigest: parsed.has("digest"))
        return Options(url: url, output: output, request: request, configuration: configuration, session: parsed.value("session"),
                       isQuiet: parsed.has("quiet"))
    }

    /// Runs the download, directly (resume data in a side file) or through a journaled session.
    private static func transfer(
        _ options: Options, on loop: EventLoop, bar: ProgressBar, output: CommandOutput
    ) async -> Result<(DownloadResult?, TransferCompletion?), TransferError> {
        if let identifier = options.session {
            return await transferInSession(identifier, options, on: loop, bar: bar)
        }
        let resumePath = options.output + ".wsload-resume"
        var resumeData: ResumeData?
        // A resume file that cannot be opened, read or parsed is as good as none: the download starts fresh.
        if let size = FileSystem.size(of: resumePath), size < 1 << 20, let file = try? DataFile.open(resumePath, mode: .read) {
            var bytes: [UInt8] = []
            try? file.read(into: &bytes, count: Int(size), at: 0)  // a short read fails to parse below
            if let data = try? ResumeData(serialized: bytes), data.destination == options.output,
                (try? HTTPURL(data.url)) != nil  // a URL that no longer parses: start fresh
            {
                if data.belongs(to: options.url, destination: options.output) {
                    resumeData = data
                } else if !options.isQuiet {
                    output.printError("wsload download: \(resumePath) is for another URL; starting fresh")
                }
            }
        }
        reserveRoomForResumeData(at: resumePath + ".tmp", options)
        let task = DownloadTask(request: options.request, configuration: options.configuration, loop: loop, resumeData: resumeData,
                                onProgress: { bar.update(written: $0.bytesWritten, expected: $0.bytesExpected) })
        do {
            let result = try await task.run()
            // Done: the resume files are stale; one already gone is what we want.
            try? FileSystem.remove(resumePath)
            try? FileSystem.remove(resumePath + ".tmp")
            return .success((result, nil))
        } catch let error as TransferError {
            if let data = error.resumeData {
                writeResumeData(data, to: resumePath)
            } else {
                // Nothing to resume from: stale resume files go; one already gone is what we want.
                try? FileSystem.remove(resumePath)
                try? FileSystem.remove(resumePath + ".tmp")
            }
            return .failure(error)
        } catch {
            try? FileSystem.remove(resumePath + ".tmp")  // the reserved room only; the error that matters is rethrown below
            return .failure(TransferError(.network, "\(error)"))
        }
    }

    /// Takes the room the resume data will need before the download starts: a disk that fills up leaves none
    /// to write it in afterwards, and a failed download must keep its resume data. ``writeResumeData(_:to:)``
    /// overwrites this file in place (blocks already allocated need no new space), then renames it.
    private static func reserveRoomForResumeData(at temporary: String, _ options: Options) {
        // Best effort: without reserved room, resume data is still written if the disk allows.
        try? FileSystem.remove(temporary)
        guard let file = try? DataFile.open(temporary, mode: .createNew, permissions: 0o600) else { return }
        defer { file.close() }
        // Generous: the URL after redirects, three paths and one [first, last, received] triple per segment.
        let size = 16 * 1024 + 4 * (options.url.description.utf8.count + options.output.utf8.count) + 64 * options.request.segments
        if (try? file.write([UInt8](repeating: UInt8(ascii: " "), count: size)[...], at: 0)) == nil {
            try? FileSystem.remove(temporary)  // best effort, as above
        }
    }

    private static func transferInSession(
        _ identifier: String, _ options: Options, on loop: EventLoop, bar: ProgressBar
    ) async -> Result<(DownloadResult?, TransferCompletion?), TransferError> {
        let session: TransferSession
        do {
            session = try TransferSession(identifier: identifier, directory: FileSystem.directory(of: options.output),
                                          configuration: options.configuration, loop: loop)
        } catch let error as TransferError {
            return .failure(error)
        } catch {
            return .failure(TransferError(.file, "\(error)"))
        }
        defer { Task { await session.close() } }
        let completions = Lock<[TransferCompletion]>([])
        do {
            let unfinished = await session.unfinishedTaskIDs
            let undelivered = await session.undeliveredTaskIDs
            if unfinished.isEmpty && undelivered.isEmpty {
                try await session.add(.download(options.request))
            } else {
                for id in unfinished + undelivered {
                    guard let journaled = await session.downloadRequest(of: id) else { continue }
                    if journaled.url.resourceIdentity != options.url.resourceIdentity || journaled.destination != options.output {
                        return .failure(TransferError(.invalidRequest, "session \(identifier) holds an unfinished download of "
                            + "\(journaled.url.redactedDescription) into \(journaled.destination), not of "
                            + "\(options.url.redactedDescription) into \(options.output): run that command again to finish it, "
                            + "or use another --session"))
                    }
                }
            }
            try await session.run(onProgress: { _, written in bar.update(written: written, expected: nil) },
                                  onCompletion: { completion in completions.withLock { $0.append(completion) } })
        } catch let error as TransferError {
            return .failure(error)
        } catch {
            return .failure(TransferError(.cancelled, "\(error)"))
        }
        if Task.isCancelled { return .failure(TransferError(.cancelled, "interrupted")) }
        guard let completion = completions.withLock({ $0.last }) else {
            return .failure(TransferError(.cancelled, "interrupted"))
        }
        if case .failed(let code, let detail) = completion.outcome {
            return .failure(TransferError(code == "no_space" || code == "file_too_large" ? .file : .network, "\(code): \(detail)"))
        }
        return .success((nil, completion))
    }

    private static func writeResumeData(_ data: ResumeData, to path: String) {
        let temporary = path + ".tmp"
        // The room reserved before the download (on a full disk, a new file could not be written).
        // A reservation that cannot be reopened is replaced by a new file; if that fails too there is nowhere to write.
        // Never through a link swapped in meanwhile (O_NOFOLLOW: ELOOP, then it is removed and a new file created).
        let reserved = try? DataFile.open(temporary, mode: .updateNoFollow)  // nil: missing or a link, replaced just below
        if reserved == nil { try? FileSystem.remove(temporary) }  // a link itself is removed, not what it points to
        // Owner-only: resume data holds the URL, a signed query included.
        guard let file = reserved ?? (try? DataFile.open(temporary, mode: .createNew, permissions: 0o600)) else { return }  // no room: nowhere to write
        let bytes = data.serialized()
        do {
            try file.write(bytes[...], at: 0)
            try file.truncate(to: Int64(bytes.count))
            try file.synchronize()
            file.close()
            try FileSystem.rename(temporary, to: path)
        } catch {
            file.close()
            try? FileSystem.remove(temporary)  // a torn temporary is worse than none
        }
    }

    private static func summary(result: DownloadResult?, completion: TransferCompletion?, output: String) -> String {
        if let result {
            let seconds = Double(result.duration.nanoseconds) / 1e9
            let rate = seconds > 0 ? Double(result.bytesTransferred) / seconds : 0
            var text = "wsload download: \(output): \(formatBytes(result.length)) in \(formatDuration(result.duration))"
                + " (\(formatBytes(saturatingInt64(rate)))/s), \(result.segments) segment\(result.segments == 1 ? "" : "s") over"
                + " \(result.connectionsOpened) connection\(result.connectionsOpened == 1 ? "" : "s")"
            if result.isRangeFallback { text += " (the server ignores ranges: one stream)" }
            if result.isResumed { text += ", resumed: \(formatBytes(result.bytesReused)) kept, \(formatBytes(result.bytesTransferred)) fetched" }
            if result.retries > 0 { text += ", \(result.retries) retr\(result.retries == 1 ? "y" : "ies")" }
            if result.restarts > 0 { text += ", restarted \(result.restarts)×" }
            if let digest = result.sha256 { text += "\nsha256 \(Crypto.hex(digest))" }
            return text
        }
        guard let completion, case .downloaded(let location, let length, let sha256) = completion.outcome else { return "" }
        var text = "wsload download: \(location): \(formatBytes(length)), \(formatBytes(completion.bytesTransferred)) fetched by this process"
        if completion.isReplayed { text += " (finished before a relaunch; delivered now)" }
        if let sha256 { text += "\nsha256 \(sha256)" }
        return text
    }
}

/// A one-line progress bar on stderr, redrawn at most 10 times a second; silent when not a TTY.
final class ProgressBar: Sendable {
    private struct State {
        var written: Int64 = 0
        var expected: Int64?
        var lastDraw: UInt64 = 0
        var start: UInt64 = 0
        var hasDrawn = false
    }

    private let output: CommandOutput
    private let isEnabled: Bool
    private let state = Lock(State())

    init(output: CommandOutput, isEnabled: Bool) {
        self.output = output
        self.isEnabled = isEnabled
    }

    func update(written: Int64, expected: Int64?) {
        guard isEnabled else { return }
        let now = monotonicNanoseconds()
        let line: String? = state.withLock { state in
            if state.start == 0 { state.start = now }
            state.written = written
            if let expected { state.expected = expected }
            guard now - state.lastDraw >= 100_000_000 else { return nil }
            state.lastDraw = now
            state.hasDrawn = true
            return Self.render(state, now: now)
        }
        if let line { output.writeError("\r\u{1B}[2K" + line) }
    }

    func finish() {
        guard isEnabled else { return }
        if state.withLock({ $0.hasDrawn }) { output.writeError("\r\u{1B}[2K") }
    }

    private static func render(_ state: State, now: UInt64) -> String {
        let seconds = Double(now - state.start) / 1e9
        let rate = seconds > 0 ? Double(state.written) / seconds : 0
        guard let expected = state.expected, expected > 0 else {
            return "\(formatBytes(state.written))  \(formatBytes(saturatingInt64(rate)))/s"
        }
        let fraction = min(1, Double(state.written) / Double(expected))
        let width = 30
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "=", count: filled) + (filled < width ? ">" : "") + String(repeating: " ", count: max(0, width - filled - 1))
        let remaining = rate > 0 ? Double(expected - state.written) / rate : 0
        // The expected length is the server's: a huge Content-Length over a trickle gives an ETA no Int holds.
        return "[\(bar)] \(Int(fraction * 100))% \(formatBytes(state.written))/\(formatBytes(expected))"
            + "  \(formatBytes(saturatingInt64(rate)))/s  ETA \(saturatingInt64(remaining))s"
    }
}

private func monotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// `value` as an Int64, clamped to 0...Int64.max (NaN gives 0): rates and ETAs derived from what a server sent.
private func saturatingInt64(_ value: Double) -> Int64 { max(0, saturatedInt64(value)) }

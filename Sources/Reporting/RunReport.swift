import Crypto
import Foundation
import JSON
import Profile

/// The JSON report of a run (schema `wsload.report/1`, documented in docs/REPORT.md): everything needed
/// to trust, merge and compare it — the tool and host, the profile without secrets and its digest, the
/// per-metric summaries with lossless histograms, the interval series, the thresholds and the errors.
package enum RunReport {
    package static let schema = "wsload.report/1"

    /// Header names whose values are treated as secrets and never written.
    static func isSensitiveHeader(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return ["auth", "token", "secret", "key", "cookie", "session", "password", "credential"].contains { lowered.contains($0) }
    }

    /// The profile document with every possible secret replaced by `"<redacted>"`.
    package static func sanitizedProfile(_ document: JSONValue) -> JSONValue {
        guard var root = document.objectValue else { return document }
        if var headers = root["headers"]?.objectValue {
            for name in headers.keys where isSensitiveHeader(name) { headers[name] = "<redacted>" }
            root["headers"] = .object(headers)
        }
        return .object(root)
    }

    package static func json(_ result: RunResult, toolVersion: String, commit: String?) -> JSONValue {
        let profileDocument = sanitizedProfile(result.profile.document)
        let digest = Crypto.hex(Crypto.sha256(Array(profileDocument.formatted(pretty: false).utf8)))
        let seconds = min(result.elapsed, result.profile.duration).seconds
        var uname = utsname()
        _ = Glibc.uname(&uname)
        let kernel = withUnsafeBytes(of: uname.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let system = withUnsafeBytes(of: uname.sysname) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let machine = withUnsafeBytes(of: uname.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }

        var report = JSONObject()
        report["schema"] = .string(schema)
        report["tool"] = ["name": "wsload", "version": .string(toolVersion), "commit": JSONValue(commit)]
        report["host"] = [
            "os": .string(system), "kernel": .string(kernel), "architecture": .string(machine),
            "cores": JSONValue(ProcessInfo.processInfo.activeProcessorCount), "loops": JSONValue(result.loops),
        ]
        report["profile"] = [
            "name": .string(result.profile.name), "digest": .string("sha256:" + digest), "document": profileDocument,
        ]
        var run: JSONObject = [
            "start": .string(timestamp(result.startedAt)), "end": .string(timestamp(result.endedAt)),
            "elapsedSeconds": .number(roundedSeconds(result.elapsed)), "plannedSeconds": .number(result.profile.duration.seconds),
            "seed": .string(String(result.seed)), "interrupted": .bool(result.interruptedBy != nil),
        ]
        run["interruptedBy"] = JSONValue(result.interruptedBy)
        run["abortedBy"] = JSONValue(result.abortedBy)
        run["unfinishedConnections"] = JSONValue(result.unfinishedConnections)
        run["liveHandlesAfterStop"] = JSONValue(result.liveHandlesAfterStop)
        run["waitingTasksAfterStop"] = JSONValue(result.waitingTasksAfterStop)
        if let shard = result.shard { run["shard"] = .string(shard.description) }
        for field in startFields(of: result) { run[field.key] = field.value }
        if let storm = result.reconnectStorm {
            run["reconnectStorm"] = [
                "peakReconnectsPer100ms": JSONValue(storm.peakReconnectsPer100ms),
                "peakDropsPer100ms": JSONValue(storm.peakDropsPer100ms),
            ]
        }
        if let journal = result.recoveredFrom {
            run["incomplete"] = .bool(true)
            run["recoveredFrom"] = .string(journal)
        }
        if let id = result.runID { run["id"] = .string(id) }
        if !result.mergedFrom.isEmpty { run["mergedFrom"] = .array(result.mergedFrom.map { .string($0) }) }
        if !result.mergedRunIDs.isEmpty { run["mergedRunIds"] = .array(result.mergedRunIDs.map { .string($0) }) }
        if !result.missingShards.isEmpty { run["missingShards"] = .array(result.missingShards.map { .string($0.description) }) }
        report["run"] = .object(run)
        report["scenarios"] = .array(result.scenarios.map { scenario in
            let websocket = scenario.scenario.websocket
            var entry: JSONObject = [
                "name": .string(scenario.scenario.name), "kind": .string(scenario.scenario.kind.rawValue),
            ]
            if let transfer = scenario.scenario.transfer {
                entry["concurrency"] = JSONValue(websocket.connections)
                var details: JSONObject = ["segments": JSONValue(transfer.segments)]
                if let size = transfer.size { details["size"] = JSONValue(size) }
                if let path = transfer.path { details["path"] = .string(path) }
                if let url = transfer.url { details["url"] = .string(url) }
                if transfer.interruptProbability > 0 { details["interrupt"] = .number(transfer.interruptProbability) }
                if scenario.scenario.kind == .upload { details["method"] = .string(transfer.method) }
                entry["transfer"] = .object(details)
                entry["metrics"] = scenario.metrics.json(seconds: seconds, operations: operations(scenario.metrics))
                return .object(entry)
            }
            entry["pattern"] = .string(websocket.pattern.rawValue)
            entry["connections"] = JSONValue(websocket.connections)
            if websocket.pattern == .echo || websocket.pattern == .typed {
                entry["model"] = .string(websocket.schedule.modelName)
                entry["latencyMeasuredFrom"] = .string(websocket.schedule.modelName == "open" ? "intended send time" : "actual send")
                if case .open(let rate) = websocket.schedule { entry["ratePerConnection"] = .number(rate) }
                entry["scheduleDelivered"] = deliveredFraction(scenario.metrics)
            }
            entry["metrics"] = scenario.metrics.json(seconds: seconds, operations: operations(scenario.metrics))
            return .object(entry)
        })
        report["total"] = ["metrics": result.total.json(seconds: seconds, operations: operations(result.total))]
        // Each interval's histograms are copied at rest (blob and figures), never decoded all at once.
        report["intervals"] = .array(result.intervals.map { interval in
            let span = (interval.end - interval.start).seconds
            let received = Double(interval.counts.counter(.messagesReceived))
            return [
                "start": .number(roundedSeconds(interval.start)), "end": .number(roundedSeconds(interval.end)),
                "connections": JSONValue(interval.liveConnections),
                "messagesPerSecond": .number(span > 0 ? (received / span * 10).rounded() / 10 : 0),
                "metrics": interval.metricsJSON(seconds: span),
            ]
        })
        if let log = result.intervalLog { report["intervalSeries"] = intervalSeries(log) }
        report["thresholds"] = .array(result.thresholds.map { outcome in
            var entry: JSONObject = [
                "expression": .string(outcome.threshold.expression), "passed": .bool(outcome.passed),
                "limit": .number(outcome.threshold.limit),
            ]
            entry["actual"] = outcome.actual.map { .number(($0 * 1000).rounded() / 1000) } ?? .null
            if outcome.actual == nil { entry["note"] = .string(outcome.note ?? "no samples") }
            entry["abortOnFail"] = .bool(outcome.threshold.abortOnFail)
            return .object(entry)
        })
        report["thresholdsPassed"] = .bool(result.thresholdsPassed)
        if !result.chaos.isEmpty {
            report["chaos"] = .array(result.chaos.map { record in
                ["at": .number(roundedSeconds(record.at)), "firedAt": .number(roundedSeconds(record.firedAt)),
                 "action": .string(record.action), "affected": JSONValue(record.affected)]
            })
        }
        report["invariants"] = result.invariants.json()
        report["invariantsHeld"] = .bool(result.invariantsHeld)
        var errors = JSONObject()
        for code in result.total.errors.keys.sorted() { errors[code] = JSONValue(result.total.errors[code]!) }
        report["errors"] = .object(errors)
        return .object(report)
    }

    static func operations(_ metrics: MetricSet) -> UInt64 { metrics.operations }

    /// `intervalSeries`: the base interval, how many base intervals each entry of `intervals` merges (a power of two),
    /// how many there were, and the file beside the report holding every one (null when `intervals` is all of them).
    static func intervalSeries(_ log: RunResult.IntervalLog) -> JSONValue {
        var series: JSONObject = ["baseSeconds": .number(log.baseSeconds), "factor": JSONValue(log.factor),
                                  "count": JSONValue(log.count), "file": JSONValue(log.file)]
        if let why = log.fileMissing { series["fileMissing"] = .string(why) }  // a merge that could not merge the logs
        return .object(series)
    }

    /// Replies received per request scheduled (open model) or sent (closed model).
    static func deliveredFraction(_ metrics: MetricSet) -> JSONValue {
        let scheduled = metrics[counter: .messagesScheduled] ?? metrics.counter(.messagesSent)
        guard scheduled > 0 else { return .null }
        return .number((Double(metrics.counter(.messagesReceived)) / Double(scheduled) * 10000).rounded() / 10000)
    }

    static func roundedSeconds(_ duration: Duration) -> Double { (duration.seconds * 1000).rounded() / 1000 }

    /// `date` as the report writes times: RFC 3339 in UTC with milliseconds (`2026-12-01T23:30:00.250Z`); messages
    /// show times the same way.
    package static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// `<name>-<UTC timestamp>.json`.
    package static func fileName(for result: RunResult) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return "\(result.profile.name)-\(formatter.string(from: result.startedAt)).json"
    }

    /// Writes `text` to `path` atomically: a temporary file in the same directory, then a rename, so a
    /// reader never sees half a report. Creates the directory if needed. The temporary is created with
    /// `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0644: a file or symlink planted at its name is never written
    /// through (another name is tried).
    package static func writeAtomically(_ text: String, to path: String) throws {
        try writeAtomically(to: path) { write in try write(text) }
    }

    /// Writes what `produce` hands its `write` function, piece by piece, to `path` atomically (as
    /// ``writeAtomically(_:to:)``): a long export streams instead of being built in memory first. If `produce` or a
    /// write throws, the temporary is removed and the error passed on; nothing is at `path`.
    package static func writeAtomically(to path: String, _ produce: (_ write: (String) throws -> Void) throws -> Void) throws {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp").path
        var descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        var attempts = 1
        while descriptor < 0 && errno == EEXIST && attempts < 8 {
            // Something is already at that name (a stale temporary, or a planted symlink): use a fresh name.
            temporary = directory.appendingPathComponent(
                ".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp").path
            descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            attempts += 1
        }
        guard descriptor >= 0 else { throw writeError("cannot create \(temporary)") }
        let temporaryPath = temporary
        func write(_ text: String) throws {
            if let failure = writeFully(text, to: descriptor) {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot write \(temporaryPath): \(failure)"])
            }
        }
        do {
            try produce(write)
        } catch {
            // A write cut short (disk full, file-size limit) or a producer that failed must not leave its partial file.
            close(descriptor)
            unlink(temporary)
            throw error
        }
        guard close(descriptor) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot write \(temporary): \(reason)"])
        }
        guard rename(temporary, url.path) == 0 else {
            let error = writeError("cannot rename into \(path)")
            // The rename's failure is the error to report; a temporary that cannot be removed either adds nothing.
            unlink(temporary)
            throw error
        }
    }

    /// Writes all of `text` to `descriptor` (a short write continued, EINTR retried); why it could not (strerror),
    /// or nil.
    package static func writeFully(_ text: String, to descriptor: Int32) -> String? {
        Array(text.utf8).withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return String(cString: strerror(written < 0 ? errno : EIO)) }
                offset += written
            }
            return nil
        }
    }

    /// The error of the last failed system call, described with `what`.
    private static func writeError(_ what: String) -> CocoaError {
        let reason = String(cString: strerror(errno))
        return CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "\(what): \(reason)"])
    }
}

import FileInput
import Foundation
import JSON
import Profile

/// A run journal (`wsload.journal/1`) read record by record, from a file a chunk at a time or from bytes: memory is
/// one record (at most ``RunJournal/maximumRecordSize``) whatever the journal's size, so a journal of days (or the
/// interval log a completed run kept) streams. `wsload report --recover` (``JournalRecovery``) and `--hlog` read it.
///
/// The header comes first (``readHeader()``), then the intervals in order (``nextInterval(budget:)``): each numbered
/// from 0, starting where the one before ended; a run that completed ends with its end record (``end``), after which
/// nothing may follow. A torn last line (no line end: the run was killed while writing it)
/// ends the journal with a warning naming its byte offset; any other bad line is an error naming its line and offset.
package struct JournalReader {
    /// The header record: everything a report holds that is not an interval's.
    package struct Header: Sendable {
        package var profile: Profile
        package var seed: UInt64
        package var shard: Shard?
        package var loops: Int
        package var startedAt: Date
        package var toolVersion: String
        package var commit: String?
        package var runID: String?
        /// `run.startAt` and `run.lateBy` (`--start-at`); nil without one, and in journals from before the header had it.
        package var scheduledStart: RunResult.ScheduledStart?
    }

    /// One interval record: the run-wide interval, the same interval per scenario (the header's order), and the
    /// invariant checks made during it.
    package struct IntervalRecord: Sendable {
        package var total: RunResult.Interval
        package var scenarios: [MetricSet]
        package var invariants: InvariantReport
    }

    /// Where a record is: its 1-based line and the byte offset of the line's first byte.
    package struct Place: Sendable, Equatable {
        package var line: Int
        package var offset: Int
    }

    /// How the journal is named in errors and warnings.
    package let source: String
    /// The journal's size in bytes (known before it is read).
    package let size: Int
    /// What was ignored (a torn last record), for the user.
    package private(set) var warnings: [String] = []
    package private(set) var header: Header?
    /// The end record, once read: the journal of a run that completed (it is the last record).
    package private(set) var end: JournalEndRecord?
    private var lines: JournalLines
    private var nextIndex = 0
    private var previousEnd = Duration.zero

    /// Opens the journal at `path`; an oversized one is refused by its size before any of it is read.
    /// - Throws: ``JournalFormatError`` (unreadable: a missing file, a directory).
    package init(contentsOf path: String) throws(JournalFormatError) {
        // A FIFO or a device put where a journal should be is refused before anything waits on it or reads it.
        let descriptor: Int32
        let size: Int
        do throws(UntrustedFile.Failure) {
            (descriptor, size) = try UntrustedFile.open(path)
        } catch {
            throw JournalFormatError(source: path, reason: error.reason, isUnreadable: true)
        }
        guard size <= RunJournal.maximumSize else {
            _ = Glibc.close(descriptor)
            throw JournalFormatError(source: path, reason: "\(size) bytes: larger than the journal cap of "
                + RunJournal.capDescription)
        }
        source = path
        self.size = size
        lines = JournalLines(descriptor: descriptor, source: path)
    }

    /// Reads a journal held in memory; `source` names it in errors.
    package init(bytes: [UInt8], source: String) {
        self.source = source
        size = bytes.count
        lines = JournalLines(bytes: bytes, source: source)
    }

    /// Closes the file (a journal read from bytes has none). Reading after it finds the end.
    package mutating func close() { lines.close() }

    /// Reads the header, the first record. - Throws: ``JournalFormatError`` at line 1 when there is no complete one.
    package mutating func readHeader() throws(JournalFormatError) -> Header {
        if let header { return header }
        switch try lines.next() {
        case .line(let bytes, let place):
            let record = try Self.parse(bytes, at: place, source: source)
            let parsed = try Self.header(record, fail: { JournalFormatError(source: source, line: place.line, offset: place.offset, reason: $0) })
            header = parsed
            return parsed
        case .torn(let offset, let length):
            warnings.append(Self.tornWarning(source: source, offset: offset, length: length))
            fallthrough
        case .end:
            throw JournalFormatError(source: source, line: 1, offset: 0, reason: "no complete header record: not a wsload run journal")
        }
    }

    /// The next interval record and where it is, or nil at the end (after a torn last line, with a warning). Its
    /// histograms are taken from `budget`. - Throws: ``JournalFormatError`` naming the line and its byte offset.
    package mutating func nextInterval(budget: inout HistogramDecodeBudget) throws(JournalFormatError) -> (IntervalRecord, Place)? {
        let header = try readHeader()
        switch try lines.next() {
        case .end: return nil
        case .torn(let offset, let length):
            warnings.append(Self.tornWarning(source: source, offset: offset, length: length))
            return nil
        case .line(let bytes, let place):
            let record = try Self.parse(bytes, at: place, source: source)
            let source = self.source
            let fail = { JournalFormatError(source: source, line: place.line, offset: place.offset, reason: $0) }
            guard end == nil else { throw fail("a record after the end record (the journal ends there)") }
            if record["record"]?.stringValue == "end" {
                let end = try JournalEndRecord(record, header: header, budget: &budget, fail: fail)
                guard end.intervals == nextIndex else {
                    throw fail("intervals: the end record counts \(end.intervals) intervals, the journal holds \(nextIndex)")
                }
                self.end = end
                // Whatever follows is read (and refused) by the next call: the end record ends the intervals.
                return try nextInterval(budget: &budget)
            }
            let interval = try Self.interval(
                record, index: nextIndex, header: header, previousEnd: previousEnd, budget: &budget,
                fail: { JournalFormatError(source: source, line: place.line, offset: place.offset, reason: $0) })
            nextIndex += 1
            previousEnd = interval.total.end
            return (interval, place)
        }
    }

    private static func tornWarning(source: String, offset: Int, length: Int) -> String {
        "\(source): ignored a torn last record at byte offset \(offset) "
            + "(\(length) bytes without a line end: the run was killed while writing it)"
    }

    private static func parse(_ bytes: ArraySlice<UInt8>, at place: Place, source: String) throws(JournalFormatError) -> JSONValue {
        do {
            return try JSONValue(parsing: bytes)
        } catch {
            throw JournalFormatError(source: source, line: place.line, offset: place.offset, reason: "not a JSON record: \(error)")
        }
    }

    private static func header(_ record: JSONValue, fail: (String) -> JournalFormatError) throws(JournalFormatError) -> Header {
        guard record["record"]?.stringValue == "header" else { throw fail("the first record is not the journal's header") }
        guard let schema = record["schema"]?.stringValue else { throw fail("schema: missing: is this a wsload run journal?") }
        guard schema == RunJournal.schema else {
            throw fail("schema: \"\(schema)\" is not \(RunJournal.schema), the journal format this build reads")
        }
        guard let toolVersion = record["tool"]?["version"]?.stringValue else { throw fail("tool.version: expected a string") }
        guard let document = record["profile"]?["document"] else { throw fail("profile.document: missing") }
        var profile: Profile
        do {
            profile = try ProfileDecoder.decode(Array(document.formatted(pretty: false).utf8))
        } catch {
            throw fail("profile.document: not a valid profile: \(error.problems.first?.description ?? "")")
        }
        guard let run = record["run"] else { throw fail("run: missing") }
        guard let start = run["start"]?.stringValue, let startedAt = parseTimestamp(start) else {
            throw fail("run.start: not an ISO 8601 time")
        }
        guard let seedText = run["seed"]?.stringValue, let seed = UInt64(seedText) else { throw fail("run.seed: not a seed") }
        guard let loops = run["loops"]?.integerValue, loops >= 0, loops <= 1 << 16 else { throw fail("run.loops: expected a count") }
        var shard: Shard?
        if let text = run["shard"]?.stringValue {
            guard let parsed = Shard(parsing: text) else { throw fail("run.shard: \"\(text)\" is not i/n") }
            shard = parsed
        }
        // The scenarios as this process ran them (a shard's share of the connections), in the profile's order.
        guard let scenarios = record["scenarios"]?.arrayValue, scenarios.count == profile.scenarios.count else {
            throw fail("scenarios: expected one entry per scenario of the profile (\(profile.scenarios.count))")
        }
        for (index, entry) in scenarios.enumerated() {
            guard entry["name"]?.stringValue == profile.scenarios[index].name else {
                throw fail("scenarios[\(index)].name: expected \"\(profile.scenarios[index].name)\"")
            }
            guard let connections = entry["connections"]?.integerValue, connections >= 0 else {
                throw fail("scenarios[\(index)].connections: expected a count")
            }
            profile.scenarios[index].websocket.connections = connections
        }
        var runID: String?
        if let id = run["id"] {
            guard let text = id.stringValue, !text.isEmpty, text.utf8.count <= 100 else { throw fail("run.id: expected a run id") }
            runID = text
        }
        let scheduledStart: RunResult.ScheduledStart?
        do {
            scheduledStart = try LoadedReport.start(in: run, source: "header").0
        } catch {
            throw fail("\(error.path.dropFirst("header: ".count)): \(error.reason)")
        }
        return Header(profile: profile, seed: seed, shard: shard, loops: loops, startedAt: startedAt, toolVersion: toolVersion,
                      commit: record["tool"]?["commit"]?.stringValue, runID: runID, scheduledStart: scheduledStart)
    }

    /// The longest span an interval bound may name (about 31 years): keeps every conversion to milliseconds exact.
    private static let maximumSeconds = 1e9

    private static func interval(_ record: JSONValue, index: Int, header: Header, previousEnd: Duration,
                                 budget: inout HistogramDecodeBudget,
                                 fail: (String) -> JournalFormatError) throws(JournalFormatError) -> IntervalRecord {
        guard record["record"]?.stringValue == "interval" else {
            throw fail("record: expected \"interval\" (the header comes once, first)")
        }
        guard record["index"]?.integerValue == index else { throw fail("index: expected \(index) (intervals are journaled in order)") }
        func bound(_ key: String) throws(JournalFormatError) -> Duration {
            guard let seconds = record[key]?.numberValue, seconds.isFinite, seconds >= 0, seconds <= maximumSeconds else {
                throw fail("\(key): expected seconds from 0 to \(Int(maximumSeconds))")
            }
            return .milliseconds(Int64((seconds * 1000).rounded()))
        }
        let start = try bound("start")
        let end = try bound("end")
        guard start == previousEnd else {
            throw fail("start: \(start.seconds) s is not where the interval before ended (\(previousEnd.seconds) s)")
        }
        guard end >= start else { throw fail("end: before the interval's start") }
        guard let connections = record["connections"]?.integerValue, connections >= 0 else {
            throw fail("connections: expected a count")
        }
        func metrics(_ value: JSONValue?, at path: String) throws(JournalFormatError) -> MetricSet {
            guard let value else { throw fail("\(path): missing") }
            do {
                return try MetricSet(json: value, path: path, budget: &budget)
            } catch {
                throw fail(error.description)
            }
        }
        let total = try metrics(record["metrics"], at: "metrics")
        let names = header.profile.scenarios.map(\.name)
        guard let scenarios = record["scenarios"]?.arrayValue, scenarios.count == names.count else {
            throw fail("scenarios: expected one entry per scenario (\(names.count))")
        }
        var perScenario: [MetricSet] = []
        for (position, entry) in scenarios.enumerated() {
            guard entry["name"]?.stringValue == names[position] else {
                throw fail("scenarios[\(position)].name: expected \"\(names[position])\"")
            }
            perScenario.append(try metrics(entry["metrics"], at: "scenarios[\(position)].metrics"))
        }
        let invariants: InvariantReport
        do {
            invariants = try InvariantReport(json: record["invariants"] ?? .object(JSONObject()), path: "invariants")
        } catch {
            throw fail(error.description)
        }
        return IntervalRecord(
            total: .init(start: start, end: end, liveConnections: connections, metrics: total), scenarios: perScenario,
            invariants: invariants)
    }
}

/// The lines of a journal: from bytes in memory, or from a file read a chunk at a time, keeping at most one line (up to
/// ``RunJournal/maximumRecordSize``) and one chunk in memory. Tracks each line's number and byte offset. The buffer is
/// filled and searched through pointers (read(2), memchr, memmove): a journal is mostly long lines.
struct JournalLines {
    enum Item {
        case line(ArraySlice<UInt8>, JournalReader.Place)
        /// Bytes after the last line end: a record cut short.
        case torn(offset: Int, length: Int)
        case end
    }

    /// How much is read from a file at once.
    static let chunkSize = 1 << 20

    private let source: String
    private var descriptor: Int32
    /// `storage[0..<filled]` holds the journal from offset `bufferOffset` on.
    private var storage: [UInt8]
    private var filled: Int
    private var bufferOffset = 0
    /// Where the next line starts in `storage`.
    private var position = 0
    /// Where the search for the next line end resumes (bytes before it hold none).
    private var scanned = 0
    private var isAtEnd: Bool
    private var lineNumber = 1

    init(bytes: [UInt8], source: String) {
        self.source = source
        descriptor = -1
        storage = bytes
        filled = bytes.count
        isAtEnd = true
    }

    init(descriptor: Int32, source: String) {
        self.source = source
        self.descriptor = descriptor
        storage = []
        filled = 0
        isAtEnd = false
    }

    mutating func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
        isAtEnd = true
    }

    mutating func next() throws(JournalFormatError) -> Item {
        while true {
            if let end = lineEnd(from: scanned) {
                let place = JournalReader.Place(line: lineNumber, offset: bufferOffset + position)
                guard end - position <= RunJournal.maximumRecordSize else { throw oversized(at: place) }
                let line = storage[position..<end]
                position = end + 1
                scanned = position
                lineNumber += 1
                return .line(line, place)
            }
            scanned = filled
            if isAtEnd {
                guard position < filled else { return .end }
                let torn = Item.torn(offset: bufferOffset + position, length: filled - position)
                position = filled
                return torn
            }
            if filled - position > RunJournal.maximumRecordSize { return try skipOversized() }
            try readChunk()
        }
    }

    /// Moves the unconsumed bytes to the front, then appends the next chunk of the file (none at its end).
    private mutating func readChunk() throws(JournalFormatError) {
        if position > 0 {
            let (start, count) = (position, filled - position)
            storage.withUnsafeMutableBytes { bytes in _ = memmove(bytes.baseAddress!, bytes.baseAddress! + start, count) }
            bufferOffset += position
            scanned -= position
            filled = count
            position = 0
        }
        if storage.count - filled < Self.chunkSize {
            // Doubling, up to what a record at the cap and one chunk need (never more is held).
            let capacity = max(filled + Self.chunkSize, min(2 * storage.count, RunJournal.maximumRecordSize + 2 * Self.chunkSize))
            var grown = [UInt8](repeating: 0, count: capacity)
            let count = filled
            grown.withUnsafeMutableBytes { to in storage.withUnsafeBytes { from in _ = memcpy(to.baseAddress!, from.baseAddress!, count) } }
            storage = grown
        }
        let (descriptor, start) = (self.descriptor, filled)
        var count = -1
        while count < 0 {
            count = storage.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + start, Self.chunkSize) }
            if count < 0 && errno != EINTR {
                let reason = String(cString: strerror(errno))
                close()
                throw JournalFormatError(source: source, reason: "cannot be read (\(reason))", isUnreadable: true)
            }
        }
        filled += count
        if count == 0 { close() }
        // A journal that grew past the cap while it was read (a run still appending to it) is refused like one
        // that was too large to begin with.
        guard bufferOffset + filled <= RunJournal.maximumSize else {
            close()
            throw JournalFormatError(source: source, reason: "larger than the journal cap of \(RunJournal.capDescription)")
        }
    }

    /// A line past the record cap: read on without keeping it, to tell a torn last record (no line end before the
    /// journal's end: ignored like any torn record) from an oversized one (an error).
    private mutating func skipOversized() throws(JournalFormatError) -> Item {
        let place = JournalReader.Place(line: lineNumber, offset: bufferOffset + position)
        var length = filled - position
        while true {
            bufferOffset = place.offset + length
            (filled, position, scanned) = (0, 0, 0)
            try readChunk()
            if lineEnd(from: 0) != nil { throw oversized(at: place) }
            length += filled
            if isAtEnd { return .torn(offset: place.offset, length: length) }
        }
    }

    /// The index of the first line end in the buffer at or after `start` (memchr: a journal's lines are long).
    private func lineEnd(from start: Int) -> Int? {
        guard start < filled else { return nil }
        return storage.withUnsafeBufferPointer { bytes in
            memchr(bytes.baseAddress! + start, Int32(UInt8(ascii: "\n")), filled - start).map {
                bytes.baseAddress!.distance(to: $0.assumingMemoryBound(to: UInt8.self))
            }
        }
    }

    private func oversized(at place: JournalReader.Place) -> JournalFormatError {
        JournalFormatError(source: source, line: place.line, offset: place.offset,
                           reason: "a record longer than the journal's cap of \(RunJournal.maximumRecordSize >> 20) MiB")
    }
}

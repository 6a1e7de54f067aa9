import HTTP1
import Profile
import Runtime

/// What a GET or HEAD sends: generated pattern bytes, or a file opened from the files directory.
enum ContentSource {
    case pattern(size: Int64, seed: UInt64)
    case file(DataFile, size: Int64, modified: Int64, inode: UInt64)

    var size: Int64 {
        switch self {
        case .pattern(let size, _), .file(_, let size, _, _): size
        }
    }

    var validators: Validators {
        switch self {
        case .pattern(let size, let seed):
            Validators(entityTag: EntityTag(opaque: "p-\(size)-\(seed)"), lastModified: HTTPDate(secondsSince1970: 1_700_000_000).description)
        case .file(_, let size, let modified, let inode):
            Validators(entityTag: EntityTag(opaque: "f-\(String(inode, radix: 16))-\(String(size, radix: 16))-\(String(modified, radix: 16))"),
                       lastModified: HTTPDate(secondsSince1970: modified / 1_000_000_000).description)
        }
    }

    /// The regular file `name` directly inside `directory`, or nil (answered 404 like a missing file): a name
    /// with `/`, a leading `.`, `%`, a control character or NUL is refused; a symbolic link is not followed
    /// (`O_NOFOLLOW`); what was opened is checked with `fstat` (a regular file), so a swap between a check and
    /// the open cannot serve something else. Opened non-blocking, so a FIFO cannot stall the loop.
    static func file(named name: String, in directory: String?) -> ContentSource? {
        guard let directory, isPlainFileName(name) else { return nil }
        // A file that cannot be opened (missing, a link, no permission) is answered 404 like one that does not exist.
        guard let file = try? DataFile.open(directory + "/" + name, mode: .readNoFollow) else { return nil }
        // fstat of the open descriptor failing is as good as not found; the file is closed when released.
        guard let status = try? file.status(), status.isRegularFile else {
            file.close()
            return nil
        }
        return .file(file, size: status.size, modified: status.modifiedNanoseconds, inode: status.inode)
    }
}

/// A single path component a client may name (served or stored): 1–255 bytes, no `/`, no leading `.`, no `%`
/// (names are taken literally), no control character, NUL or backslash.
func isPlainFileName(_ name: String) -> Bool {
    !name.isEmpty && name.utf8.count <= 255 && !name.hasPrefix(".")
        && name.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "%") && $0 != UInt8(ascii: "\\") }
}

extension HTTPService {
    /// Sends `count` bytes from `first`; returns how many were sent (fewer when chaos drops the connection).
    func sendBody(_ source: ContentSource, first: Int64, count: Int64, chaos: HTTPChaosOptions) async throws -> Int64 {
        var buffer: [UInt8] = []
        var sent: Int64 = 0
        let limit = chaos.dropAfterBytes.map { min(max($0, 0), count) } ?? count
        let rate = chaos.throttleBytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        let chunk: Int64 = rate.map { max(1024, min(256 * 1024, $0 / 20)) } ?? 256 * 1024
        let clock = LoopClock()
        let start = clock.now
        while sent < limit {
            let size = Int(min(chunk, limit - sent))
            switch source {
            case .pattern(_, let seed):
                PatternContent.fill(&buffer, count: size, offset: first + sent, seed: seed)
            case .file(let file, _, _, _):
                try file.read(into: &buffer, count: size, at: first + sent)
                if buffer.isEmpty { return sent }  // The file shrank under us: end short, the client sees it.
            }
            try await write(buffer)
            sent += Int64(buffer.count)
            server.statistics.bytesServed.add(buffer.count, ordering: .relaxed)
            if let rate {
                let due = start.advanced(by: pacingDelay(bytes: sent, bytesPerSecond: rate))
                if due > clock.now { try await clock.sleep(until: due) }
            }
        }
        if sent < count {
            // Exactly `dropAfterBytes` reach the client: flush what is queued (a close would discard it), then FIN.
            server.statistics.chaosCloses.add(1, ordering: .relaxed)
            try? await stream.shutdownWrite()  // the peer may have closed first; the FIN is all that is left to send
            stream.close()
        }
        return sent
    }
}

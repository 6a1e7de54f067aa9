import Crypto
import Runtime

// The end of a download: length and digest checked, then the partial file renamed into place.
extension DownloadTask {
    var wantsDigest: Bool { request.expectedSHA256 != nil || request.computesDigest }

    /// Checks the length and digest, then renames the partial file into place.
    func finish() throws -> [UInt8]? {
        guard let part else { throw TransferError(.file, "the partial file is not open") }
        let length = totalLength ?? bytesWritten
        if let incomplete = plan.firstIndex(where: { !$0.isComplete }) {
            throw TransferError(.lengthMismatch, "segment \(incomplete) is incomplete")
        }
        guard bytesWritten == length else {
            throw TransferError(.lengthMismatch, "received \(bytesWritten) bytes, expected \(length)")
        }
        if try part.size() != length { try part.truncate(to: length) }
        var digest: [UInt8]?
        if wantsDigest {
            digest = try inlineHasher?.finalize() ?? Self.digest(of: part, length: length)
            if let expected = request.expectedSHA256, digest != expected {
                throw TransferError(.digestMismatch, "SHA-256 \(Crypto.hex(digest!)) is not the expected \(Crypto.hex(expected))")
            }
        }
        try part.synchronizeIfDurable(configuration.isDurable)
        part.close()
        try FileSystem.rename(request.partPath, to: request.destination)
        return digest
    }

    static func digest(of file: DataFile, length: Int64) throws -> [UInt8] {
        let hasher = SHA256Hasher()
        var buffer: [UInt8] = []
        var offset: Int64 = 0
        while offset < length {
            try file.read(into: &buffer, count: Int(min(4 * 1024 * 1024, length - offset)), at: offset)
            if buffer.isEmpty { break }
            hasher.update(buffer)
            offset += Int64(buffer.count)
        }
        return hasher.finalize()
    }
}

extension DataFile {
    func synchronizeIfDurable(_ isDurable: Bool) throws {
        if isDurable { try synchronize() }
    }
}

import Crypto
import HTTP1
import Runtime

extension HTTPService {
    /// The upload sink: digests the body (and its multipart parts), stores it with an upload directory, answers JSON.
    ///
    /// A stored upload never replaces a file: a client-chosen name that exists is refused with 409; an unnamed
    /// upload gets the first free `upload-N` (created exclusively, so concurrent uploads cannot share one). An
    /// upload that fails half-way removes the file it created. Names are single plain components
    /// (``isPlainFileName(_:)``): nothing is written outside the directory.
    func receiveUpload(_ request: HTTPRequestHead, framing: HTTPBodyFraming, name: String, buffer: inout [UInt8]) async throws -> Bool {
        let keepAlive = request.keepsConnectionAlive
        let maximum = configuration.maximumUploadSize
        if case .length(let declared) = framing, declared > maximum {
            try await refuse(413, "Content Too Large", "the limit is \(maximum) bytes (serve --max-upload)\n")
            return false
        }
        let boundary = try MultipartScanner.boundary(contentType: request.headers["Content-Type"] ?? "")
        var file: DataFile?
        if let directory = configuration.uploadDirectory {
            guard name.isEmpty || isPlainFileName(name) else {
                try await refuse(400, "Bad Request", "upload name: a single file name without /, %, control characters or a leading dot\n")
                return false
            }
            switch createUploadFile(named: name, in: directory) {
            case .success(let created): file = created
            case .failure(.exists):
                try await refuse(409, "Conflict", "upload name: \(name) exists already; an upload never replaces a file\n")
                return false
            case .failure(.cannotCreate(let reason)):
                try await refuse(500, "Internal Server Error", "cannot store the upload: \(reason)\n")
                return false
            }
        }
        var completed = false
        defer {
            file?.close()
            // The file is this upload's own (created exclusively): a failed upload leaves nothing behind.
            if !completed, let path = file?.path { try? FileSystem.remove(path) }
        }
        if request.headers["Expect"]?.lowercased() == "100-continue" {
            try await write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        let hasher = SHA256Hasher()
        var scanner = boundary.map { MultipartScanner(boundary: $0) }
        let total: Int64
        do {
            total = try await readBody(framing, buffer: &buffer) { bytes, received in
                if received > maximum { throw UploadTooLarge() }
                hasher.update(bytes)
                try file?.write(bytes, at: received - Int64(bytes.count))
                scanner?.feed(bytes)
            }
        } catch is UploadTooLarge {
            // A chunked body gives no length up front: it is refused when it passes the limit.
            try await refuse(413, "Content Too Large", "the limit is \(maximum) bytes (serve --max-upload)\n")
            return false
        }
        completed = true
        server.statistics.uploads.add(1, ordering: .relaxed)
        server.statistics.bytesUploaded.add(Int(clamping: total), ordering: .relaxed)
        var answer = "{\"bytes\":\(total),\"sha256\":\"\(Crypto.hex(hasher.finalize()))\""
        if let file { answer += ",\"name\":\(jsonString(FileSystem.lastComponent(of: file.path)))" }
        if let scanner {
            answer += ",\"parts\":[" + scanner.parts.map { part in
                "{\"name\":\(jsonString(part.name)),\"filename\":\(jsonString(part.fileName ?? "")),\"bytes\":\(part.bytes),\"sha256\":\"\(part.sha256)\"}"
            }.joined(separator: ",") + "]"
        }
        answer += "}\n"
        try await sendSimple(request.method == "PUT" ? 201 : 200, request.method == "PUT" ? "Created" : "OK", answer,
                             keepAlive: keepAlive, extra: ["Content-Type": "application/json"])
        return keepAlive
    }

    /// A body without a declared length went past ``ServerConfiguration/maximumUploadSize``.
    private struct UploadTooLarge: Error {}

    private enum UploadFileError: Error {
        case exists
        case cannotCreate(String)
    }

    /// Creates the upload's file exclusively (`O_CREAT|O_EXCL`: never an existing file, never through a link).
    private func createUploadFile(named name: String, in directory: String) -> Result<DataFile, UploadFileError> {
        if !name.isEmpty {
            do {
                return .success(try DataFile.open(directory + "/" + name, mode: .createNew))
            } catch {
                return .failure(FileSystem.exists(directory + "/" + name) ? .exists : .cannotCreate(error.description))
            }
        }
        var lastError = "no free upload-N name"
        for _ in 0..<1000 {
            let number = server.statistics.uploadNames.add(1, ordering: .relaxed).newValue
            let path = directory + "/upload-\(number)"
            do {
                return .success(try DataFile.open(path, mode: .createNew))
            } catch {
                // Taken (by an earlier run, or a client that chose that name): try the next number.
                lastError = error.description
                if !FileSystem.exists(path) { break }
            }
        }
        return .failure(.cannotCreate(lastError))
    }
}

/// The highest N of the `upload-N` files in `directory` (0 when none, or it cannot be listed); read once when
/// the server starts. Numbers too big to go on from are skipped (the open loop then finds a free one).
func highestUploadNumber(in directory: String) -> Int {
    var highest = 0
    for name in FileSystem.contents(of: directory) ?? [] where name.hasPrefix("upload-") {
        let digits = name.dropFirst("upload-".count)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(digits),
              number < Int.max / 2 else { continue }
        highest = max(highest, number)
    }
    return highest
}

import Crypto
import Foundation
import Runtime
import TestSupport
import Testing

/// A scratch directory, removed when released.
final class ScratchDirectory: @unchecked Sendable {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "wsload-hostile-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path + "/in", withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }
    func names(in folder: String) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: file(folder)).sorted() }
    func contents(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: file(name)))) }

    deinit { try? FileManager.default.removeItem(atPath: path) }  // best effort: a leftover temp dir harms nothing
}

/// Uploads and files against hostile names and bodies: never overwrite, never outside the directory, never a link.
@Suite("Hostile uploads and file names against wsload serve (child process)", .timeLimit(.minutes(3)))
struct HostileUploadTests {
    @Test("a client-chosen upload name never replaces a file (409); unnamed uploads running at once get distinct names")
    func uploadNames() async throws {
        let scratch = try ScratchDirectory()
        try Data("original".utf8).write(to: URL(fileURLWithPath: scratch.file("in/kept.bin")))
        let server = try await ServerChild.serve(["--upload-dir", scratch.file("in")])
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let replace = try await RawPeer.connect(port: server.port, on: loop, sending: "PUT /upload/kept.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nevil!")
            try await replace.read()
            replace.close()
            #expect(replace.statuses == [409], "\(replace.text.prefix(300))")
            // Two unnamed uploads at once: the first still sending while the second completes.
            let first = try await RawPeer.connect(port: server.port, on: loop, sending: "PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\nAAAAA")
            try await Task.sleep(for: .milliseconds(300))
            let second = try await RawPeer.connect(port: server.port, on: loop, sending: "PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\nBBBBBBBBBB")
            try await second.read()
            try await first.send("AAAAA")
            try await first.read()
            first.close()
            second.close()
            #expect(first.statuses == [201] && second.statuses == [201], "\(first.text) \(second.text)")
            try await expectServes(port: server.port, on: loop)
        }
        _ = try await server.stop()
        #expect(try scratch.contents("in/kept.bin") == Array("original".utf8))
        let stored = try scratch.names(in: "in").filter { $0 != "kept.bin" }
        #expect(stored.count == 2, "\(stored)")
        let bodies = Set(try stored.map { String(decoding: try scratch.contents("in/" + $0), as: UTF8.self) })
        #expect(bodies == ["AAAAAAAAAA", "BBBBBBBBBB"], "\(bodies)")
    }

    @Test("1,500 upload-N files left by earlier runs: an unnamed upload is stored as upload-1501 (it was 1,000 failed opens, then 500)")
    func unnamedUploadPastLeftovers() async throws {
        let scratch = try ScratchDirectory()
        for number in 1...1500 { #expect(FileManager.default.createFile(atPath: scratch.file("in/upload-\(number)"), contents: nil)) }
        let server = try await ServerChild.serve(["--upload-dir", scratch.file("in")])
        try await withLoopGroup(loopCount: 1) { group in
            let peer = try await RawPeer.connect(port: server.port, on: group.loops[0],
                                                 sending: "PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
            try await peer.read()
            peer.close()
            #expect(peer.statuses == [201] && peer.text.contains("\"name\":\"upload-1501\""), "\(peer.text.prefix(300))")
        }
        _ = try await server.stop()
        #expect(try scratch.contents("in/upload-1501") == Array("abc".utf8))
    }

    @Test("--max-upload refuses a larger upload with 413 and stores nothing")
    func maximumUpload() async throws {
        let scratch = try ScratchDirectory()
        let server = try await ServerChild.serve(["--upload-dir", scratch.file("in"), "--max-upload", "1000"])
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let declared = try await RawPeer.connect(port: server.port, on: loop, sending: "PUT /upload/big HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n")
            try await declared.read()
            declared.close()
            #expect(declared.statuses == [413], "\(declared.text.prefix(300))")
            let chunked = try await RawPeer.connect(port: server.port, on: loop, sending: "PUT /upload/big2 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n" + String(repeating: "z", count: 2000) + "\r\n0\r\n\r\n")
            try await chunked.read()
            chunked.close()
            #expect(chunked.statuses == [413], "\(chunked.text.prefix(300))")
            try await expectServes(port: server.port, on: loop)
        }
        _ = try await server.stop()
        #expect(try scratch.names(in: "in") == [])
    }

    @Test("multipart: a boundary over 70 bytes is refused (400); part names with quotes and control characters are JSON-escaped")
    func multipart() async throws {
        let server = try await ServerChild.serve([])
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            let long = String(repeating: "b", count: 71)
            let body = "--\(long)\r\n\r\nx\r\n--\(long)--\r\n"
            let refused = try await RawPeer.connect(port: server.port, on: loop, sending: "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=\(long)\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
            try await refused.read()
            refused.close()
            #expect(refused.statuses == [400] && refused.text.contains("boundary"), "\(refused.text.prefix(300))")
            let part = "--XyZ\r\nContent-Disposition: form-data; name=\"a\\\"b\u{1}c\"; filename=\"f\\\\\"\r\n\r\nhello\r\n--XyZ--\r\n"
            let named = try await RawPeer.connect(port: server.port, on: loop, sending: "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
                + "Content-Length: \(part.utf8.count)\r\nConnection: close\r\n\r\n\(part)")
            try await named.read()
            named.close()
            #expect(named.statuses == [200], "\(named.text.prefix(300))")
            let json = named.text.components(separatedBy: "\r\n\r\n").last ?? ""
            let answer = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            let parts = try #require(answer?["parts"] as? [[String: Any]], "\(json)")
            #expect(parts.count == 1 && parts.first?["bytes"] as? Int == 5, "\(json)")
            #expect(parts.first?["sha256"] as? String == Crypto.hex(Crypto.sha256(Array("hello".utf8))))
            try await expectServes(port: server.port, on: loop)
        }
        _ = try await server.stop()
    }

    @Test("/files never follows a symbolic link out of the directory (404), and serves the regular file beside it")
    func filesSymlink() async throws {
        let scratch = try ScratchDirectory()
        try Data("secret".utf8).write(to: URL(fileURLWithPath: scratch.file("secret.txt")))
        try Data("public".utf8).write(to: URL(fileURLWithPath: scratch.file("in/plain.txt")))
        try FileManager.default.createSymbolicLink(atPath: scratch.file("in/link.txt"), withDestinationPath: scratch.file("secret.txt"))
        let server = try await ServerChild.serve(["--files", scratch.file("in")])
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            for (name, status) in [("link.txt", 404), ("plain.txt", 200), ("..", 404), ("plain.txt%00", 404)] {
                let peer = try await RawPeer.connect(port: server.port, on: loop, sending: "GET /files/\(name) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                try await peer.read()
                peer.close()
                #expect(peer.statuses == [status], "\(name): \(peer.text.prefix(300))")
                #expect(!peer.text.contains("secret"), "\(name) served the file outside the directory")
            }
        }
        _ = try await server.stop()
    }
}

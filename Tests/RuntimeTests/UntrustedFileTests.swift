import FileInput
import Foundation
import Glibc
import Testing

/// The one reader of files a user or a profile names, without the CLI: what it refuses, in what words, and that it
/// never waits on a FIFO nor reads past its cap.
@Suite(.timeLimit(.minutes(2))) struct UntrustedFileTests {
    private let directory: String = {
        let path = NSTemporaryDirectory() + "wsload-untrusted-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    private func write(_ name: String, _ bytes: [UInt8]) -> String {
        let path = directory + "/" + name
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    private func failure(_ body: () throws -> Void) -> UntrustedFile.Failure? {
        do {
            try body()
            return nil
        } catch {
            return error as? UntrustedFile.Failure
        }
    }

    @Test("a regular file is read whole; exactly at the cap is allowed, one byte past it is refused naming the cap")
    func capBoundary() throws {
        let exact = write("exact", [UInt8](repeating: 7, count: 1024))
        #expect(try UntrustedFile.read(exact, cap: 1024) == [UInt8](repeating: 7, count: 1024))
        let over = write("over", [UInt8](repeating: 7, count: 1025))
        let refused = failure { _ = try UntrustedFile.read(over, cap: 1024) }
        #expect(refused == UntrustedFile.Failure(path: over, kind: .tooLarge(cap: 1024)))
        #expect(refused?.description == "\(over): is larger than 1 KiB" && refused?.isTooLarge == true)
        #expect(try UntrustedFile.read(write("empty", []), cap: 10) == [])
        // A file larger than the first buffer (4 KiB) grows it, byte-exact.
        let pattern = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(try UntrustedFile.read(write("big", pattern), cap: 1 << 20) == pattern)
    }

    @Test("a file with no size (/proc) is read to its end within the cap, and refused one byte past it")
    func sizelessFile() throws {
        let status = try UntrustedFile.read("/proc/self/status", cap: 1 << 20)
        #expect(String(decoding: status, as: UTF8.self).hasPrefix("Name:"))
        #expect(failure { _ = try UntrustedFile.read("/proc/self/status", cap: 16) }?.isTooLarge == true)
    }

    @Test("a FIFO (no writer: must not wait), /dev/zero, a directory, a socket are refused saying what each is")
    func notRegularFiles() throws {
        let fifo = directory + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(failure { _ = try UntrustedFile.read(fifo, cap: 10) }?.description == "\(fifo): is a FIFO, not a regular file")
        #expect(failure { _ = try UntrustedFile.read("/dev/zero", cap: 10) }?.kind == .notRegularFile("a character device"))
        #expect(failure { _ = try UntrustedFile.open(directory) }?.kind == .notRegularFile("a directory"))
        let socketPath = directory + "/socket"
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in socketPath.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        #expect(failure { _ = try UntrustedFile.read(socketPath, cap: 10) }?.kind == .notRegularFile("a socket"))
    }

    @Test("missing, a missing parent, and a symbolic link: followed by default, refused with followsLinks false")
    func missingAndLinks() throws {
        let missing = directory + "/missing"
        #expect(failure { _ = try UntrustedFile.read(missing, cap: 10) }?.description == "\(missing): no such file")
        #expect(failure { _ = try UntrustedFile.read(directory + "/missing/child", cap: 10) }?.kind == .missing)
        let target = write("target", Array("hello".utf8))
        let link = directory + "/link"
        #expect(symlink(target, link) == 0)
        #expect(try UntrustedFile.read(link, cap: 10) == Array("hello".utf8))
        #expect(failure { _ = try UntrustedFile.read(link, cap: 10, followsLinks: false) }?.kind == .symbolicLink)
        let opened = try UntrustedFile.open(target)
        #expect(opened.size == 5)
        close(opened.descriptor)
    }
}

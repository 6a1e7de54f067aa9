import Foundation
import Glibc
import Runtime
import TestSupport
import Testing

/// README's "Runtime error codes" paragraph: every `` `name` NNNN `` pair, in order.
private func documentedCodes() throws -> [(name: String, number: Int)] {
    let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("README.md")
    let text = try String(contentsOf: readme, encoding: .utf8)
    let start = try #require(text.range(of: "## Runtime error codes\n"), "README has no Runtime error codes section")
    let section = text[start.upperBound...]
    let body = section.range(of: "\n## ").map { section[..<$0.lowerBound] } ?? section
    let pair = /`([a-z_]+)` (\d+)/
    return body.matches(of: pair).map { (String($0.output.1), Int($0.output.2)!) }
}

/// A `RuntimeError` thrown by `body`, or nil (recorded) when it threw nothing or something else.
private func runtimeError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> RuntimeError? {
    do {
        try body()
        Issue.record("no error", sourceLocation: sourceLocation)
    } catch let error as RuntimeError {
        return error
    } catch {
        Issue.record("not a RuntimeError: \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

@Suite("Runtime error codes", .timeLimit(.minutes(1)))
struct ErrorCodeTests {
    @Test("README's table and RuntimeError.Code agree both ways: every name with its number, nothing missing or extra")
    func catalogueMatchesREADME() throws {
        let documented = try documentedCodes()
        try #require(documented.count >= 20, "parsed only \(documented.count) codes from README: \(documented)")
        let catalogue = RuntimeError.Code.allCases.map { (name: $0.name, number: $0.rawValue) }
        let documentedByName = Dictionary(documented.map { ($0.name, $0.number) }, uniquingKeysWith: { first, _ in first })
        let catalogueByName = Dictionary(catalogue.map { ($0.name, $0.number) }, uniquingKeysWith: { first, _ in first })
        #expect(documentedByName.count == documented.count, "a name documented twice: \(documented)")
        #expect(catalogueByName.count == catalogue.count, "a name used by two codes: \(catalogue)")
        #expect(Set(catalogue.map(\.number)).count == catalogue.count, "a number used by two codes: \(catalogue)")
        for (name, number) in documented {
            #expect(catalogueByName[name] == number, "README: \(name) \(number); the code: \(catalogueByName[name].map(String.init) ?? "missing")")
        }
        for (name, number) in catalogue {
            #expect(documentedByName[name] == number, "the code: \(name) \(number); README: \(documentedByName[name].map(String.init) ?? "missing")")
        }
        #expect(documented.map(\.number) == documented.map(\.number).sorted(), "README lists them in number order")
    }

    @Test("real file failures carry their codes: not_found, no_space (/dev/full), permission_denied (a read-only sysctl)")
    func fileFailures() throws {
        let missing = NSTemporaryDirectory() + "wsload-missing-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let notFound = runtimeError { _ = try DataFile.open(missing, mode: .read) }
        #expect(notFound?.code == .notFound && notFound?.code.name == "not_found" && notFound?.code.rawValue == 1015, "\(String(describing: notFound))")
        #expect(notFound?.detail.contains(missing) == true)

        // /dev/full: every write fails with ENOSPC, the disk-full error, without filling a disk.
        let full = try DataFile.open("/dev/full", mode: .readWrite)
        defer { full.close() }
        let noSpace = runtimeError { try full.write([1, 2, 3][...], at: 0) }
        #expect(noSpace?.code == .noSpace && noSpace?.code.name == "no_space" && noSpace?.code.rawValue == 1013, "\(String(describing: noSpace))")

        // A 0444 sysctl refuses writers even to root (the tests run as root, so file modes would not stop us).
        let denied = runtimeError { _ = try DataFile.open("/proc/sys/kernel/ostype", mode: .readWrite) }
        #expect(denied?.code == .permissionDenied && denied?.code.name == "permission_denied" && denied?.code.rawValue == 1016,
                "\(String(describing: denied))")
    }

    @Test("binding a port that is already listening fails with address_in_use (1006)")
    func addressInUse() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            try await onLoop(loop) {
                let first = try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop)
                defer { first.close() }
                let error = runtimeError { _ = try TCPListener.bind(first.localAddress, on: loop).close() }
                #expect(error?.code == .addressInUse && error?.code.name == "address_in_use" && error?.code.rawValue == 1006,
                        "\(String(describing: error))")
            }
        }
    }
}

import Foundation
import JSON
import TestSupport

/// A scratch directory for one run test's profiles, tokens and reports; removed with the value.
final class RunScratch: @unchecked Sendable {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-run-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(at: url) }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let file = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: file)
        return file.path
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// The file names in `directory` (relative to the scratch directory), hidden ones included, sorted.
    /// With `ifPresent`, a directory that does not exist has no files.
    func files(in directory: String = "", ifPresent: Bool = false) throws -> [String] {
        if ifPresent && !FileManager.default.fileExists(atPath: path(directory)) { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? url.path : path(directory)).sorted()
    }

    /// The JSON document at `name`.
    func json(_ name: String) throws -> JSONValue {
        try JSONValue(parsing: Array(try Data(contentsOf: url.appendingPathComponent(name))))
    }
}

/// An echo profile against the embedded server: `connections` clients, closed model with a think time.
func echoProfile(name: String = "run", duration: String, connections: Int = 5, gracefulStop: String = "5s",
                 thresholds: String = "[]") -> String {
    """
    {"version": 1, "name": "\(name)", "target": "embedded", "duration": "\(duration)", "gracefulStop": "\(gracefulStop)",
     "scenarios": [{"name": "echo", "pattern": "echo", "connections": \(connections),
                    "schedule": {"model": "closed", "thinkTime": "5ms"}}],
     "thresholds": \(thresholds)}
    """
}

/// Tests/Peers/run_target.py: a Python `websockets` echo server (a target we do not control) that prints each
/// request's headers and can misbehave on purpose.
final class PythonRunTarget: @unchecked Sendable {
    let process: BackgroundProcess
    let port: Int
    var url: String { "ws://127.0.0.1:\(port)/" }

    init(_ arguments: [String] = []) throws {
        (process, port) = try startPythonPeer("run_target.py", arguments: arguments)
    }

    deinit { process.stop() }

    /// Stops the server and returns the headers of every request it saw, in order (names lower-cased).
    func stop() throws -> [[String: String]] {
        process.stop()
        return try process.readToEnd().split(separator: "\n").filter { $0.hasPrefix("request ") }.map { line in
            guard let object = try JSONValue(parsing: String(line.drop { $0 != "{" })).objectValue else {
                throw TestProcess.Failure(description: "run_target.py printed \(line)")
            }
            var headers: [String: String] = [:]
            for (name, value) in object.members { headers[name] = value.stringValue }
            return headers
        }
    }
}

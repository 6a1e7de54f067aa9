import Foundation
import JSON
import Profile

/// A profile around flow scenarios: `data` (a JSON object's members, or empty) and the scenarios' JSON.
func flowProfile(data: String = "", _ scenarios: String...) -> String {
    """
    {"version": 1, "name": "flows", "target": "ws://127.0.0.1:9/", "duration": "10s",
     \(data.isEmpty ? "" : "\"data\": {\(data)},")
     "scenarios": [\(scenarios.joined(separator: ","))]}
    """
}

/// A raw flow scenario with these steps (JSON array text) and extra scenario members.
func rawFlow(_ steps: String, extra: String = "", connections: Int = 4) -> String {
    """
    {"name": "f", "pattern": "flow", "connections": \(connections), \(extra.isEmpty ? "" : extra + ",") "steps": \(steps)}
    """
}

/// Every problem the decoder finds, as `path: message (hint)` lines; empty when the profile decodes.
func flowProblems(_ text: String) -> [String] {
    do {
        _ = try ProfileDecoder.decode(Array(text.utf8))
        return []
    } catch {
        return error.problems.map(\.description)
    }
}

/// Only the problems' paths and messages (no hints).
func flowProblemMessages(_ text: String) -> [String] {
    do {
        _ = try ProfileDecoder.decode(Array(text.utf8))
        return []
    } catch {
        return error.problems.map { ($0.path.isEmpty ? "" : $0.path + ": ") + $0.message }
    }
}

/// A fresh temporary directory for feeder files, removed by the caller.
func feederDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-feeders-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

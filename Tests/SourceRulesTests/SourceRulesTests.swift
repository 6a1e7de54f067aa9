import Foundation
import Testing
import TestSupport

/// The repository's own rules (STYLE.md, issue 12), checked on the source tree so a change that breaks one fails here.
@Suite("Source rules", .timeLimit(.minutes(1)))
struct SourceRulesTests {
    /// Every Swift file under Sources, with its lines.
    static let sources: [(path: String, lines: [Substring])] =
        // An unreadable tree reads as empty, which the first test below fails on.
        ((try? SourceTree.files()) ?? []).map { ("Sources/" + $0.path, $0.text.split(separator: "\n", omittingEmptySubsequences: false)) }

    @Test("the tree is found and read")
    func treeIsRead() {
        #expect(Self.sources.count > 100, "read \(Self.sources.count) files under Sources")
    }

    @Test("no merge conflict markers in Sources or the docs")
    func noConflictMarkers() throws {
        let docs = ["README.md", "docs/ARCHITECTURE.md", "docs/REPORT.md"].map { path in
            (path, ((try? String(contentsOf: SourceTree.root.appendingPathComponent(path), encoding: .utf8)) ?? "")  // unreadable: the count below fails
                .split(separator: "\n", omittingEmptySubsequences: false))
        }
        #expect(docs.allSatisfy { $0.1.count > 10 }, "the docs are read")
        let marked = (Self.sources + docs).flatMap { file in
            file.lines.enumerated().compactMap { index, line in
                line.hasPrefix("<<<<<<< ") || line == "=======" || line.hasPrefix(">>>>>>> ") ? "\(file.path):\(index + 1)" : nil
            }
        }
        #expect(marked.isEmpty, "\(marked)")
    }

    @Test("no Sources file is over 500 lines")
    func fileLength() {
        let long = Self.sources.filter { $0.lines.count > 501 }.map { "\($0.path): \($0.lines.count - 1) lines" }
        #expect(long.isEmpty, "\(long)")
    }

    @Test("every public or package type has a doc comment")
    func typesDocumented() throws {
        let declaration = try Regex(
            #"^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:public|package|open)\s+(?:final\s+|indirect\s+|nonisolated\s+)*(?:struct|enum|class|actor|protocol)\s+\w+"#)
        var undocumented: [String] = []
        for file in Self.sources {
            for (index, line) in file.lines.enumerated() where line.firstMatch(of: declaration) != nil {
                var previous = index - 1
                while previous >= 0, file.lines[previous].trimmingCharacters(in: .whitespaces).hasPrefix("@") { previous -= 1 }
                let above = previous >= 0 ? file.lines[previous].trimmingCharacters(in: .whitespaces) : ""
                if !above.hasPrefix("///") && !above.hasSuffix("*/") { undocumented.append("\(file.path):\(index + 1)") }
            }
        }
        #expect(undocumented.isEmpty, "\(undocumented)")
    }

    @Test("every try? says why ignoring the error is safe")
    func tryOptionalExplained() {
        var unexplained: [String] = []
        for file in Self.sources {
            for (index, line) in file.lines.enumerated() where line.contains("try?") {
                let window = file.lines[max(0, index - 2)...index]
                if !window.contains(where: { $0.contains("//") }) { unexplained.append("\(file.path):\(index + 1)") }
            }
        }
        #expect(unexplained.isEmpty, "\(unexplained.count): \(unexplained)")
    }

    @Test("metric names are spelled only in the metric catalogue")
    func metricNamesDeclaredOnce() throws {
        let literal = try Regex(#""(?:ws|http|transfer|download|upload)\.[a-z_]+"#)
        // The oracle's invariant names share the `transfer.` prefix; they are declared once, as raw values of `Invariant`.
        let invariantCase = try Regex(#"^\s*case \w+ = ""#)
        let spelled = Self.sources.filter { !$0.path.hasSuffix("/MetricCatalog.swift") }.flatMap { file in
            file.lines.enumerated().filter { $0.element.firstMatch(of: literal) != nil }
                .filter { !(file.path.hasSuffix("/Invariants.swift") && $0.element.firstMatch(of: invariantCase) != nil) }
                .map { "\(file.path):\($0.offset + 1)" }
        }
        #expect(spelled.isEmpty, "\(spelled)")
    }

    @Test("targets import only what lies below them", arguments: [
        // The reader of untrusted files sits under Runtime and Reporting alike: it imports only Glibc.
        ("Sources/FileInput/", ["Foundation", "Runtime", "Crypto", "JSON", "Profile", "Reporting", "Clients", "LoadEngine",
                                "EmbeddedServer", "WSLoadCLI"]),
        ("Sources/Flow/", ["Runtime", "Clients", "HTTP1", "WebSocket", "Lifecycle", "Histogram", "Profile", "Reporting",
                           "LoadEngine", "EmbeddedServer", "WSLoadCLI"]),
        ("Sources/Lifecycle/", ["Runtime", "Clients", "Profile", "Reporting", "LoadEngine", "EmbeddedServer", "WSLoadCLI"]),
        ("Sources/Profile/", ["Runtime", "Clients", "Reporting", "LoadEngine", "EmbeddedServer", "WSLoadCLI"]),
        ("Sources/Reporting/", ["Runtime", "Clients", "LoadEngine", "EmbeddedServer", "WSLoadCLI"]),
        ("Sources/LoadEngine/", ["EmbeddedServer", "WSLoadCLI"]),
        ("Sources/EmbeddedServer/", ["Clients", "LoadEngine", "Reporting", "WSLoadCLI"]),
        ("Sources/Clients/", ["Profile", "Reporting", "LoadEngine", "EmbeddedServer", "WSLoadCLI"]),
    ])
    func layering(directory: String, forbidden: [String]) {
        let imports = Self.sources.filter { $0.path.hasPrefix(directory) }.flatMap { file in
            file.lines.filter { $0.hasPrefix("import ") || $0.hasPrefix("@testable import ") }
                .compactMap { $0.split(separator: " ").last.map(String.init) }
                .filter(forbidden.contains).map { "\(file.path) imports \($0)" }
        }
        #expect(imports.isEmpty, "\(imports)")
    }
}

import Foundation

/// The repository's own Swift sources, read by the tests that check rules on the code itself.
public enum SourceTree {
    /// The repository's root: this file is `Tests/TestSupport/SourceTree.swift`.
    public static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every Swift file under `Sources/<folder>` (or all of Sources; `tree` "Tests" for the tests), sorted: its path
    /// below the tree and its text.
    public static func files(under folder: String = "", in tree: String = "Sources") throws -> [(path: String, text: String)] {
        let directory = root.appendingPathComponent(tree).appendingPathComponent(folder)
        let files = try FileManager.default.subpathsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
        return try files.sorted().map { file in
            (folder.isEmpty ? file : "\(folder)/\(file)",
             try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8))
        }
    }
}

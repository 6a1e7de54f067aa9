import Clients
import Foundation
import Profile
import Runtime
import Testing
import TestSupport

/// The error codes a report counts come from typed enums; docs/REPORT.md must name every one of them.
@Suite("Error codes in the report docs", .timeLimit(.minutes(1)))
struct ErrorCodeDocsTests {
    @Test("docs/REPORT.md names every client, engine and transfer error code, and the README every runtime code")
    func documented() throws {
        let root = SourceTree.root
        let report = try String(contentsOf: root.appendingPathComponent("docs/REPORT.md"), encoding: .utf8)
        let start = try #require(report.range(of: "`errors`: "))
        let end = try #require(report.range(of: "\n## ", range: start.upperBound..<report.endIndex))
        let paragraph = report[start.upperBound..<end.lowerBound]
        let codes = WebSocketClientError.Code.allCases.map(\.rawValue) + EngineErrorCode.allCases.map(\.rawValue)
            + TransferError.Code.allCases.map(\.rawValue)
        for code in codes {
            #expect(paragraph.contains("`\(code)`"), "docs/REPORT.md does not name the error code \(code)")
        }
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        for code in RuntimeError.Code.allCases {
            #expect(readme.contains("`\(code.name)`"), "the README does not name the runtime code \(code.name)")
        }
    }
}

import Foundation
@testable import LiveView
import Testing
import TestSupport

@Suite("Dashboard page", .timeLimit(.minutes(1)))
struct DashboardPageTests {
    let html = DashboardPage.html

    @Test("the page references nothing outside itself: no URL, no src, only data: links, no CSS imports")
    func selfContained() throws {
        let lower = html.lowercased()
        #expect(!lower.contains("http://") && !lower.contains("https://") && !lower.contains("ws://"))
        #expect(!lower.contains("src="), "no script, image or frame source")
        #expect(!lower.contains("url(") && !lower.contains("@import"))
        let links = lower.components(separatedBy: "href=").dropFirst()
        #expect(links.count == 1 && links.allSatisfy { $0.hasPrefix("\"data:") }, "only the empty data: icon")
        for tag in ["<iframe", "<object", "<embed", "<img", "<base", "<form"] { #expect(!lower.contains(tag), "\(tag)") }
        // The one place the page connects to: its own origin's event stream.
        #expect(html.components(separatedBy: "new EventSource(").count == 2 && html.contains("new EventSource('/events')"))
        #expect(!html.contains("fetch(") && !html.contains("XMLHttpRequest") && !html.contains("WebSocket("))
    }

    @Test("the script inserts data only as text: no markup sinks, no eval")
    func noMarkupSinks() {
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setTimeout('",
                     "srcdoc", "javascript:"] {
            #expect(!DashboardPage.script.contains(sink), "\(sink)")
        }
        #expect(DashboardPage.script.contains("textContent"))
    }

    @Test("the CSP header is the contract's")
    func policy() {
        #expect(DashboardPage.contentSecurityPolicy
            == "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'")
        let feed = DashboardFeed(hello: "{}")
        for path in ["/", "/summary.json", "/nothing"] {
            guard case .content(_, _, _, let headers) = feed.respond(to: LiveRequest(method: "GET", path: path)) else {
                Issue.record("\(path) is not a document")
                continue
            }
            #expect(headers.contains { $0.0 == "Content-Security-Policy" && $0.1 == DashboardPage.contentSecurityPolicy }, "\(path)")
        }
        guard case .events = feed.respond(to: LiveRequest(method: "GET", path: "/events")) else {
            Issue.record("/events is not the event stream")
            return
        }
    }

    @Test("every element the script looks up is in the page, and it listens for the events the endpoint sends")
    func scriptMatchesDocument() throws {
        let lookup = try Regex(#"byId\('([a-z-]+)'\)"#)
        let ids = DashboardPage.script.matches(of: lookup).map { String($0.output[1].substring!) }
        #expect(Set(ids).count >= 10)
        for id in Set(ids) { #expect(html.contains("id=\"\(id)\""), "#\(id)") }
        let charts = html.matches(of: try Regex(#"id="chart-([a-z]+)""#)).map { String($0.output[1].substring!) }
        #expect(charts.count == 5)
        for chart in charts { #expect(html.contains("id=\"legend-\(chart)\""), "each chart has its legend") }
        for event in [DashboardEvent.hello, DashboardEvent.frame, DashboardEvent.summary] {
            #expect(DashboardPage.script.contains("addEventListener('\(event)'"), "\(event)")
        }
    }

    @Test("the script is valid JavaScript (node --check)")
    func scriptParses() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("wsload-dashboard-\(getpid()).js")
        try Data(DashboardPage.script.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try await TestProcess.runWithStatusOffPool(["timeout", "60", "node", "--check", file.path])
        #expect(check.status == 0, "\(check.errors)")
    }
}

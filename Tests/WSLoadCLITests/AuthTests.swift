import Foundation
import JSON
import Testing
import TestSupport

/// Profile `auth` with `"type": "header"` and `tokenFile` (README: "`auth` (`type` bearer/header/query, `name`,
/// and `tokenEnv` or `tokenFile` — the token never appears in a profile or a report)"), against a server we do
/// not control that refuses the upgrade without the right header.
@Suite("wsload run auth", .serialized, .timeLimit(.minutes(2)))
struct AuthTests {
    @Test("header auth from a tokenFile: every upgrade carries the token in the named header; it is nowhere in the output")
    func headerFromTokenFile() async throws {
        let scratch = try RunScratch()
        let token = "wsl-\(UInt64.random(in: 1...UInt64.max))-secret"
        // As `echo TOKEN > file` writes it: the newline is not part of the token.
        let tokenFile = try scratch.write("secrets/token", token + "\n")
        let server = try PythonRunTarget(["--require-header", "X-Api-Key=\(token)"])
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "authed", "target": "\(server.url)", "duration": "60s",
             "auth": {"type": "header", "name": "X-Api-Key", "tokenFile": "\(tokenFile)"},
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 3, "messagesPerConnection": 5}]}
            """)
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("out/report.json"), "--html", scratch.path("out/report.html")])
        let status = try await child.waitForExit()
        let requests = try server.stop()
        #expect(status == 0, "\(child.errors)")
        // The server saw it: each of the 3 upgrades had the header, nothing refused (no reconnects needed).
        try #require(requests.count == 3, "\(requests)")
        for headers in requests {
            #expect(headers["x-api-key"] == token, "\(headers)")
            #expect(headers["authorization"] == nil, "header auth must not also send Authorization: \(headers)")
        }
        let report = try String(contentsOfFile: scratch.path("out/report.json"), encoding: .utf8)
        let html = try String(contentsOfFile: scratch.path("out/report.html"), encoding: .utf8)
        #expect(try scratch.json("out/report.json")["total"]?["metrics"]?["ws.messages_received"]?["count"]?.integerValue == 15)
        for (name, text) in [("report", report), ("HTML report", html), ("stdout", child.output), ("stderr", child.errors)] {
            #expect(!text.contains(token), "the token leaked into the \(name)")
        }
        #expect(report.contains(tokenFile), "the profile in the report names where the token came from")
    }

    @Test("the same server without a usable token refuses every upgrade: exit 1 (the token above is what it checks)")
    func wrongToken() async throws {
        let scratch = try RunScratch()
        let tokenFile = try scratch.write("token", "not-the-one\n")
        let server = try PythonRunTarget(["--require-header", "X-Api-Key=the-one"])
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "refused", "target": "\(server.url)", "duration": "1s",
             "auth": {"type": "header", "name": "X-Api-Key", "tokenFile": "\(tokenFile)"},
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2}]}
            """)
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("report.json")])
        let status = try await child.waitForExit()
        let requests = try server.stop()
        #expect(status == 1, "\(child.errors)")
        #expect(child.errors.contains("connection attempts succeeded"), "\(child.errors)")
        #expect(!requests.isEmpty && requests.allSatisfy { $0["x-api-key"] == "not-the-one" }, "\(requests)")
        #expect(!child.errors.contains("not-the-one") && !child.output.contains("not-the-one"))
    }

    @Test("a tokenFile that cannot be read: exit 1 naming the file, no connection attempted")
    func missingTokenFile() async throws {
        let scratch = try RunScratch()
        let server = try PythonRunTarget()
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "nofile", "target": "\(server.url)", "duration": "1s",
             "auth": {"type": "header", "name": "X-Api-Key", "tokenFile": "\(scratch.path("absent"))"},
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2}]}
            """)
        let child = try WSLoadProcess(["run", profile, "--out", scratch.path("report.json")])
        let status = try await child.waitForExit()
        let requests = try server.stop()
        #expect(status == 1)
        #expect(child.errors.contains("auth.tokenFile: cannot read \(scratch.path("absent"))"), "\(child.errors)")
        #expect(requests.isEmpty)
    }
}

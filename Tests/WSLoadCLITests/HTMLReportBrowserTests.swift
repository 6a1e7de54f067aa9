import Foundation
import JSON
import Testing
import TestSupport
import WSLoadCLI

private func cli(_ arguments: [String]) async -> (code: ExitCode, output: String, error: String) {
    let captured = CapturedOutput()
    let code = await WSLoad.main(arguments: arguments, output: captured.commandOutput)
    return (code, captured.output, captured.error)
}

/// A scratch directory with a 6-second run's report and its HTML (1-second intervals, as the brief of the report's
/// default asks: a short run is drawn per second), removed by the caller.
private func reportDirectory() async throws -> URL {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("wsload-html-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try Data("""
        {"version": 1, "name": "html", "target": "embedded", "duration": "6s", "seed": 1,
         "scenarios": [{"name": "s<b>1", "pattern": "echo", "connections": 5, "pingInterval": "100ms",
                        "schedule": {"model": "closed", "thinkTime": "10ms"}}],
         "thresholds": ["ws.message_rtt p99 < 10s", "errors rate < 50%"],
         "report": {"interval": "1s"}}
        """.utf8).write(to: directory.appendingPathComponent("p.json"))
    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    let run = await cli(["run", path("p.json"), "--out", path("r.json"), "--html", path("r.html"), "--quiet"])
    #expect(run.code == .success, "\(run.error)")
    return directory
}

/// Runs Tests/Peers/cdp_browser.py (headless Chromium over the DevTools protocol) with `actions`; its output.
private func browse(_ actions: [JSONValue], in directory: URL) async throws -> JSONValue {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Peers/cdp_browser.py").path
    let file = directory.appendingPathComponent("actions-\(UInt32.random(in: 0...UInt32.max)).json")
    try Data(JSONValue.array(actions).formatted().utf8).write(to: file)
    // `timeout` dies with the test process (TiedProcess), and the script with `timeout` (its own parent-death signal).
    let python = TiedProcess.command("/usr/bin/env", ["python3", script, file.path])
    let result = try await TestProcess.runWithStatusOffPool(["timeout", "-k", "10", "240", python.executable] + python.arguments)
    #expect(result.status == 0, "cdp_browser.py: \(result.output) \(result.errors)")
    let output = try JSONValue(parsing: result.output)
    #expect(output["console"]?.arrayValue?.isEmpty == true && output["exceptions"]?.arrayValue?.isEmpty == true,
            "the page logged: \(output.formatted(pretty: false))")
    return output
}

/// The bounding rectangle of every element with one of `ids`, the viewport's size, and how many columns the first
/// grid has (distinct left edges of its cards), as a JavaScript expression.
private func layout(_ ids: [String]) -> JSONValue {
    let list = ids.map { "\"\($0)\"" }.joined(separator: ",")
    return .string("""
        (function () {
          var out = {viewport: [innerWidth, innerHeight], rects: {}};
          [\(list)].forEach(function (id) {
            var r = document.getElementById(id).getBoundingClientRect();
            out.rects[id] = [r.left, r.top, r.right, r.bottom];
          });
          var tiles = Array.prototype.map.call(document.querySelectorAll("#headline .tile"), function (t) { return t.getBoundingClientRect().bottom; });
          out.tilesBottom = Math.max.apply(null, tiles);
          out.tiles = tiles.length;
          out.columns = new Set(Array.prototype.map.call(document.querySelectorAll("#overview > figure"),
            function (f) { return Math.round(f.getBoundingClientRect().left); })).size;
          return out;
        })()
        """)
}

@Suite("HTML reports in a real browser", .serialized, .timeLimit(.minutes(4)))
struct HTMLReportTests {
    /// Renders `file` in headless Chromium: the DOM after load, a screenshot, and what the browser logged.
    private func chromium(_ file: String, screenshot: String) async throws -> (dom: String, log: String) {
        // `timeout`: a browser that hangs fails the test after two minutes instead of holding the suite.
        let browser = ["timeout", "-k", "10", "120", "chromium"]
        let common = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]
        let dom = try await TestProcess.runOffPool(browser + common + ["--dump-dom", "file://" + file])
        let shot = try await TestProcess.runOffPool(browser + common + ["--window-size=1400,3000", "--screenshot=" + screenshot, "file://" + file])
        return (dom.output, dom.errors + shot.errors)
    }

    @Test("run and compare HTML render in headless Chromium with every plot, one inline script, nothing fetched, no console errors")
    func rendersInChromium() async throws {
        let directory = try await reportDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let compare = await cli(["compare", path("r.json"), path("r.json"), "--html", path("c.html")])
        #expect(compare.code == .success, "\(compare.error)")
        for file in ["r.html", "c.html"] {
            let html = try String(contentsOfFile: path(file), encoding: .utf8)
            #expect(html.components(separatedBy: "http://").count == html.components(separatedBy: "http://www.w3.org/2000/svg").count
                    && !html.contains("https://"), "\(file): nothing fetched, the only URL is the SVG namespace")
            // The hover script is the page's own: one inline element, no src, no network or storage API.
            #expect(html.components(separatedBy: "<script").count == 2 && html.contains("<script>\n(function () {"), "\(file)")
            for api in ["fetch(", "XMLHttpRequest", "src=", "<link", "@import", "import(", "eval(", "innerHTML", "localStorage"] {
                #expect(!html.contains(api), "\(file) holds \(api)")
            }
            #expect(!html.contains("s<b>1") && (file == "c.html" || html.contains("s&lt;b&gt;1")), "\(file): the scenario name escaped")
        }

        let (dom, log) = try await chromium(path("r.html"), screenshot: path("r.png"))
        for id in ["headline", "over-time-ws.message_rtt", "spectrum-ws.message_rtt", "over-time-ws.ping_rtt", "spectrum-ws.ping_rtt",
                   "messages-per-second", "connections", "errors-per-second", "disconnects-per-second"] {
            #expect(dom.contains("id=\"\(id)\""), "missing \(id)")
        }
        #expect(dom.contains("class=\"series\""))
        #expect(dom.contains("ws.message_rtt p99 &lt; 10s"))
        #expect(!log.contains("CONSOLE") && !log.contains("Uncaught"), "\(log)")
        let screenshot = try Data(contentsOf: URL(fileURLWithPath: path("r.png")))
        #expect(screenshot.starts(with: [0x89, 0x50, 0x4E, 0x47]) && screenshot.count > 20_000)

        let (comparisonDOM, comparisonLog) = try await chromium(path("c.html"), screenshot: path("c.png"))
        #expect(comparisonDOM.contains("id=\"comparison\"") && comparisonDOM.contains("id=\"spectrum-ws.message_rtt\""))
        #expect(comparisonDOM.contains("data-series=\"base\"") && comparisonDOM.contains("data-series=\"head\""))
        #expect(comparisonDOM.contains("id=\"headline\""))
        #expect(!comparisonLog.contains("CONSOLE") && !comparisonLog.contains("Uncaught"), "\(comparisonLog)")
    }

    @Test("the first screen at 1400×900 holds the headline, RTT, throughput and errors; 3, 2, 1 columns; hover shows values")
    func firstScreen() async throws {
        let directory = try await reportDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = JSONValue.string("file://" + directory.appendingPathComponent("r.html").path)
        let first = ["headline", "over-time-ws.message_rtt", "messages-per-second", "errors-per-second"]
        let shot = directory.appendingPathComponent("first.png").path
        let looks = try await browse([
            ["open": url, "width": 1400, "height": 900], ["eval": layout(first + ["connections", "overview"]), "as": "wide"],
            ["screenshot": .string(shot)],
            ["open": url, "width": 1000, "height": 900], ["eval": layout(first), "as": "medium"],
            ["open": url, "width": 700, "height": 900], ["eval": layout(first), "as": "narrow"],
        ], in: directory)
        let wide = try #require(looks["values"]?["wide"])
        #expect(wide["columns"] == 3 && wide["tiles"] == 8, "\(wide.formatted(pretty: false))")
        for id in first + ["connections"] {
            let rect = wide["rects"]?[id]?.arrayValue?.compactMap { $0.numberValue } ?? []
            #expect(rect.count == 4 && rect[0] >= 0 && rect[1] >= 0 && rect[2] <= 1400 && rect[3] <= 900 && rect[3] - rect[1] > 50,
                    "\(id) is not within the first screen: \(rect)")
        }
        #expect((wide["tilesBottom"]?.numberValue ?? 1000) <= 900)
        #expect(looks["values"]?["medium"]?["columns"] == 2 && looks["values"]?["narrow"]?["columns"] == 1,
                "\(looks.formatted(pretty: false))")
        // The screenshot is the page, not a blank: a white 1400×900 PNG is a few kilobytes.
        let png = try Data(contentsOf: URL(fileURLWithPath: shot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 60_000, "\(png.count) bytes")

        // The RTT chart's own pixels, then the pointer over its middle: the tooltip shows that second's percentiles.
        let rtt = wide["rects"]?["over-time-ws.message_rtt"]?.arrayValue?.compactMap { $0.numberValue } ?? []
        let overviewTop = try #require(wide["rects"]?["overview"]?.arrayValue?.dropFirst().first?.numberValue)
        try #require(rtt.count == 4)
        let chart = directory.appendingPathComponent("rtt.png").path, blank = directory.appendingPathComponent("blank.png").path
        let middle = [((rtt[0] + rtt[2]) / 2).rounded(), ((rtt[1] + rtt[3]) / 2).rounded()]
        let hovered = try await browse([
            ["open": url, "width": 1400, "height": 900],
            ["screenshot": .string(chart), "clip": .array([rtt[0], rtt[1], rtt[2] - rtt[0], rtt[3] - rtt[1]].map { .number($0) })],
            // The band between the tiles' row and the charts' row is the page's background only.
            ["screenshot": .string(blank), "clip": .array([rtt[0], overviewTop - 12, rtt[2] - rtt[0], 10].map { .number($0) })],
            ["mouse": .array(middle.map { .number($0) })],
            ["eval": """
                (function () {
                  var tip = document.getElementById("tip"), svg = document.getElementById("over-time-ws.message_rtt");
                  var data = JSON.parse(svg.getAttribute("data-hover")), r = tip.getBoundingClientRect();
                  return {hidden: tip.hidden, text: tip.innerText, points: data.x.length, labels: data.t,
                          p99: data.s.filter(function (s) { return s.n === "p99"; })[0].v,
                          cursor: getComputedStyle(svg.querySelector(".cursor")).visibility,
                          inside: r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight};
                })()
                """, "as": "hover"],
            ["screenshot": .string(directory.appendingPathComponent("hover.png").path)],
        ], in: directory)
        let chartPNG = try Data(contentsOf: URL(fileURLWithPath: chart)), blankPNG = try Data(contentsOf: URL(fileURLWithPath: blank))
        // A blank clip of the chart's size compresses to well under a kilobyte; how far above that a drawn one lands
        // depends on the run's figures (7.8 KB seen, 8 KB once the bar): drawn, not a size to reach.
        #expect(chartPNG.count > 3_000 && chartPNG.count > 10 * blankPNG.count, "chart \(chartPNG.count) bytes, blank \(blankPNG.count)")
        let hover = try #require(hovered["values"]?["hover"])
        #expect(hover["hidden"] == false && hover["cursor"] == "visible" && hover["inside"] == true, "\(hover.formatted(pretty: false))")
        // A 6-second run at 1-second intervals: a point per second.
        let points = try #require(hover["points"]?.integerValue)
        #expect((5...7).contains(points), "\(points) points")
        let text = hover["text"]?.stringValue ?? ""
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first.map { line in hover["labels"]?.arrayValue?.contains(.string(line)) == true } == true, "\(text)")
        for name in ["p50", "p90", "p99", "p99.9"] { #expect(lines.contains(name), "\(name) missing in \(text)") }
        let p99 = lines.firstIndex(of: "p99").map { lines[$0 + 1] } ?? ""
        #expect(hover["p99"]?.arrayValue?.contains(.string(p99)) == true && (p99.hasSuffix("us") || p99.hasSuffix("ms")), "\(text)")
    }

    @Test("a hostile error code in a report file is text in the chart's legend and tooltip, never markup the page runs")
    func hostileNamesInTooltip() async throws {
        let directory = try await reportDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        // Every interval's (and the total's) errors get the code; `report --html` reads it back as a code like any other.
        let hostile = "<img src=x onerror=\"document.title='ran'\">"
        let text = try String(contentsOfFile: path("r.json"), encoding: .utf8)
        let code = String(JSONValue.string(hostile).formatted())
        let pattern = try Regex(#"("errors": \{[^{}]*"byCode": )\{\}"#)
        let edited = text.replacing(pattern) { match in text[match.range].dropLast(2) + "{" + code + ": 3}" }
        #expect(edited.components(separatedBy: "onerror").count > 5, "the report's errors were not edited")
        try Data(edited.utf8).write(to: URL(fileURLWithPath: path("hostile.json")))
        let report = await cli(["report", path("hostile.json"), "--html", path("hostile.html")])
        #expect(report.code == .success, "\(report.error)")

        let url = JSONValue.string("file://" + path("hostile.html"))
        let found = try await browse([
            ["open": url, "width": 1400, "height": 900],
            ["eval": layout(["errors-per-second"]), "as": "layout"],
        ], in: directory)
        let rect = found["values"]?["layout"]?["rects"]?["errors-per-second"]?.arrayValue?.compactMap { $0.numberValue } ?? []
        try #require(rect.count == 4)
        let hovered = try await browse([
            ["open": url, "width": 1400, "height": 900],
            ["mouse": [.number(((rect[0] + rect[2]) / 2).rounded()), .number(((rect[1] + rect[3]) / 2).rounded())]],
            ["eval": """
                ({tip: document.getElementById("tip").innerText, hidden: document.getElementById("tip").hidden,
                  images: document.querySelectorAll("img").length, title: document.title,
                  legend: Array.prototype.map.call(document.querySelectorAll("#overview .key"), function (k) { return k.textContent; })})
                """, "as": "hover"],
        ], in: directory)
        let hover = try #require(hovered["values"]?["hover"])
        #expect(hover["hidden"] == false && hover["images"] == 0 && hover["title"] == "wsload: html", "\(hover.formatted(pretty: false))")
        #expect(hover["tip"]?.stringValue?.contains(hostile) == true, "\(hover.formatted(pretty: false))")
        #expect(hover["legend"]?.arrayValue?.contains(.string(hostile)) == true, "\(hover.formatted(pretty: false))")
    }
}

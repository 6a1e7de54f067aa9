import EmbeddedServer
import Foundation
import Histogram
import JSON
import Profile
import Reporting
import Runtime
import Testing
import TestSupport
@testable import WSLoadCLI

/// What `--junit` writes, read by real consumers: `xmllint --schema` against the Jenkins xUnit plugin's JUnit schema
/// (Tests/Fixtures/junit-10.xsd) and Python's `junitparser` (Tests/Peers/junit_check.py), which prints the document
/// as JSON: totals, and per suite its attributes and cases (name, classname, result, message, type, text, system-out).
enum JUnitConsumers {
    static let schema = SourceTree.root.appendingPathComponent("Tests/Fixtures/junit-10.xsd").path
    static let reader = SourceTree.root.appendingPathComponent("Tests/Peers/junit_check.py").path

    /// Validates `path` against the schema (a failure throws with xmllint's complaint) and returns junitparser's view.
    static func read(_ path: String) async throws -> JSONValue {
        // `timeout`: a reader that hangs fails the test after a minute instead of holding the suite.
        let lint = try await TestProcess.runOffPool(["timeout", "60", "xmllint", "--noout", "--schema", schema, path])
        #expect(lint.errors.contains("validates"), "\(lint.errors)")
        return try JSONValue(parsing: try await TestProcess.runOffPool(["timeout", "60", "python3", reader, path]).output)
    }

    /// `text` written to a scratch file, validated and read.
    static func read(text: String) async throws -> JSONValue {
        let scratch = try RunScratch()
        return try await read(try scratch.write("junit.xml", text))
    }

    /// The suite named `name` and its cases by name.
    static func suite(_ document: JSONValue, _ name: String) throws -> (suite: JSONValue, cases: [String: JSONValue]) {
        let suite = try #require(document["suites"]?.arrayValue?.first { $0["name"]?.stringValue == name }, "no suite \(name)")
        var cases: [String: JSONValue] = [:]
        for testCase in suite["cases"]?.arrayValue ?? [] { cases[testCase["name"]?.stringValue ?? ""] = testCase }
        return (suite, cases)
    }
}

/// The writer on its own: chosen figures in, the exact document out, and XML 1.0 escaping of everything an author
/// (profile, scenario, threshold names) or a report file supplies.
@Suite("JUnit XML: the writer")
struct JUnitWriterTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    /// A 10 s run of profile `junit` with four thresholds — one failing on a latency, one failing on a rate, one
    /// without samples, one passing — and the oracle's findings: one invariant violated (two examples), one held, one
    /// never checked.
    static func result() throws -> RunResult {
        let profile = try ProfileDecoder.decode(Array("""
            {"version": 1, "name": "junit", "target": "ws://127.0.0.1:9/", "duration": "10s",
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2}],
             "thresholds": ["ws.message_rtt p99 < 10ms", "errors rate < 0.01%", "ws.connect p99 < 1s",
                            "ws.messages_received count > 10"]}
            """.utf8))
        var total = MetricSet()
        var histogram = Histogram()
        for _ in 0..<100 { histogram.record(12_300) }
        total.histograms[Metric.messageRoundTrip.name] = histogram
        total.counters[Metric.messagesSent.name] = 100
        total.counters[Metric.messagesReceived.name] = 100
        total.counters[Metric.connectAttempts.name] = 2
        total.counters[Metric.connectionsOpened.name] = 2
        total.errors["timeout"] = 1
        var invariants = InvariantReport()
        invariants.checked = ["messages.in_sequence": 120, "protocol.connected_after_101": 1, "reconnect.max_attempts": 0]
        invariants.violations = ["messages.in_sequence": 3, "protocol.connected_after_101": 0, "reconnect.max_attempts": 0]
        invariants.examples["messages.in_sequence"] = [
            .init(actor: 0, scenario: "echo", detail: "received seq 4 after 5", history: ["+0us connecting", "+1.2ms connected"]),
            .init(actor: 1, scenario: "echo", detail: "received seq 7 twice", history: []),
        ]
        return RunResult(
            profile: profile, seed: 1, loops: 1, startedAt: start, endedAt: start + 10.25, elapsed: .milliseconds(10_250),
            interruptedBy: nil, abortedBy: nil, scenarios: [.init(scenario: profile.scenarios[0], metrics: total)], total: total,
            intervals: [], unfinishedConnections: 0, liveHandlesAfterStop: 0, waitingTasksAfterStop: 0, shard: nil, mergedFrom: [],
            invariants: invariants, chaos: [], reconnectStorm: nil)
    }

    @Test("a run: thresholds (failing with actual and limit, skipped without samples, passing with the figure) and invariants, byte for byte")
    func runDocument() async throws {
        let xml = JUnitReport.run(try Self.result()).xml()
        let expected = """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites name="wsload run junit" tests="7" failures="3" errors="0" time="10.250">
              <testsuite name="run" tests="1" failures="0" errors="0" skipped="0" time="10.250" timestamp="2026-01-01T00:00:00Z">
                <testcase name="run" classname="wsload.junit.run">
                  <system-out>completed after 10.250 s</system-out>
                </testcase>
              </testsuite>
              <testsuite name="thresholds" tests="4" failures="2" errors="0" skipped="1" time="10.250" timestamp="2026-01-01T00:00:00Z">
                <testcase name="ws.message_rtt p99 &lt; 10ms" classname="wsload.junit.thresholds">
                  <failure message="actual 12.3ms, limit &lt; 10ms" type="threshold">ws.message_rtt p99 &lt; 10ms: actual 12.3ms, limit &lt; 10ms</failure>
                </testcase>
                <testcase name="errors rate &lt; 0.01%" classname="wsload.junit.thresholds">
                  <failure message="actual 1.0%, limit &lt; 0.01%" type="threshold">errors rate &lt; 0.01%: actual 1.0%, limit &lt; 0.01%</failure>
                </testcase>
                <testcase name="ws.connect p99 &lt; 1s" classname="wsload.junit.thresholds">
                  <skipped message="actual no samples, limit &lt; 1s"/>
                </testcase>
                <testcase name="ws.messages_received count &gt; 10" classname="wsload.junit.thresholds">
                  <system-out>actual 100, limit &gt; 10</system-out>
                </testcase>
              </testsuite>
              <testsuite name="invariants" tests="2" failures="1" errors="0" skipped="0" time="10.250" timestamp="2026-01-01T00:00:00Z">
                <testcase name="messages.in_sequence" classname="wsload.junit.invariants">
                  <failure message="3 violations in 120 checks" type="invariant">3 violations in 120 checks
            actor 0 (scenario echo): received seq 4 after 5
              +0us connecting
              +1.2ms connected
            actor 1 (scenario echo): received seq 7 twice</failure>
                </testcase>
                <testcase name="protocol.connected_after_101" classname="wsload.junit.invariants">
                  <system-out>0 violations in 1 check</system-out>
                </testcase>
              </testsuite>
            </testsuites>

            """
        #expect(xml == expected, "\(xml)")
        let read = try await JUnitConsumers.read(text: xml)
        #expect(read["tests"]?.integerValue == 7 && read["failures"]?.integerValue == 3)
        let (thresholds, cases) = try JUnitConsumers.suite(read, "thresholds")
        #expect(thresholds["skipped"]?.integerValue == 1 && thresholds["timestamp"]?.stringValue == "2026-01-01T00:00:00Z")
        #expect(cases["ws.message_rtt p99 < 10ms"]?["results"]?.arrayValue?.first?["message"]?.stringValue == "actual 12.3ms, limit < 10ms")
        #expect(cases["ws.connect p99 < 1s"]?["result"]?.stringValue == "skipped")
        #expect(cases["ws.messages_received count > 10"]?["systemOut"]?.stringValue == "actual 100, limit > 10")
    }

    @Test("the figures are the summary's: the JUnit message and the summary line show the same actual")
    func figuresAreTheSummarys() throws {
        let result = try Self.result()
        let summary = RunSummary.text(result, colors: false)
        #expect(summary.contains("✗ ws.message_rtt p99 < 10ms  (actual 12.3ms)"), "\(summary)")
        #expect(summary.contains("✗ errors rate < 0.01%  (actual 1.0%)"), "\(summary)")
    }

    @Test("a threshold that stopped the run says so; an empty run has the three suites, only the run's case")
    func abortedAndEmpty() async throws {
        var result = try Self.result()
        result.abortedBy = "ws.message_rtt p99 < 10ms"
        #expect(JUnitReport.run(result).xml().contains(
            "<failure message=\"actual 12.3ms, limit &lt; 10ms\" type=\"threshold\">ws.message_rtt p99 &lt; 10ms: actual 12.3ms, "
                + "limit &lt; 10ms\nit stopped the run (abortOnFail)</failure>"))
        result.thresholds = []
        result.invariants = InvariantReport()
        let xml = JUnitReport.run(result).xml()
        #expect(xml.hasSuffix("""
            <testsuites name="wsload run junit" tests="1" failures="0" errors="0" time="10.250">
              <testsuite name="run" tests="1" failures="0" errors="0" skipped="0" time="10.250" timestamp="2026-01-01T00:00:00Z">
                <testcase name="run" classname="wsload.junit.run">
                  <system-out>completed after 10.250 s</system-out>
                </testcase>
              </testsuite>
              <testsuite name="thresholds" tests="0" failures="0" errors="0" skipped="0" time="10.250" timestamp="2026-01-01T00:00:00Z"/>
              <testsuite name="invariants" tests="0" failures="0" errors="0" skipped="0" time="10.250" timestamp="2026-01-01T00:00:00Z"/>
            </testsuites>

            """), "\(xml)")
        let read = try await JUnitConsumers.read(text: xml)
        #expect(read["suites"]?.arrayValue?.count == 3 && read["tests"]?.integerValue == 1)
    }

    @Test("a comparison: a budget exceeded (change, p-value, limit), one held, one without its row, one on a step only head has")
    func comparisonDocument() async throws {
        let rows = [
            ComparisonRow(metric: "ws.message_rtt", statistic: "p50", unit: "us", base: 1000, head: 1020, pValue: 0.2,
                          test: "interval-bootstrap", direction: .lowerIsBetter),
            ComparisonRow(metric: "ws.message_rtt", statistic: "p99", unit: "us", base: 1000, head: 1500, pValue: 0.0004,
                          test: "interval-bootstrap", direction: .lowerIsBetter),
            ComparisonRow(metric: "ws.messages_received", statistic: "per_second", unit: "/s", base: 2000, head: 1000, pValue: 0.01,
                          test: "interval-bootstrap", direction: .higherIsBetter),
            ComparisonRow(metric: "flow.step{step=join}", statistic: "p99", unit: "us", base: 0, head: 900, pValue: 1,
                          test: "interval-bootstrap", direction: .lowerIsBetter, presence: .added),
        ]
        let budgets = ["ws.message_rtt p50 +10%", "ws.message_rtt p99 +10%", "ws.messages_received per_second -10%",
                       "ws.connect p99 +25%", "flow.step{step=join} p99 +5%"].map { RegressionBudget(parsing: $0)! }
        let xml = JUnitReport.comparison(rows: rows, budgets: budgets, alpha: 0.05, profile: "junit", timestamp: Self.start,
                                         seconds: 0.0125).xml()
        let expected = """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites name="wsload compare" tests="5" failures="2" errors="0" time="0.013">
              <testsuite name="budgets" tests="5" failures="2" errors="0" skipped="2" time="0.013" timestamp="2026-01-01T00:00:00Z">
                <testcase name="ws.message_rtt p50 +10%" classname="wsload.junit.budgets">
                  <system-out>change +2.0%, p=0.200, limit +10%
            base 1.0ms, head 1.02ms (interval-bootstrap, α = 0.05)</system-out>
                </testcase>
                <testcase name="ws.message_rtt p99 +10%" classname="wsload.junit.budgets">
                  <failure message="change +50.0%, p&lt;0.001, limit +10%" type="budget">ws.message_rtt p99 +10%: change +50.0%, p&lt;0.001, limit +10%
            base 1.0ms, head 1.5ms (interval-bootstrap, α = 0.05)</failure>
                </testcase>
                <testcase name="ws.messages_received per_second -10%" classname="wsload.junit.budgets">
                  <failure message="change -50.0%, p=0.010, limit -10%" type="budget">ws.messages_received per_second -10%: change -50.0%, p=0.010, limit -10%
            base 2,000, head 1,000 (interval-bootstrap, α = 0.05)</failure>
                </testcase>
                <testcase name="ws.connect p99 +25%" classname="wsload.junit.budgets">
                  <skipped message="no ws.connect p99 to compare"/>
                </testcase>
                <testcase name="flow.step{step=join} p99 +5%" classname="wsload.junit.budgets">
                  <skipped message="only one side has flow.step{step=join} p99"/>
                </testcase>
              </testsuite>
            </testsuites>

            """
        #expect(xml == expected, "\(xml)")
        let read = try await JUnitConsumers.read(text: xml)
        let (suite, cases) = try JUnitConsumers.suite(read, "budgets")
        #expect(suite["failures"]?.integerValue == 2 && suite["skipped"]?.integerValue == 2)
        #expect(cases["ws.message_rtt p99 +10%"]?["results"]?.arrayValue?.first?["type"]?.stringValue == "budget")
    }

    @Test("XML 1.0 escaping: markup, quotes, ]]>, line ends kept in attributes, forbidden characters replaced with U+FFFD")
    func escaping() {
        let text = "a&b<c>d\"e'f]]>g\u{0}\u{1}\u{1B}[31m\u{7F}\t\n\r\u{FFFE}\u{FFFF}\u{85}é😀"
        #expect(JUnitReport.escaped(text, inAttribute: true)
            == "a&amp;b&lt;c&gt;d&quot;e&apos;f]]&gt;g\u{FFFD}\u{FFFD}\u{FFFD}[31m\u{7F}&#9;&#10;&#13;\u{FFFD}\u{FFFD}\u{85}é😀")
        #expect(JUnitReport.escaped(text, inAttribute: false)
            == "a&amp;b&lt;c&gt;d\"e'f]]&gt;g\u{FFFD}\u{FFFD}\u{FFFD}[31m\u{7F}\t\n&#13;\u{FFFD}\u{FFFD}\u{85}é😀")
    }

    @Test("hostile names (quotes, <, &, ]]>, control characters, line ends) in profile, scenario, threshold and invariant text: valid XML that reads back as written")
    func hostileNames() async throws {
        var result = try Self.result()
        let hostile = "q\"<&]]>'\u{1}\u{1B}x\ty\nz\r"
        let readBack = "q\"<&]]>'\u{FFFD}\u{FFFD}x\ty\nz\r"  // what a parser returns: only the forbidden characters differ
        result.profile.name = "p" + hostile
        result.thresholds[0].threshold.expression = "ws.message_rtt{scenario=\(hostile)} p99 < 10ms"
        result.invariants.examples["messages.in_sequence"]![0].scenario = hostile
        result.invariants.examples["messages.in_sequence"]![0].detail = "detail " + hostile
        result.invariants.checked[hostile] = 4
        result.invariants.violations[hostile] = 1
        result.invariants.examples[hostile] = [.init(actor: 2, scenario: hostile, detail: hostile, history: ["+1ms " + hostile])]
        let xml = JUnitReport.run(result).xml()
        #expect(!xml.contains("]]>") && !xml.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" && $0 != "\t" })
        let read = try await JUnitConsumers.read(text: xml)
        let (_, thresholds) = try JUnitConsumers.suite(read, "thresholds")
        let threshold = try #require(thresholds["ws.message_rtt{scenario=\(readBack)} p99 < 10ms"], "\(thresholds.keys)")
        #expect(threshold["classname"]?.stringValue == "wsload.p\(readBack).thresholds")
        #expect(threshold["results"]?.arrayValue?.first?["text"]?.stringValue == "ws.message_rtt{scenario=\(readBack)} p99 < 10ms: actual 12.3ms, limit < 10ms")
        let (_, invariants) = try JUnitConsumers.suite(read, "invariants")
        let named = try #require(invariants[readBack], "\(invariants.keys)")
        #expect(named["results"]?.arrayValue?.first?["text"]?.stringValue
            == "1 violation in 4 checks\nactor 2 (scenario \(readBack)): \(readBack)\n  +1ms \(readBack)")
        let sequence = try #require(invariants["messages.in_sequence"]?["results"]?.arrayValue?.first?["text"]?.stringValue)
        #expect(sequence.contains("actor 0 (scenario \(readBack)): detail \(readBack)\n"), "\(sequence)")
    }
}

/// `--junit FILE` on `wsload run` and `wsload compare`, in process against real servers, read by the real consumers.
@Suite("JUnit XML: run and compare --junit", .serialized, .timeLimit(.minutes(4)))
struct JUnitCommandTests {
    @Test("a passing run: every threshold and invariant a passing case with its figure; no secret; nothing else written")
    func passingRun() async throws {
        let scratch = try RunScratch()
        let token = scratch.path("token")
        try scratch.write("token", "s3cret-token-value\n")
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "junit-pass", "target": "embedded", "duration": "1s",
             "auth": {"type": "header", "name": "X-Api-Key", "tokenFile": "\(token)"},
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 3, "schedule": {"model": "closed", "thinkTime": "5ms"}}],
             "thresholds": ["errors count < 1000000", "ws.message_rtt p99 < 10s"]}
            """)
        let captured = CapturedOutput()
        let code = await WSLoad.main(
            arguments: ["run", profile, "--out", scratch.path("out/report.json"), "--junit", scratch.path("ci/junit.xml"), "--quiet"],
            output: captured.commandOutput)
        #expect(code == .success, "\(captured.error)")
        let text = try String(contentsOfFile: scratch.path("ci/junit.xml"), encoding: .utf8)
        #expect(!text.contains("s3cret"))
        // Written atomically: no temporary left beside it.
        #expect(try scratch.files(in: "ci") == ["junit.xml"])
        let result = try LoadedReport(contentsOf: scratch.path("out/report.json")).result
        let read = try await JUnitConsumers.read(scratch.path("ci/junit.xml"))
        #expect(read["name"]?.stringValue == "wsload run junit-pass" && read["failures"]?.integerValue == 0)
        let (thresholds, cases) = try JUnitConsumers.suite(read, "thresholds")
        #expect(thresholds["tests"]?.integerValue == 2 && thresholds["failures"]?.integerValue == 0)
        for outcome in result.thresholds {
            let testCase = try #require(cases[outcome.threshold.expression], "\(cases.keys)")
            #expect(testCase["result"]?.stringValue == "passed" && testCase["classname"]?.stringValue == "wsload.junit-pass.thresholds")
            #expect(testCase["systemOut"]?.stringValue == "actual \(FigureText.actual(outcome)), limit \(FigureText.limit(of: outcome.threshold))")
        }
        // The suites are the run's: its start, to the second, and its length.
        #expect(thresholds["timestamp"]?.stringValue == JUnitReport.timestamp(result.startedAt))
        #expect(abs((thresholds["time"]?.numberValue ?? 0) - result.elapsed.seconds) < 0.001)
        let (invariants, checks) = try JUnitConsumers.suite(read, "invariants")
        #expect(Set(checks.keys) == Set(result.invariants.checked.filter { $0.value > 0 }.keys) && !checks.isEmpty)
        #expect(invariants["failures"]?.integerValue == 0)
        #expect(checks.values.allSatisfy { $0["result"]?.stringValue == "passed" })
    }

    @Test("a failing threshold and a real invariant violation (a server that duplicates echoes), under hostile scenario and threshold names")
    func failingRun() async throws {
        let scratch = try RunScratch()
        let server = try PythonRunTarget(["--duplicate-every", "3"])
        // The scenario's name has quotes, markup and ]]>; a threshold's expression holds a form feed (whitespace to the
        // threshold parser, a character XML 1.0 forbids).
        let scenario = #"q\"<&]]>'x"#
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "junit-fail", "target": "\(server.url)", "duration": "60s",
             "scenarios": [{"name": "\(scenario)", "pattern": "echo", "connections": 2, "messagesPerConnection": 12}],
             "thresholds": ["ws.message_rtt{scenario=\(scenario)} max < 1us", "ws.message_rtt\\fp50 < 1us", "errors count < 1000000"]}
            """)
        let captured = CapturedOutput()
        let code = await WSLoad.main(
            arguments: ["run", profile, "--out", scratch.path("report.json"), "--junit", scratch.path("junit.xml"), "--quiet"],
            output: captured.commandOutput)
        _ = try server.stop()
        #expect(code == .invariantViolated, "\(captured.error)")
        let result = try LoadedReport(contentsOf: scratch.path("report.json")).result
        let read = try await JUnitConsumers.read(scratch.path("junit.xml"))
        let (thresholds, cases) = try JUnitConsumers.suite(read, "thresholds")
        #expect(thresholds["failures"]?.integerValue == 2, "\(thresholds)")
        let name = #"q"<&]]>'x"#
        let failing = try #require(cases["ws.message_rtt{scenario=\(name)} max < 1us"], "\(cases.keys)")
        let outcome = try #require(result.thresholds.first { $0.threshold.scenario == name })
        #expect(failing["results"]?.arrayValue?.first?["message"]?.stringValue == "actual \(FigureText.actual(outcome)), limit < 1us")
        #expect(failing["results"]?.arrayValue?.first?["type"]?.stringValue == "threshold")
        #expect(cases["ws.message_rtt\u{FFFD}p50 < 1us"]?["result"]?.stringValue == "failure", "\(cases.keys)")
        #expect(cases["errors count < 1000000"]?["result"]?.stringValue == "passed")

        let (_, invariants) = try JUnitConsumers.suite(read, "invariants")
        let sequence = try #require(invariants["messages.in_sequence"])
        let violations = try #require(result.invariants.violations["messages.in_sequence"])
        let checks = try #require(result.invariants.checked["messages.in_sequence"])
        #expect(violations > 0)
        let failure = try #require(sequence["results"]?.arrayValue?.first)
        #expect(failure["message"]?.stringValue == "\(violations) violation\(violations == 1 ? "" : "s") in \(checks) checks")
        let text = try #require(failure["text"]?.stringValue)
        let examples = text.split(separator: "\n").filter { $0.hasPrefix("actor ") }
        #expect(examples.count == min(5, result.invariants.examples["messages.in_sequence"]?.count ?? 0) && !examples.isEmpty, "\(text)")
        #expect(examples.allSatisfy { $0.contains("(scenario \(name)): ") }, "\(text)")
        // The other invariants held.
        #expect(invariants.filter { $0.key != "messages.in_sequence" }.values.allSatisfy { $0["result"]?.stringValue == "passed" })
    }

    @Test("--junit that cannot be written: exit 74 naming the path; the JSON report is written and no temporary is left")
    func unwritableRun() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(duration: "1s", thresholds: #"["errors count < 1000000"]"#))
        for blocked in [scratch.path("p.json") + "/junit.xml", scratch.path("taken")] {
            try? FileManager.default.createDirectory(atPath: scratch.path("taken/inside"), withIntermediateDirectories: true)
            let captured = CapturedOutput()
            let code = await WSLoad.main(
                arguments: ["run", profile, "--out", scratch.path("report.json"), "--junit", blocked, "--quiet"], output: captured.commandOutput)
            #expect(code == .ioError && code.rawValue == 74, "\(captured.error)")
            #expect(captured.error.contains("Error: --junit: cannot write \(blocked)"), "\(captured.error)")
            #expect(try scratch.json("report.json")["schema"]?.stringValue == "wsload.report/1")
            let files = try scratch.files()
            #expect(files == ["p.json", "report.json", "taken"], "\(files)")
            #expect(try scratch.files(in: "taken") == ["inside"])
            try FileManager.default.removeItem(atPath: scratch.path("report.json"))
        }
    }

    @Test("compare --junit: a head slower than its base fails its budget with the change, p-value and limit; unwritable: exit 74")
    func compareBudgets() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", """
            {"version": 1, "name": "junit-gate", "target": "embedded", "duration": "2s",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 5, "schedule": {"model": "closed", "thinkTime": "5ms"}}],
             "report": {"interval": "250ms"}}
            """)
        let base = await runCLIArray(["run", profile, "--out", scratch.path("base.json"), "--quiet"])
        #expect(base.code == .success, "\(base.error)")
        // The head: the same profile against a server that delays every echo by 5 ms.
        let group = try EventLoopGroup(loopCount: 1)
        let server = try await EmbeddedServer.bind(ServerConfiguration(chaos: ChaosOptions(echoDelay: .milliseconds(5))), on: group)
        let serving = Task(executorPreference: server.taskExecutor) { await server.run() }
        let head = await runCLIArray(["run", profile, "--target", server.url, "--out", scratch.path("head.json"), "--quiet"])
        serving.cancel()
        await serving.value
        group.shutdown()
        #expect(head.code == .success, "\(head.error)")

        let budgets = ["ws.message_rtt p50 +10%", "ws.message_rtt p50 +100000%", "http.ttfb p99 +10%"]
        let arguments = ["compare", scratch.path("base.json"), scratch.path("head.json")] + budgets.flatMap { ["--fail-on", $0] }
        let compare = await runCLIArray(arguments + ["--junit", scratch.path("junit.xml")])
        #expect(compare.code == .regression, "\(compare.error)")
        // The change as compare's own line tells it, and the p-value from its JSON (the same seeded comparison).
        let told = try #require(compare.error.split(separator: "\n").first { $0.hasPrefix("regression: ws.message_rtt p50 ") })
        let change = try #require(told.split(separator: " ").dropFirst(3).first, "\(told)")
        #expect(told.hasSuffix(" beyond the budget ws.message_rtt p50 +10%"), "\(told)")
        let json = await runCLIArray(arguments + ["--json"])
        let row = try #require(try JSONValue(parsing: json.output)["rows"]?.arrayValue?.first {
            $0["metric"]?.stringValue == "ws.message_rtt" && $0["statistic"]?.stringValue == "p50"
        })
        let pValue = try #require(row["pValue"]?.numberValue)
        let read = try await JUnitConsumers.read(scratch.path("junit.xml"))
        let (suite, cases) = try JUnitConsumers.suite(read, "budgets")
        #expect(suite["tests"]?.integerValue == 3 && suite["failures"]?.integerValue == 1 && suite["skipped"]?.integerValue == 1)
        let failing = try #require(cases["ws.message_rtt p50 +10%"]?["results"]?.arrayValue?.first)
        #expect(failing["type"]?.stringValue == "budget")
        #expect(failing["message"]?.stringValue == "change \(change), \(FigureText.pValue(pValue)), limit +10%", "\(failing)")
        #expect(cases["ws.message_rtt p50 +100000%"]?["result"]?.stringValue == "passed")
        #expect(cases["http.ttfb p99 +10%"]?["result"]?.stringValue == "skipped")
        #expect(cases["ws.message_rtt p50 +10%"]?["classname"]?.stringValue == "wsload.junit-gate.budgets")

        // Unwritable: 74 naming the path, and the regression still told.
        let blocked = scratch.path("p.json") + "/junit.xml"
        let refused = await runCLIArray(arguments + ["--junit", blocked])
        #expect(refused.code == .ioError, "\(refused.error)")
        #expect(refused.error.contains("Error: --junit: cannot write \(blocked)"), "\(refused.error)")
        #expect(refused.error.contains("regression: ws.message_rtt p50 +"), "\(refused.error)")
    }
}

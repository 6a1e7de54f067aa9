import Foundation
import JSON
import LoadEngine
import Profile
import Reporting
import Testing

private func problems(_ text: String) -> [String] {
    do {
        _ = try ProfileDecoder.decode(Array(text.utf8))
        return []
    } catch {
        return error.problems.map(\.description)
    }
}

private func decode(_ text: String) throws -> Profile { try ProfileDecoder.decode(Array(text.utf8)) }

@Suite("Profile validation", .timeLimit(.minutes(1)))
struct ProfileDecoderTests {
    @Test("a minimal profile decodes with the documented defaults")
    func minimal() throws {
        let profile = try decode("""
            {"version": 1, "name": "min", "target": "embedded", "duration": "10s",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 10}]}
            """)
        #expect(profile.target == .embedded)
        #expect(profile.duration == .seconds(10))
        #expect(profile.gracefulStop == .seconds(5))
        #expect(profile.report.directory == "Reports/runs")
        #expect(profile.report.interval == .seconds(1), "issue 15: one-second intervals by default")
        #expect(profile.report.maxIntervals == 600)
        let websocket = profile.scenarios[0].websocket
        #expect(websocket.connections == 10)
        #expect(websocket.schedule == .closed(thinkTime: .zero))
        #expect(websocket.messageSize == .fixed(64))
        #expect(websocket.messageFormat == .binary)
        #expect(websocket.reconnect == nil)
        #expect(profile.document["name"]?.stringValue == "min")
    }

    @Test("report.maxIntervals: a whole number from 2 to 100,000, refused otherwise at its path")
    func maxIntervals() throws {
        func profile(_ value: String) -> String {
            """
            {"version": 1, "name": "m", "target": "embedded", "duration": "10s", "report": {"maxIntervals": \(value)},
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 1}]}
            """
        }
        #expect(try decode(profile("2")).report.maxIntervals == 2)
        #expect(try decode(profile("100000")).report.maxIntervals == 100_000)
        #expect(try decode(profile("8")).report.maxIntervals == 8)
        #expect(problems(profile("1")) == ["report.maxIntervals: 1 is out of range (use 2...100000)"])
        #expect(problems(profile("100001")) == ["report.maxIntervals: 100001 is out of range (use 2...100000)"])
        #expect(problems(profile("-5")) == ["report.maxIntervals: -5 is out of range (use 2...100000)"])
        #expect(problems(profile("2.5")) == ["report.maxIntervals: expected a whole number, found 2.5"])
        #expect(problems(profile("1e300")).first?.hasPrefix("report.maxIntervals: expected a whole number") == true)
        #expect(problems(profile("\"600\"")) == ["report.maxIntervals: expected a whole number, found a string"])
        #expect(problems(profile("600, \"maxInterval\": 3")) == [
            "report.maxInterval: unknown key (did you mean \"maxIntervals\"?)",
        ])
    }

    @Test("every problem at once, each with its JSON path and a hint (golden)")
    func golden() {
        let found = problems("""
            {
              "version": 2,
              "name": "bad name",
              "target": "http://example.com",
              "duraton": "10s",
              "tls": {"insecure": "yes"},
              "headers": {"Authorization": "Bearer x", "X-Ok": "fine", "Bad Header": "v"},
              "auth": {"type": "bearer"},
              "scenarios": [
                {"name": "a", "pattern": "echo", "connections": 0, "message": {"size": 8}},
                {"name": "b", "pattern": "echoo", "stages": [{"target": 10, "duration": "10x"}],
                 "reconnect": {"initial": "5s", "max": "1s", "jitter": "some"}},
                {"name": "a", "pattern": "idle", "connections": 5},
                {"name": "d", "pattern": "echo", "connections": 1,
                 "schedule": {"model": "open", "thinkTime": "1s"}}
              ],
              "thresholds": ["ws.message_rtt p99 < 50", "ws.mesage_rtt p99 < 50ms", {"expression": "errors rate < 200%"},
                             "ws.connect{scenario=zz} p95 < 200ms", 42]
            }
            """)
        #expect(found == [
            "duraton: unknown key (did you mean \"duration\"?)",
            "version: version 2 is not supported (this build reads version 1)",
            "name: \"bad name\" may only hold letters, digits, '-', '_' and '.' (it names the report file)",
            "target: \"http://example.com\" is not a ws:// or wss:// URL (e.g. ws://127.0.0.1:8080/ws, or \"embedded\")",
            "tls.insecure: expected true or false, found a string",
            "headers.Authorization: a credential in the profile would be copied wherever the profile goes (use auth with tokenEnv or tokenFile)",
            "headers.Bad Header: \"Bad Header\" is not a valid header name (byte 3 is not a token character; RFC 9110 §5.6.2)",
            "auth: needs tokenEnv or tokenFile (the token itself never goes in a profile)",
            "duration: is required",
            "scenarios[0].connections: 0 is out of range (use 1...1000000)",
            "scenarios[0].message.size: echo binary messages carry a 16-byte sequence header (use sizes of at least 16)",
            "scenarios[1].pattern: \"echoo\" is not one of \"echo\", \"idle\", \"receive\", \"typed\", \"flow\" (did you mean \"echo\"?)",
            "scenarios[1].stages[0].duration: \"10x\" is not a duration (use 500ms, 10s, 5m, 2h)",
            "scenarios[1].reconnect.jitter: \"some\" is not one of \"none\", \"full\", \"equal\", \"decorrelated\" (did you mean \"none\"?)",
            "scenarios[1].reconnect.max: is below initial (5.0s)",
            "scenarios[2].pingInterval: is required for the idle pattern (e.g. \"30s\")",
            "scenarios[3].schedule.thinkTime: applies to the closed model only (the open model sends at rate)",
            "scenarios[3].schedule.rate: is required (messages per second)",
            "thresholds[0]: \"50\" is not a duration (use 500us, 50ms, 2s, 5m, 2h)",
            "thresholds[1]: unknown metric \"ws.mesage_rtt\" (did you mean \"ws.message_rtt\"?)",
            "thresholds[2]: \"200%\" is not a rate (write a percentage (0.1%) or a fraction (0.001))",
            "thresholds[3]: no scenario is named \"zz\"",
            "thresholds[4]: expected a threshold string or object, found a number (e.g. \"ws.message_rtt p99 < 50ms\")",
        ])
    }

    @Test("a duplicate scenario name and an unknown scenario in a threshold are named")
    func crossReferences() {
        let found = problems("""
            {"version": 1, "name": "x", "target": "embedded", "duration": "1s",
             "scenarios": [{"name": "a", "pattern": "echo", "connections": 1},
                           {"name": "a", "pattern": "echo", "connections": 1}],
             "thresholds": ["ws.connect{scenario=b} p95 < 200ms"]}
            """)
        #expect(found == [
            "scenarios[1].name: \"a\" names two scenarios (names must be unique)",
            "thresholds[0]: no scenario is named \"b\" (did you mean \"a\"?)",
        ])
    }

    @Test("not JSON at all: the line and column")
    func syntax() {
        #expect(problems("{\n  \"version\": 1,\n  \"name\": \"x\",,\n}") == [
            "not valid JSON: line 3, column 15: expected a key in quotes, found ','",
        ])
        #expect(problems("[]") == ["expected an object, found an array"])
    }

    @Test("sizes, schedules, auth and thresholds decode to what they say")
    func details() throws {
        let profile = try decode("""
            {"version": 1, "name": "d", "target": "wss://example.test:9443/ws", "duration": "2m", "seed": 7,
             "tls": {"caFile": "/tmp/ca.pem", "serverName": "example.test"},
             "headers": {"X-Api-Key": "k", "Origin-Id": "o"},
             "auth": {"type": "query", "name": "access_token", "tokenEnv": "WS_TOKEN"},
             "scenarios": [
               {"name": "w", "pattern": "typed", "connections": 100, "typeName": "chat.send",
                "message": {"size": [{"size": 64, "weight": 9}, {"size": 4096}], "format": "text"},
                "schedule": {"model": "open", "rate": 2000, "per": "total"},
                "reconnect": {"initial": "250ms", "max": "10s", "multiplier": 1.5, "jitter": "equal", "maxAttempts": 3}},
               {"name": "r", "pattern": "receive", "stages": [{"target": 50, "duration": "10s"}, {"target": 0, "duration": "5s"}],
                "path": "/push?interval=10ms", "subscribe": "{\\"op\\":\\"sub\\"}", "pingInterval": "15s"}
             ],
             "thresholds": [{"expression": "ws.message_rtt{scenario=w} p99.9 <= 1.5s", "abortOnFail": true, "abortDelay": "30s"},
                            "errors rate < 0.1%", "ws.messages_received per_second >= 100"]}
            """)
        guard case .url(let url) = profile.target else { Issue.record("target"); return }
        #expect(url.isSecure && url.port == 9443)
        #expect(profile.authentication == .init(placement: .query(name: "access_token"), source: .environment("WS_TOKEN")))
        #expect(profile.headers.map(\.name) == ["X-Api-Key", "Origin-Id"])
        let typed = profile.scenarios[0].websocket
        #expect(typed.schedule == .open(perConnection: 20))
        #expect(typed.messageSize == .weighted([(64, 9), (4096, 1)]))
        #expect(typed.reconnect?.maximumAttempts == 3 && typed.reconnect?.jitter == .equal)
        let receive = profile.scenarios[1].websocket
        #expect(receive.connections == 50 && receive.stages.count == 2)
        #expect(receive.path == "/push?interval=10ms")
        let threshold = profile.thresholds[0]
        #expect(threshold.scenario == "w" && threshold.statistic == .percentile(99.9) && threshold.limit == 1_500_000)
        #expect(threshold.comparison == .lessOrEqual && threshold.abortOnFail && threshold.abortDelay == .seconds(30))
        #expect(profile.thresholds[1].limit == 0.001 && profile.thresholds[1].statistic == .rate)
        #expect(profile.thresholds[2].statistic == .perSecond && profile.thresholds[2].comparison == .greaterOrEqual)
    }

    @Test("threshold expressions", arguments: [
        ("ws.message_rtt p99 < 50ms", true),
        ("ws.connect p95 < 200ms", true),
        ("errors rate < 0.1%", true),
        ("errors count <= 0", true),
        ("ws.ping_rtt mean < 2s", true),
        ("ws.messages_sent per_second > 1000", true),
        ("ws.messages_sent p99 < 5ms", false),
        ("ws.message_rtt rate < 1%", false),
        ("ws.message_rtt p101 < 5ms", false),
        ("ws.message_rtt p99 == 5ms", false),
        ("ws.message_rtt p99 <", false),
        ("ws.message_rtt{scenario} p99 < 5ms", false),
    ])
    func thresholdExpressions(expression: String, isValid: Bool) {
        let result = Threshold.parse(expression)
        if case .success = result { #expect(isValid, "\(expression)") } else { #expect(!isValid, "\(expression)") }
    }
}

@Suite("Transfer scenarios in profiles", .timeLimit(.minutes(1)))
struct TransferProfileTests {
    private func problems(_ scenario: String) -> [String] {
        let text = """
            {"version": 1, "name": "t", "target": "embedded", "duration": "5s", "scenarios": [\(scenario)]}
            """
        do {
            _ = try ProfileDecoder.decode(Array(text.utf8))
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test("a valid download and upload decode")
    func valid() throws {
        let profile = try ProfileDecoder.decode(Array("""
            {"version": 1, "name": "t", "target": "embedded", "duration": "5s", "scenarios": [
              {"name": "d", "kind": "download", "stages": [{"target": 10, "duration": "1s"}],
               "transfer": {"size": "256MiB", "segments": 8, "connections": 4, "minSegmentSize": "4MiB", "interrupt": 0.5,
                            "bandwidthLimit": "10MiB", "requestTimeout": "5s", "retry": {"initial": "10ms", "maxAttempts": 3}}},
              {"name": "u", "kind": "upload", "connections": 2, "transfer": {"file": "/etc/hostname", "method": "POST", "multipart": true}}]}
            """.utf8))
        let download = try #require(profile.scenarios[0].transfer)
        #expect(download.size == 256 << 20 && download.segments == 8 && download.connectionsPerTransfer == 4)
        #expect(download.minimumSegmentSize == 4 << 20 && download.interruptProbability == 0.5 && download.bandwidthLimit == 10 << 20)
        #expect(download.retry?.maximumAttempts == 3 && profile.scenarios[0].websocket.connections == 10)
        #expect(profile.scenarios[1].transfer?.isMultipart == true && profile.scenarios[1].kind == .upload)
    }

    @Test("transfer problems name their JSON path", arguments: [
        (#"{"name": "d", "kind": "download", "connections": 1}"#, "scenarios[0].transfer: is required"),
        (#"{"name": "d", "kind": "download", "connections": 1, "transfer": {}}"#,
         "scenarios[0].transfer: a download needs exactly one of url, path or size"),
        (#"{"name": "d", "kind": "download", "connections": 1, "transfer": {"size": "1MiB", "path": "/x"}}"#,
         "scenarios[0].transfer: a download needs exactly one of url, path or size"),
        (#"{"name": "d", "kind": "download", "connections": 1, "transfer": {"size": "lots"}}"#,
         "scenarios[0].transfer.size: \"lots\" is not a size"),
        (#"{"name": "d", "kind": "download", "connections": 1, "transfer": {"url": "ftp://x/y"}}"#,
         "scenarios[0].transfer.url: \"ftp://x/y\" is not an http:// or https:// URL"),
        (#"{"name": "d", "kind": "download", "connections": 1, "pattern": "echo", "transfer": {"size": 10}}"#,
         "scenarios[0].pattern: is for websocket scenarios"),
        (#"{"name": "d", "kind": "download", "connections": 1, "transfer": {"size": 10, "method": "PUT"}}"#,
         "scenarios[0].transfer.method: is for uploads"),
        (#"{"name": "d", "kind": "download", "connections": 1, "transfer": {"size": 10, "sgments": 2}}"#,
         "scenarios[0].transfer.sgments: unknown key"),
        (#"{"name": "u", "kind": "upload", "connections": 1, "transfer": {"size": 10, "segments": 2}}"#,
         "scenarios[0].transfer.segments: is for downloads"),
        (#"{"name": "u", "kind": "upload", "connections": 1, "transfer": {"path": "/upload"}}"#,
         "scenarios[0].transfer: an upload needs exactly one of file or size"),
        (#"{"name": "u", "kind": "upload", "connections": 1, "transfer": {"size": 10, "method": "GET"}}"#,
         "scenarios[0].transfer.method: \"GET\" is not PUT or POST"),
        (#"{"name": "w", "pattern": "echo", "connections": 1, "transfer": {"size": 10}}"#,
         "scenarios[0].transfer: only download and upload scenarios transfer"),
    ])
    func problem(scenario: String, expected: String) {
        let found = problems(scenario)
        #expect(found.contains { $0.hasPrefix(expected) }, "\(found)")
    }
}

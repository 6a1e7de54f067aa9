import Flow
import JSON
import Profile
import Testing

/// The contract's example profile, split by preset (a step of another preset is refused).
let contractChatScenario = """
    {"name": "chat", "pattern": "flow", "protocol": "raw", "path": "/chat", "connections": 100,
     "headers": {"Authorization": "Bearer ${users.token}"},
     "query": {"room": "r${vu}"},
     "classify": [{"type": "said", "json": [{"path": "$.type", "equals": "said"}]}],
     "steps": [
       {"send": {"json": {"type": "join", "room": "r${vu}"}}},
       {"name": "join", "expect": {"json": [{"path": "$.type", "equals": "joined"}], "within": "2s",
                                   "capture": {"room": "$.room"}, "skip": 100, "onTimeout": "restart"}},
       {"mark": "t0"},
       {"loop": {"count": 10, "rate": 5, "per": "connection", "steps": [
          {"send": {"text": "hello ${seq} from ${vu}"}},
          {"name": "hello", "expect": {"text": {"regex": "^hello ([0-9]+)"}, "capture": {"n": {"group": 1}},
                                       "within": "1s", "from": "t0"}},
          {"think": "100ms"}, {"think": {"min": "50ms", "max": "200ms"}}]}},
       {"name": "login", "group": {"steps": [{"send": {"binary": {"hex": "00ff"}}},
                                             {"name": "bin", "expect": {"binary": {"length": {"min": 2, "max": 8}, "prefix": {"base64": "AP8="}}, "within": "1s"}}]}},
       {"name": "p", "ping": {"within": "5s"}},
       {"if": {"var": "room", "equals": "r1", "then": [{"send": {"text": "one"}}], "else": [{"send": {"text": "other"}}]}},
       {"if": {"var": "n", "exists": false, "then": [{"send": {"text": "no n"}}]}},
       {"reconnect": {}},
       {"close": {"code": 1000, "reason": "bye"}}
     ]}
    """

let contractSocketIOScenario = """
    {"name": "sio", "pattern": "flow", "protocol": "socketio", "connections": 10,
     "socketio": {"namespace": "/", "auth": {"token": "${users.token}"}, "timeout": "10s"},
     "steps": [
       {"name": "say", "emit": {"event": "say", "args": [{"room": "${users.room}", "text": "hi"}], "ack": true,
                                "within": "2s", "match": [{"path": "$[0].ok", "equals": true}]}},
       {"name": "said", "on": {"event": "said", "match": [{"path": "$[0].from", "equals": "${sid}"}],
                               "capture": {"text": "$[0].text"}, "within": "2s"}},
       {"emit": {"event": "fire", "args": ["${text}"]}}
     ]}
    """

let contractGraphQLScenario = """
    {"name": "gql", "pattern": "flow", "protocol": "graphql-ws", "path": "/graphql", "connections": 5,
     "graphql": {"payload": {"token": "${users.token}"}, "timeout": "10s"},
     "steps": [
       {"name": "hello", "query": {"query": "query { hello }", "within": "2s",
                                   "match": [{"path": "$.data.hello", "equals": "world"}]}},
       {"name": "count", "subscribe": {"query": "subscription($n: Int) { count(to: $n, everyMs: 10) }",
                                       "variables": {"n": 5}, "operationName": null, "count": 5, "within": "2s"}},
       {"unsubscribe": "count"}
     ]}
    """

let contractData = """
    "users": {"file": "users.csv", "format": "csv", "mode": "unique", "secret": ["token"]}
    """

@Suite("Flow profiles: decoding", .timeLimit(.minutes(2)))
struct FlowProfileDecoderTests {
    @Test("the contract's example decodes into the expected model: step tree, names, feeders, preset defaults")
    func contractExample() throws {
        let text = flowProfile(data: contractData, contractChatScenario, contractSocketIOScenario, contractGraphQLScenario)
        #expect(flowProblems(text) == [])
        let profile = try ProfileDecoder.decode(Array(text.utf8))
        #expect(profile.data == [{
            var users = FeederSource(name: "users", file: "users.csv", format: .csv)
            users.mode = .unique
            users.secretColumns = ["token"]
            return users
        }()])

        let chat = try #require(profile.scenarios[0].websocket.flow)
        #expect(profile.scenarios[0].websocket.pattern == .flow)
        #expect(profile.scenarios[0].websocket.path == "/chat")
        #expect(chat.preset == .raw)
        #expect(chat.stepNames == ["join", "hello", "login", "bin", "p"])
        #expect(chat.feeders == ["users"])
        #expect(chat.feederColumns == [FeederColumnUse(feeder: "users", column: "token", path: "scenarios[0].headers.Authorization")])
        #expect(chat.headers.map(\.name) == ["Authorization"])
        #expect(chat.headers[0].value.references == [.feeder(source: "users", column: "token")])
        #expect(chat.query.map(\.name) == ["room"])
        #expect(chat.classify.map(\.type) == ["said"])
        #expect(chat.steps.count == 10)
        #expect(chat.steps.map(\.path) == (0..<10).map { "scenarios[0].steps[\($0)]" })
        guard case .send(.json) = chat.steps[0].action else { Issue.record("step 0: \(chat.steps[0].action)"); return }
        guard case .expect(let join) = chat.steps[1].action else { Issue.record("step 1"); return }
        #expect(chat.steps[1].name == "join" && chat.steps[1].nameIndex == 0)
        #expect(join.within == .seconds(2) && join.skipLimit == 100 && join.onTimeout == .restart && join.from == nil)
        #expect(join.captures == [Capture(variable: "room", source: .path(try JSONPath.parse("$.room").get()))])
        #expect(chat.steps[2].action == .mark("t0"))
        guard case .loop(let loop) = chat.steps[3].action else { Issue.record("step 3"); return }
        #expect(loop.count == 10 && loop.duration == nil && loop.ratePerConnection == 5)
        #expect(loop.steps.map(\.path) == (0..<4).map { "scenarios[0].steps[3].loop.steps[\($0)]" })
        guard case .expect(let hello) = loop.steps[1].action else { Issue.record("loop step 1"); return }
        #expect(loop.steps[1].nameIndex == 1 && hello.from == "t0" && hello.captures == [Capture(variable: "n", source: .group(1))])
        #expect(loop.steps[2].action == .think(.fixed(.milliseconds(100))))
        #expect(loop.steps[3].action == .think(.uniform(.milliseconds(50) ... .milliseconds(200))))
        guard case .group(let login) = chat.steps[4].action else { Issue.record("step 4"); return }
        #expect(chat.steps[4].nameIndex == 2 && login[1].nameIndex == 3)
        #expect(login[0].action == .send(.binary([0x00, 0xFF])))
        guard case .expect(let binary) = login[1].action else { Issue.record("group step 1"); return }
        #expect(binary.matcher == .binary(length: 2...8, prefix: [0x00, 0xFF]))
        #expect(chat.steps[5].action == .ping(within: .seconds(5), onTimeout: .continue) && chat.steps[5].nameIndex == 4)
        guard case .ifThen(.equals("room", _), let then, let otherwise) = chat.steps[6].action else { Issue.record("step 6"); return }
        #expect(then.count == 1 && otherwise.count == 1)
        // exists: false is exists with the branches swapped.
        guard case .ifThen(.exists("n"), let present, let absent) = chat.steps[7].action else { Issue.record("step 7"); return }
        #expect(present.isEmpty && absent.count == 1)
        #expect(chat.steps[8].action == .reconnect)
        #expect(chat.steps[9].action == .close(code: 1000, reason: "bye"))

        let socketIO = try #require(profile.scenarios[1].websocket.flow)
        #expect(profile.scenarios[1].websocket.path == "/socket.io/?EIO=4&transport=websocket")
        #expect(socketIO.preset == .socketio && socketIO.namespace == "/" && socketIO.handshakeTimeout == .seconds(10))
        #expect(socketIO.connectPayload != nil)
        #expect(socketIO.stepNames == ["say", "said"])
        #expect(socketIO.feederColumns.map(\.column) == ["token", "room"])
        guard case .emit(let say) = socketIO.steps[0].action else { Issue.record("sio step 0"); return }
        #expect(say.event == "say" && say.ackWithin == .seconds(2) && say.arguments.count == 1 && say.ackMatch.count == 1)
        guard case .on(let said) = socketIO.steps[1].action else { Issue.record("sio step 1"); return }
        #expect(said.event == "said" && said.expectation.within == .seconds(2) && said.expectation.captures.map(\.variable) == ["text"])
        guard case .emit(let fire) = socketIO.steps[2].action else { Issue.record("sio step 2"); return }
        #expect(fire.ackWithin == nil && socketIO.steps[2].name == nil)

        let graphQL = try #require(profile.scenarios[2].websocket.flow)
        #expect(profile.scenarios[2].websocket.subprotocols == ["graphql-transport-ws"])
        #expect(profile.scenarios[2].websocket.path == "/graphql")
        #expect(graphQL.preset == .graphqlWS && graphQL.initPayload != nil)
        guard case .query(let query) = graphQL.steps[0].action else { Issue.record("gql step 0"); return }
        #expect(query.within == .seconds(2) && query.match.count == 1 && query.operation.operationName == nil)
        guard case .subscribe(let count) = graphQL.steps[1].action else { Issue.record("gql step 1"); return }
        #expect(count.count == 5 && count.operation.variables == .constant(["n": 5]))
        #expect(graphQL.steps[2].action == .unsubscribe("count"))
    }

    @Test("the socketio preset appends its query to the scenario's own path and query")
    func socketIOPath() throws {
        let text = flowProfile(rawFlow(#"[{"send": {"text": "x"}}]"#, extra: #""protocol": "socketio", "path": "/io/?a=1""#))
        let profile = try ProfileDecoder.decode(Array(text.utf8))
        #expect(profile.scenarios[0].websocket.path == "/io/?a=1&EIO=4&transport=websocket")
    }

    @Test("an unknown action key gets a spelling suggestion, and the step has no action")
    func unknownAction() {
        #expect(flowProblems(flowProfile(rawFlow(#"[{"sned": {"text": "x"}}]"#))) == [
            #"scenarios[0].steps[0].sned: unknown key (did you mean "send"?)"#,
            "scenarios[0].steps[0]: has no action (exactly one of send, expect, think, loop, group, ping, close, reconnect, mark, if, emit, on, query, subscribe, unsubscribe)",
        ])
    }

    @Test("an unknown key inside an action gets a suggestion")
    func unknownKey() {
        #expect(flowProblems(flowProfile(rawFlow(#"[{"name": "e", "expect": {"any": true, "whithin": "1s", "within": "1s"}}]"#))) == [
            #"scenarios[0].steps[0].expect.whithin: unknown key (did you mean "within"?)"#,
        ])
    }

    @Test("a step with two actions")
    func twoActions() {
        #expect(flowProblemMessages(flowProfile(rawFlow(#"[{"send": {"text": "x"}, "think": "1s"}]"#))) == [
            "scenarios[0].steps[0]: has 2 actions: send, think",
        ])
    }

    @Test("a bad template names its path and byte offset")
    func badTemplate() {
        let found = flowProblemMessages(flowProfile(rawFlow(#"[{"send": {"text": "ab${vu"}}, {"send": {"json": {"a": ["x", "${"]}}}]"#)))
        #expect(found.count == 2)
        #expect(found[0].hasPrefix("scenarios[0].steps[0].send.text: bad template at byte 2: "), "\(found)")
        #expect(found[1].hasPrefix("scenarios[0].steps[1].send.json.a[1]: bad template at byte 0: "), "\(found)")
    }

    @Test("a bad regex gives regerror's text; a bad JSON path its byte offset")
    func badRegexAndPath() {
        let found = flowProblemMessages(flowProfile(rawFlow(
            #"[{"name": "e", "expect": {"text": {"regex": "a(b"}, "within": "1s"}}, {"name": "j", "expect": {"json": [{"path": "$.a[x]", "exists": true}], "within": "1s"}}]"#)))
        #expect(found.count == 2)
        #expect(found[0].hasPrefix("scenarios[0].steps[0].expect.text.regex: bad regular expression: "), "\(found)")
        #expect(found[0].count > "scenarios[0].steps[0].expect.text.regex: bad regular expression: ".count, "regerror's text is missing")
        #expect(found[1].hasPrefix("scenarios[0].steps[1].expect.json[0].path: bad JSON path at byte 4: "), "\(found)")
    }

    @Test("a captured variable used before the step that captures it, in document order; a body's capture counts after it")
    func useBeforeCapture() {
        #expect(flowProblemMessages(flowProfile(rawFlow("""
            [{"send": {"text": "${room}"}},
             {"loop": {"count": 2, "steps": [{"name": "j", "expect": {"json": [], "capture": {"room": "$.room"}, "within": "1s"}}]}},
             {"send": {"json": {"r": "${room}"}}},
             {"if": {"var": "later", "exists": true, "then": [{"send": {"text": "${later}"}}]}},
             {"name": "k", "expect": {"any": true, "capture": {"later": "$"}, "within": "1s"}}]
            """))) == [
            "scenarios[0].steps[0].send.text: captured variable room is used before it is defined",
            "scenarios[0].steps[3].if.var: captured variable later is used before it is defined",
            "scenarios[0].steps[3].if.then[0].send.text: captured variable later is used before it is defined",
        ])
    }

    @Test("from names a mark set earlier, not one set later or never")
    func fromMark() {
        #expect(flowProblemMessages(flowProfile(rawFlow("""
            [{"name": "a", "expect": {"any": true, "within": "1s", "from": "m"}}, {"mark": "m"},
             {"name": "b", "expect": {"any": true, "within": "1s", "from": "n"}}]
            """))) == [
            #"scenarios[0].steps[0].expect.from: "m" is no earlier mark"#,
            #"scenarios[0].steps[2].expect.from: "n" is no earlier mark"#,
        ])
    }

    @Test("a feeder name that is not in data")
    func unknownFeeder() {
        #expect(flowProblems(flowProfile(data: contractData, rawFlow(#"[{"send": {"text": "${user.token}"}}]"#))) == [
            #"scenarios[0].steps[0].send.text: "user" in ${user.token} is not a feeder (did you mean "users"?)"#,
        ])
    }

    @Test("a preset step in the wrong preset")
    func wrongPreset() {
        #expect(flowProblems(flowProfile(rawFlow(#"[{"name": "e", "emit": {"event": "x"}}, {"name": "q", "query": {"query": "{a}", "within": "1s"}}]"#))) == [
            #"scenarios[0].steps[0].emit: emit needs "protocol": "socketio" (this scenario's protocol is raw)"#,
            #"scenarios[0].steps[1].query: query needs "protocol": "graphql-ws" (this scenario's protocol is raw)"#,
        ])
        #expect(flowProblemMessages(flowProfile(rawFlow(#"[{"send": {"text": "x"}}]"#, extra: #""protocol": "socketio", "graphql": {}"#))) == [
            #"scenarios[0].graphql: needs "protocol": "graphql-ws""#,
        ])
    }

    @Test("expect is raw-only, classify not in socketio: a preset takes every message itself")
    func presetRefusesExpectAndClassify() {
        let expect = #"[{"name": "e", "expect": {"any": true, "within": "1s"}}]"#
        #expect(flowProblems(flowProfile(rawFlow(expect, extra: #""protocol": "socketio""#))) == [
            #"scenarios[0].steps[0].expect: expect needs "protocol": "raw" (a socketio flow waits for an event with on (or an emit's ack))"#,
        ])
        #expect(flowProblems(flowProfile(rawFlow(#"[{"loop": {"count": 1, "steps": \#(expect)}}]"#, extra: #""protocol": "graphql-ws""#))) == [
            #"scenarios[0].steps[0].loop.steps[0].expect: expect needs "protocol": "raw" (a graphql-ws flow waits for results with query or subscribe)"#,
        ])
        let classify = #""classify": [{"type": "said", "json": [{"path": "$.type", "equals": "said"}]}]"#
        #expect(flowProblemMessages(flowProfile(rawFlow(#"[{"think": "1ms"}]"#, extra: #""protocol": "socketio", "# + classify))) == [
            "scenarios[0].classify: a socketio flow does not classify messages",
        ])
        // graphql-ws classifies the results no step takes (whole messages).
        #expect(flowProblems(flowProfile(rawFlow(#"[{"think": "1ms"}]"#, extra: #""protocol": "graphql-ws", "# + classify))) == [])
        // Raw flows keep both.
        #expect(flowProblems(flowProfile(rawFlow(expect, extra: classify))) == [])
    }

    @Test("a flow's Authorization header and a bearer auth (or header/query auth of the same name) both setting it is a problem")
    func authorizationConflict() {
        func profile(auth: String, _ extra: String) -> String {
            """
            {"version": 1, "name": "flows", "target": "ws://127.0.0.1:9/", "duration": "10s",
             "data": {"users": {"file": "users.csv"}}, "auth": \(auth),
             "scenarios": [{"name": "plain", "pattern": "flow", "connections": 1, "steps": [{"think": "1ms"}]},
                           \(rawFlow(#"[{"think": "1ms"}]"#, extra: extra))]}
            """
        }
        let header = #""headers": {"authorization": "Bearer ${users.token}"}"#
        #expect(flowProblems(profile(auth: #"{"type": "bearer", "tokenEnv": "T"}"#, header)) == [
            "scenarios[1].headers.authorization: this header and auth (type bearer) both set the Authorization header "
                + "(keep one: auth sends the run's token to every connection, the flow's template a value per connection)",
        ])
        #expect(flowProblemMessages(profile(auth: #"{"type": "header", "name": "X-Token", "tokenEnv": "T"}"#,
                                            #""headers": {"x-token": "${users.token}"}"#)) == [
            "scenarios[1].headers.x-token: this header and auth (type header) both set the X-Token header",
        ])
        #expect(flowProblemMessages(profile(auth: #"{"type": "query", "name": "token", "tokenEnv": "T"}"#,
                                            #""query": {"token": "${users.token}"}"#)) == [
            "scenarios[1].query.token: this query parameter and auth (type query) both set the token query parameter",
        ])
        // Different names, or no auth: no conflict.
        #expect(flowProblems(profile(auth: #"{"type": "header", "name": "X-Token", "tokenEnv": "T"}"#, header)) == [])
        #expect(flowProblems(profile(auth: #"{"type": "query", "name": "Token", "tokenEnv": "T"}"#, #""query": {"token": "${users.token}"}"#)) == [])
        #expect(flowProblems(flowProfile(data: #""users": {"file": "users.csv"}"#, rawFlow(#"[{"think": "1ms"}]"#, extra: header))) == [])
    }

    @Test("within is required on expect, ping, on, query, subscribe and an awaited ack")
    func missingWithin() {
        #expect(flowProblemMessages(flowProfile(rawFlow(#"[{"name": "e", "expect": {"any": true}}, {"name": "p", "ping": {}}]"#))) == [
            "scenarios[0].steps[0].expect.within: is required",
            "scenarios[0].steps[1].ping.within: is required",
        ])
        #expect(flowProblemMessages(flowProfile(rawFlow(#"[{"name": "s", "emit": {"event": "x", "ack": true}}]"#, extra: #""protocol": "socketio""#))) == [
            "scenarios[0].steps[0].emit.within: is required",
        ])
    }

    @Test("timed steps need a name; names are unique and well formed")
    func names() {
        #expect(flowProblemMessages(flowProfile(rawFlow("""
            [{"expect": {"any": true, "within": "1s"}}, {"group": {"steps": [{"think": "1ms"}]}},
             {"name": "a", "think": "1ms"}, {"name": "a", "ping": {"within": "1s"}}, {"name": "a b", "think": "1ms"}]
            """))) == [
            "scenarios[0].steps[0].name: is required for a timed step (expect)",
            "scenarios[0].steps[1].name: is required for a timed step (group)",
            #"scenarios[0].steps[3].name: "a" names two steps"#,
            #"scenarios[0].steps[4].name: "a b" is not a valid name"#,
        ])
    }

    @Test("unsubscribe names an earlier subscribe step")
    func unsubscribe() {
        #expect(flowProblemMessages(flowProfile(rawFlow(
            #"[{"unsubscribe": "count"}, {"name": "q", "query": {"query": "{a}", "within": "1s"}}, {"unsubscribe": "q"}]"#,
            extra: #""protocol": "graphql-ws""#))) == [
            #"scenarios[0].steps[0].unsubscribe: "count" names no earlier subscribe step"#,
            #"scenarios[0].steps[2].unsubscribe: "q" names no earlier subscribe step"#,
        ])
    }

    @Test("rates and counts out of range never trap: 1e308, -0, huge integers, fractions")
    func ranges() {
        #expect(flowProblemMessages(flowProfile(rawFlow("""
            [{"loop": {"count": 0, "steps": [{"think": "1ms"}]}},
             {"loop": {"count": 1e308, "steps": [{"think": "1ms"}]}},
             {"loop": {"count": 99999999999999999999999, "rate": -0, "steps": [{"think": "1ms"}]}},
             {"loop": {"count": 1.5, "rate": 1e308, "steps": [{"think": "1ms"}]}},
             {"name": "e", "expect": {"any": true, "within": "1s", "skip": 1000001}}]
            """))).map { $0.components(separatedBy: " (")[0] } == [
            "scenarios[0].steps[0].loop.count: 0 is out of range",
            // Beyond Int: not a whole number the reader can hold (the existing integer rule, no trap).
            "scenarios[0].steps[1].loop.count: expected a whole number, found 1e+308",
            "scenarios[0].steps[2].loop.count: expected a whole number, found 1e+23",
            "scenarios[0].steps[2].loop.rate: 0 is out of range",
            "scenarios[0].steps[3].loop.count: expected a whole number, found 1.5",
            "scenarios[0].steps[3].loop.rate: 1e+308 is out of range",
            "scenarios[0].steps[4].expect.skip: 1000001 is out of range",
        ])
    }

    @Test("a total loop rate is divided over the scenario's connections, as a schedule's is")
    func totalRate() throws {
        let text = flowProfile(rawFlow(#"[{"loop": {"rate": 100, "per": "total", "steps": [{"think": "1ms"}]}}]"#, connections: 40))
        let profile = try ProfileDecoder.decode(Array(text.utf8))
        guard case .loop(let loop)? = profile.scenarios[0].websocket.flow?.steps.first?.action else { Issue.record("no loop"); return }
        #expect(loop.ratePerConnection == 2.5 && loop.count == nil && loop.duration == nil)
        #expect(flowProblemMessages(flowProfile(rawFlow(#"[{"loop": {"rate": 200000, "steps": [{"think": "1ms"}]}}]"#))) == [
            "scenarios[0].steps[0].loop.rate: 200000 iterations/s on one connection is beyond what one connection can carry",
        ])
    }

    @Test("close codes a client may send; a reason of at most 123 bytes of UTF-8")
    func close() {
        let reason = String(repeating: "é", count: 62)  // 124 bytes
        #expect(flowProblemMessages(flowProfile(rawFlow("""
            [{"close": {"code": 1001}}, {"close": {"code": 5000}}, {"close": {"reason": "\(reason)"}}, {"close": {"code": 4999}}]
            """))) == [
            "scenarios[0].steps[0].close.code: 1001 is not a code a client may send",
            "scenarios[0].steps[1].close.code: 5000 is out of range",
            "scenarios[0].steps[2].close.reason: is 124 bytes",
        ])
    }

    @Test("a loop, group or then without steps")
    func emptyBodies() {
        #expect(flowProblemMessages(flowProfile(rawFlow(#"[{"loop": {"count": 1}}, {"name": "g", "group": {"steps": []}}]"#))) == [
            "scenarios[0].steps[0].loop.steps: is required",
            "scenarios[0].steps[1].group.steps: must hold at least one step",
        ])
    }

    @Test("flow-only keys on other patterns, and keys a flow refuses, with a hint")
    func patternKeys() {
        #expect(flowProblems(flowProfile(#"{"name": "e", "pattern": "echo", "connections": 1, "steps": []}"#)) == [
            #"scenarios[0].steps: only the flow pattern reads steps (set "pattern": "flow")"#,
        ])
        #expect(flowProblems(flowProfile(rawFlow(#"[{"think": "1ms"}]"#, extra: #""messagesPerConnection": 3"#))) == [
            "scenarios[0].messagesPerConnection: a flow scenario does not read messagesPerConnection (its steps say what it sends and when)",
        ])
        #expect(flowProblemMessages(flowProfile(#"{"name": "f", "pattern": "flow", "connections": 1}"#)) == [
            "scenarios[0].steps: is required",
        ])
    }

    @Test("graphql-ws offers graphql-transport-ws and refuses another subprotocol")
    func graphQLSubprotocol() {
        #expect(flowProblemMessages(flowProfile(rawFlow(#"[{"think": "1ms"}]"#, extra: #""protocol": "graphql-ws", "subprotocols": ["chat"]"#))) == [
            "scenarios[0].subprotocols: graphql-ws speaks graphql-transport-ws only",
        ])
    }

    @Test("matchers and captures: exactly one matcher, groups within the regex, path captures on JSON only")
    func matchers() {
        #expect(flowProblemMessages(flowProfile(rawFlow("""
            [{"name": "a", "expect": {"within": "1s"}},
             {"name": "b", "expect": {"any": true, "text": {"regex": "x"}, "within": "1s"}},
             {"name": "c", "expect": {"text": {"regex": "(x)"}, "capture": {"v": {"group": 2}}, "within": "1s"}},
             {"name": "d", "expect": {"text": {"regex": "x"}, "capture": {"v": "$.a"}, "within": "1s"}},
             {"name": "e", "expect": {"json": [{"path": "$.a", "equals": 1, "exists": true}], "within": "1s"}},
             {"name": "f", "expect": {"any": true, "capture": {"vu": "$.a"}, "within": "1s"}},
             {"name": "g", "expect": {"binary": {"length": {"min": 4}, "prefix": {"hex": "00"}}, "within": "1s"}},
             {"name": "h", "expect": {"binary": {"length": 1, "prefix": {"hex": "0000"}}, "within": "1s"}}]
            """))) == [
            "scenarios[0].steps[0].expect: needs a matcher",
            "scenarios[0].steps[1].expect: has 2 matchers: text, any",
            "scenarios[0].steps[2].expect.capture.v.group: the regex has 1 group",
            "scenarios[0].steps[3].expect.capture.v: a path capture needs JSON messages",
            "scenarios[0].steps[4].expect.json[0]: has 2 tests: equals, exists",
            "scenarios[0].steps[5].expect.capture.vu: vu names a built-in value or a feeder",
            "scenarios[0].steps[6].expect.binary.length.max: is required",
            "scenarios[0].steps[7].expect.binary.prefix: is 2 bytes, longer than the longest length 1",
        ])
    }

    @Test("data sources: file required, format from the extension or given, modes")
    func dataSources() throws {
        #expect(flowProblemMessages(flowProfile(data: """
            "a": {"file": "rows.txt"}, "b": {"mode": "once"}, "c": {"file": "x.csv", "surprise": 1}, "1x": {"file": "y.csv"}
            """, rawFlow(#"[{"think": "1ms"}]"#))) == [
            "data.a.format: is required: rows.txt is neither .csv nor .jsonl",
            "data.b.file: is required",
            #"data.b.mode: "once" is not one of "sequential", "random", "unique""#,
            "data.c.surprise: unknown key",
            "data.1x: is not a feeder name",
        ])
        let profile = try ProfileDecoder.decode(Array(flowProfile(data: #""a": {"file": "r.NDJSON", "mode": "random"}, "b": {"file": "r", "format": "csv"}"#,
                                                                   rawFlow(#"[{"think": "1ms"}]"#)).utf8))
        #expect(profile.data.map(\.format) == [.jsonLines, .csv])
        #expect(profile.data.map(\.mode) == [.random, .sequential])
    }
}

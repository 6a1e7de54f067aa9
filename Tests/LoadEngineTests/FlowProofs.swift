import EmbeddedServer
import Flow
import JSON
import LoadEngine
import Profile
import Reporting
import Testing
import TestSupport
import WebSocket

extension FaultSwitches: FlowFaults {
    func keepsExpectTimerAfterMatch() -> Bool { keepExpectTimer }
    func sendsUndefinedTemplates() -> Bool { sendUndefinedTemplates }
    func scansInboxAfterClose() -> Bool { runStepsAfterClose }
    func reusesAckIDs() -> Bool { reuseAckIDs }
    func ignoresEngineIOPings() -> Bool { ignoreEngineIOPings }
    func endsSubscriptionsTwice() -> Bool { endSubscriptionsTwice }
}

/// The flow checkers' proofs and the runs they use (``RunShape/flowEcho``, ``RunShape/flowDropped``).
enum FlowProofs {
    typealias B = FlowBuild

    static let all: [CheckerProof] = [
        .init(.flowExpectResolvedOnce, "an expect's timer fires after its match, into the think that follows",
              \.keepExpectTimer, on: .flowEcho, details: ["resolved again after it had ended"], count: 2),
        .init(.flowVariablesDefined, "a message naming an undefined variable goes out without it",
              \.sendUndefinedTemplates, on: .flowEcho, details: ["built with an undefined variable"], count: 2),
        .init(.flowNothingAfterClose, "the steps run on after the connection closed, on the buffered reply",
              \.runStepsAfterClose, on: .flowDropped, clean: .flowEcho, details: ["after the connection closed"],
              count: 2),
        .init(.flowAckAnsweredOnce, "every emit asks for ack id 0", \.reuseAckIDs, on: .socketIOChat,
              details: ["asked for twice on one connection", "answered twice, or never asked for"]),
        .init(.socketIOHeartbeatHeld, "the server's Engine.IO pings go unanswered (it drops the client)",
              \.ignoreEngineIOPings, on: .socketIOChat, details: ["unanswered"]),
        .init(.graphQLSubscriptionEndsOnce, "unsubscribe sends complete for a subscription the server completed",
              \.endSubscriptionsTwice, on: .graphQLSubscriptions, details: ["operation count ended twice"], count: 2),
    ]

    static func run(_ shape: RunShape, faults: FaultSwitches) async throws -> RunResult {
        switch shape {
        case .socketIOChat:
            let server = try startPythonPeer("socketio_server.py", arguments: ["--ping-interval", "1", "--ping-timeout", "1"])
            defer { server.process.stop() }
            func emit(_ name: String) -> String {
                #"{"name": "\#(name)", "emit": {"event": "echo", "args": [{"n": 1}], "ack": true, "within": "5s"}}"#
            }
            return try await LoadRun(profile: try profile("""
                {"version": 1, "name": "sio", "target": "ws://127.0.0.1:\(server.port)", "duration": "30s", "seed": 2,
                 "scenarios": [{"name": "chat", "pattern": "flow", "protocol": "socketio", "connections": 2,
                                "steps": [\(emit("first")), \(emit("second")), {"think": "3s"}]}]}
                """), faults: faults).run()
        case .graphQLSubscriptions:
            let server = try startPythonPeer("graphql_server.py")
            defer { server.process.stop() }
            return try await LoadRun(profile: try profile("""
                {"version": 1, "name": "gql", "target": "ws://127.0.0.1:\(server.port)", "duration": "30s", "seed": 2,
                 "scenarios": [{"name": "subs", "pattern": "flow", "protocol": "graphql-ws", "path": "/graphql",
                   "connections": 2, "steps": [
                     {"name": "hello", "query": {"query": "query { hello }", "within": "10s"}},
                     {"name": "count", "subscribe": {"query": "subscription { count(to: 3, everyMs: 10) }", "within": "10s"}},
                     {"unsubscribe": "count"}]}]}
                """), faults: faults).run()
        case .flowDropped:
            let flow = B.scenario([
                B.send(["id": 1]),
                B.step(.think(.fixed(.milliseconds(400)))),  // the server drops the connection at 50 ms meanwhile
                B.step(.expect(B.expectation("id", equals: 1)), name: "late"),
            ])
            return try await withServer(ServerConfiguration(chaos: ChaosOptions(closeAfter: .milliseconds(50), closeMode: .drop))) {
                server in
                var profile = try B.profile(flow, connections: 2, duration: "20s")
                profile.target = .url(try WebSocketURL(server.url))
                return try await LoadRun(profile: profile, faults: faults).run()
            }
        default:
            let flow = B.scenario([
                B.send(.object([(key: "id", value: .string(Template(parts: [.value(.vu)])))])),
                B.step(.expect(FlowExpectation(matcher: .any, within: .milliseconds(150))), name: "reply"),
                B.step(.think(.fixed(.milliseconds(400)))),
                B.sendText(Template(parts: [.literal("x"), .value(.variable("missing"))])),
            ])
            return try await LoadRun(profile: try B.profile(flow, connections: 2, duration: "20s"), faults: faults).hostedRun()
        }
    }
}


import EmbeddedServer
import Flow
import JSON
import LoadEngine
import Profile
import Reporting
import Testing
import WebSocket

extension FaultSwitches: FlowFaults {
    func keepsExpectTimerAfterMatch() -> Bool { keepExpectTimer }
    func sendsUndefinedTemplates() -> Bool { sendUndefinedTemplates }
    func scansInboxAfterClose() -> Bool { runStepsAfterClose }
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
    ]

    static func run(_ shape: RunShape, faults: FaultSwitches) async throws -> RunResult {
        switch shape {
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

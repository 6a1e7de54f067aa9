import LoadEngine
import Profile
import Reporting
import Testing

/// Every checker of the oracle can fire: a fault that makes the client (or the server) really misbehave
/// makes that checker, and only the checkers the misbehaviour touches, report violations with examples;
/// the same run without the fault reports none and did check. A checker replaced by `true` fails here.
@Suite("Every oracle checker fires on its fault", .serialized, .timeLimit(.minutes(3)))
struct CheckerProofTests {
    @Test("the fault makes its checker report violations with examples", arguments: CheckerProof.all)
    func fires(_ proof: CheckerProof) async throws {
        let result = try await proof.faulty.run(faults: proof.faults)
        let name = proof.invariant.rawValue
        let found = violations(result, proof.invariant)
        #expect(found > 0, "\(name): no violations under its fault (checked \(checks(result, proof.invariant)))")
        if let count = proof.count { #expect(found == count, "\(name): \(result.invariants.examples[name] ?? [])") }
        let examples = try #require(result.invariants.examples[name], "\(name): violations without an example")
        #expect(!examples.isEmpty && examples.count <= InvariantReport.maximumExamples)
        for detail in proof.details {
            #expect(examples.contains { $0.detail.contains(detail) }, "\(name): no example says \"\(detail)\": \(examples)")
        }
        for example in examples where example.actor >= 0 {
            // An actor's example names the actor's scenario and carries its recent history.
            #expect(!example.scenario.isEmpty && !example.history.isEmpty, "\(name): \(example)")
        }
        let others = violatedInvariants(result).subtracting([proof.invariant]).subtracting(proof.alsoViolated)
        #expect(others.isEmpty, "the fault also tripped \(others.map(\.rawValue).sorted()): \(result.invariants)")
        #expect(!result.invariantsHeld)
        try proof.expectations(result)
    }

    /// The clean storm has a test of its own (``InvariantTests``), which checks its proofs' invariants too.
    static let cleanShapes = RunShape.allCases.filter { shape in
        shape != .storm && CheckerProof.all.contains { $0.cleanShape == shape }
    }

    @Test("the same run without the fault reports nothing and checks the invariant", arguments: cleanShapes)
    func clean(_ shape: RunShape) async throws {
        let result = try await shape.run()
        let proven = CheckerProof.all.filter { $0.cleanShape == shape }.map(\.invariant)
        expectHeld(result, checking: proven)
        #expect(result.unfinishedConnections == 0 && result.liveHandlesAfterStop == 0 && result.waitingTasksAfterStop == 0)
        switch shape {
        case .refused:
            #expect(result.total.counter("ws.connect_attempts") == 6, "1 connect and 2 reconnects each")
            #expect(checks(result, .maximumAttempts) == 4)
            #expect(result.total.errors["reconnect_gave_up"] == 2)
        case .echoFive:
            #expect(result.total.counter("ws.messages_received") == 15)
            #expect(checks(result, .nothingAfterDisconnect) == 3 && checks(result, .connectedAfterHandshake) >= 3)
        case .echoTen:
            #expect(result.total.counter("ws.messages_received") == 30 && checks(result, .messageSequence) == 30)
        case .push:
            #expect(checks(result, .messageSequence) >= 30 && result.total.counter("ws.messages_lost") == 0)
        case .idleStopped:
            #expect(checks(result, .stopWithinBound) == 3)
        case .echoStopped:
            #expect(checks(result, .oneLiveConnection) == 4 && checks(result, .noReconnectAfterIntentional) == 4)
        case .graphQLSubscriptions:
            // Per connection: the query's next and complete, the subscription's 3 nexts and complete.
            #expect(checks(result, .graphQLSubscriptionEndsOnce) == 12 && result.total.errors.isEmpty, "\(result.total.errors)")
        case .interruptedDownloads:
            #expect(checks(result, .transferDigest) == 4 && result.total.count("http.resumes") == 4)
        default:
            break
        }
    }

    @Test("every invariant has a proof")
    func everyInvariantIsProven() {
        let proven = Set(CheckerProof.all.map(\.invariant))
        #expect(proven == Set(Invariant.allCases), "without a proof: \(Set(Invariant.allCases).subtracting(proven))")
        #expect(CheckerProof.all.filter { $0.faults == FaultSwitches() }.map(\.invariant) == [.stopWithinBound],
                "only the stalled server's proof needs no switch")
    }
}

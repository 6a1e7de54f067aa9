import EmbeddedServer
import Foundation
import Glibc
import LoadEngine
import Profile
import Reporting
import Testing
import TestSupport

/// A storm against a server that drops every connection 50 ms after its handshake, with a policy whose
/// delays are exact (no jitter), so every reconnect checker has something to check. Even a connection that
/// opens late (other suites loading the cores) goes through a few drop-and-reconnect cycles.
func stormRun(faults: FaultSwitches = FaultSwitches(), connections: Int = 6, duration: String = "2500ms") async throws -> RunResult {
    try await withServer(ServerConfiguration(chaos: ChaosOptions(closeAfter: .milliseconds(50), closeMode: .drop))) { server in
        try await LoadRun(profile: try profile("""
            {"version": 1, "name": "oracle", "target": "\(server.url)", "duration": "\(duration)", "seed": 8,
             "scenarios": [{"name": "storm", "pattern": "echo", "connections": \(connections),
                            "schedule": {"model": "closed", "thinkTime": "5ms"},
                            "reconnect": {"initial": "100ms", "max": "1s", "multiplier": 2, "jitter": "none", "maxAttempts": 5}}]}
            """), faults: faults).run()
    }
}

/// A run of `scenarios` (JSON scenario objects) against an embedded server configured with `server`.
func scenarioRun(
    _ scenarios: String, duration: String, gracefulStop: String = "5s", faults: FaultSwitches = FaultSwitches(),
    server: ServerConfiguration = ServerConfiguration()
) async throws -> RunResult {
    try await withServer(server) { server in
        try await LoadRun(profile: try profile("""
            {"version": 1, "name": "oracle", "target": "\(server.url)", "duration": "\(duration)",
             "gracefulStop": "\(gracefulStop)", "seed": 3, "scenarios": [\(scenarios)]}
            """), faults: faults).run()
    }
}

/// A run whose every connect is refused: the target is a loopback port held by a socket that is bound but
/// not listening (so nothing else can take the port while the run goes).
func refusedRun(_ scenario: String, faults: FaultSwitches = FaultSwitches()) async throws -> RunResult {
    let reservation = try BoundLoopbackPort()
    defer { reservation.close() }
    let port = reservation.port
    return try await LoadRun(profile: try profile("""
        {"version": 1, "name": "refused", "target": "ws://127.0.0.1:\(port)/", "duration": "30s", "seed": 3,
         "scenarios": [\(scenario)]}
        """), faults: faults).run()
}

func violations(_ result: RunResult, _ invariant: Invariant) -> UInt64 {
    result.invariants.violations[invariant.rawValue] ?? 0
}

func checks(_ result: RunResult, _ invariant: Invariant) -> UInt64 {
    result.invariants.checked[invariant.rawValue] ?? 0
}

/// The invariants `result` found violated.
func violatedInvariants(_ result: RunResult) -> Set<Invariant> {
    Set(Invariant.allCases.filter { violations(result, $0) > 0 })
}

/// Expects a run in which nothing went wrong: no invariant violated, each of `invariants` checked.
func expectHeld(_ result: RunResult, checking invariants: [Invariant], sourceLocation: SourceLocation = #_sourceLocation) {
    for invariant in Invariant.allCases {
        #expect(violations(result, invariant) == 0, "\(invariant.rawValue) violated in a clean run: \(result.invariants.examples[invariant.rawValue] ?? [])",
                sourceLocation: sourceLocation)
    }
    for invariant in invariants {
        #expect(checks(result, invariant) > 0, "\(invariant.rawValue) was never checked", sourceLocation: sourceLocation)
    }
    #expect(result.invariantsHeld, sourceLocation: sourceLocation)
}

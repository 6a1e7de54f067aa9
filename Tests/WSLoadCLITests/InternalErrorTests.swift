import LoadEngine
import Profile
import Reporting
import Runtime
import Testing
@testable import WSLoadCLI

/// Exit 70 is for bugs: a run that fails for a documented reason exits 1, and anything else it throws is wsload's
/// own fault (README, "Exit codes"). No bug is known that throws one, so the mapping is checked directly.
@Suite("wsload run: internal errors", .timeLimit(.minutes(1)))
struct InternalErrorTests {
    private struct Unexpected: Error {}

    @Test("documented failures exit 1; an error of no documented kind exits 70")
    func mapping() {
        #expect(RunCommand.exitCode(forFailedRun: LoadRunError(description: "auth.tokenEnv: not set")) == .failure)
        #expect(RunCommand.exitCode(forFailedRun: RuntimeError(.tooManyOpenFiles, function: "uv_tcp_init")) == .failure)
        #expect(RunCommand.exitCode(forFailedRun: Unexpected()) == .internalError)
        #expect(ExitCode.internalError.rawValue == 70)
    }
}

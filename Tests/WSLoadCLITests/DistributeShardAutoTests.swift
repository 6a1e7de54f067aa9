import Foundation
import JSON
import Testing
import TestSupport

/// The Slurm and Kubernetes variables cleared from a child's environment, so only what a test sets is seen.
private let engineVariables: [String: String?] = [
    "SLURM_ARRAY_TASK_ID": nil, "SLURM_ARRAY_TASK_MIN": nil, "SLURM_ARRAY_TASK_MAX": nil, "SLURM_ARRAY_TASK_COUNT": nil,
    "SLURM_ARRAY_TASK_STEP": nil, "SLURM_JOB_ID": nil, "JOB_COMPLETION_INDEX": nil, "WSLOAD_SHARDS": nil,
]

private func environment(_ values: [String: String]) -> [String: String?] {
    engineVariables.merging(values.mapValues { Optional($0) }) { $1 }
}

@Suite("wsload run --shard auto", .serialized, .timeLimit(.minutes(3)))
struct DistributeShardAutoTests {
    @Test("a Slurm array task and an Indexed Job pod run their slice; the report says which")
    func runsTheSlice() async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(name: "auto", duration: "1s", connections: 4, gracefulStop: "2s"))
        let cases: [([String: String], [String], String)] = [
            (["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "1", "SLURM_ARRAY_TASK_COUNT": "2",
              "SLURM_ARRAY_TASK_STEP": "1"], ["--shards", "2"], "2/2"),
            (["JOB_COMPLETION_INDEX": "0", "WSLOAD_SHARDS": "2"], [], "1/2"),
        ]
        for (index, (variables, extra, expected)) in cases.enumerated() {
            let out = scratch.path("r\(index).json")
            let process = try WSLoadProcess(["run", profile, "--shard", "auto", "--out", out, "--quiet"] + extra,
                                            environment: environment(variables))
            let status = try await process.waitForExit(within: .seconds(90))
            #expect(status == 0, "\(process.errors)")
            let run = try scratch.json("r\(index).json").objectValue?["run"]?.objectValue
            #expect(run?["shard"]?.stringValue == expected)
        }
    }

    @Test("a missing or malformed environment exits 64 naming the variable, before anything runs", arguments: [
        ([String: String](), [String](), "--shard auto: neither SLURM_ARRAY_TASK_ID"),
        (["SLURM_ARRAY_TASK_ID": "x1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "1", "SLURM_ARRAY_TASK_COUNT": "2",
          "SLURM_ARRAY_TASK_STEP": "1"], [], "SLURM_ARRAY_TASK_ID=\"x1\" is not a whole number"),
        (["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "1", "SLURM_ARRAY_TASK_COUNT": "2",
          "SLURM_ARRAY_TASK_STEP": "1"], ["--shards", "3"], "the Slurm array has 2 tasks"),
        (["JOB_COMPLETION_INDEX": "2"], [], "JOB_COMPLETION_INDEX is set but not the shard count"),
        (["JOB_COMPLETION_INDEX": "2"], ["--shards", "2"], "JOB_COMPLETION_INDEX=2 is not below the shard count 2 (--shards)"),
        ([:], ["--shards", "2"], "--shards: only with --shard auto"),
    ])
    func refusals(variables: [String: String], extra: [String], message: String) async throws {
        let scratch = try RunScratch()
        let profile = try scratch.write("p.json", echoProfile(name: "auto", duration: "1s"))
        let shard = extra == ["--shards", "2"] && variables.isEmpty ? [] : ["--shard", "auto"]
        let process = try WSLoadProcess(["run", profile, "--out", scratch.path("r.json")] + shard + extra,
                                        environment: environment(variables))
        #expect(try await process.waitForExit() == 64)
        #expect(process.errors.contains("Error: " + message) || process.errors.contains(message), "\(process.errors)")
        #expect(process.errors.contains("See 'wsload run --help'."))
        #expect(try scratch.files().filter { $0.hasPrefix("r.json") }.isEmpty)
    }
}

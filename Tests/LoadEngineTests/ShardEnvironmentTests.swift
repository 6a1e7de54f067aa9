import Profile
import Testing

/// A Slurm array task's variables as sbatch sets them (measured on this box: `--array=0-3` gives MIN=0 MAX=3 COUNT=4
/// STEP=1; `--array=0-6:3` MIN=0 MAX=6 COUNT=3 STEP=3; `--array=1,5,6` MIN=1 MAX=6 COUNT=3 STEP=1).
private func slurm(id: String, minimum: String = "0", maximum: String = "3", count: String = "4", step: String = "1")
    -> [String: String]
{
    ["SLURM_ARRAY_TASK_ID": id, "SLURM_ARRAY_TASK_MIN": minimum, "SLURM_ARRAY_TASK_MAX": maximum,
     "SLURM_ARRAY_TASK_COUNT": count, "SLURM_ARRAY_TASK_STEP": step, "SLURM_JOB_ID": "17", "PATH": "/usr/bin"]
}

private func refusal(_ environment: [String: String], shards: Int? = nil) -> String? {
    do {
        _ = try Shard(environment: environment, shards: shards)
        return nil
    } catch {
        return error.description
    }
}

@Suite("--shard auto: the shard from the environment", .timeLimit(.minutes(1)))
struct ShardEnvironmentTests {
    @Test("every task of a Slurm array 0-(N-1) is its own shard of N")
    func slurmArray() throws {
        for id in 0..<4 {
            #expect(try Shard(environment: slurm(id: "\(id)"), shards: nil) == Shard(index: id, count: 4))
        }
        // The count may be given too (the generated sbatch does): it must agree.
        #expect(try Shard(environment: slurm(id: "2"), shards: 4) == Shard(index: 2, count: 4))
        #expect(try Shard(environment: slurm(id: "0", maximum: "0", count: "1"), shards: nil) == Shard(index: 0, count: 1))
    }

    @Test("a stepped or offset uniform array: index (ID-MIN)/STEP")
    func steppedArray() throws {
        // --array=0-6:3 → IDs 0, 3, 6.
        for (id, index) in [(0, 0), (3, 1), (6, 2)] {
            #expect(try Shard(environment: slurm(id: "\(id)", maximum: "6", count: "3", step: "3"), shards: nil)
                == Shard(index: index, count: 3))
        }
        // --array=10-13.
        #expect(try Shard(environment: slurm(id: "12", minimum: "10", maximum: "13"), shards: nil) == Shard(index: 2, count: 4))
    }

    @Test("a non-uniform array (--array=1,5,6) is refused: its tasks are not slices 0, 1, 2")
    func nonUniformArray() {
        let message = refusal(slurm(id: "5", minimum: "1", maximum: "6", count: "3", step: "1"))
        #expect(message?.contains("SLURM_ARRAY_TASK_COUNT=3") == true, "\(message ?? "accepted")")
        #expect(message?.contains("span 6 indexes") == true)
        #expect(message?.contains("not a uniform range") == true)
    }

    @Test("an ID off the grid or outside MIN...MAX is refused")
    func offGrid() {
        #expect(refusal(slurm(id: "4", maximum: "6", count: "3", step: "3"))?.contains("SLURM_ARRAY_TASK_ID=4 is not one of") == true)
        #expect(refusal(slurm(id: "4"))?.contains("SLURM_ARRAY_TASK_ID=4 is not one of the array's indexes (0 to 3") == true)
        #expect(refusal(slurm(id: "0", minimum: "1", maximum: "4"))?.contains("SLURM_ARRAY_TASK_ID=0") == true)
    }

    @Test("a missing companion variable is named")
    func missingVariable() {
        for name in ["SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_STEP"] {
            var environment = slurm(id: "1")
            environment[name] = nil
            #expect(refusal(environment) == "SLURM_ARRAY_TASK_ID is set but \(name) is not")
        }
    }

    @Test("malformed values are refused, naming the variable and the value", arguments: [
        "", " 1", "1 ", "+1", "-1", "1.0", "0x1", "１", "1e3", "9999999999", "99999999999999999999999", "1\n", "one",
    ])
    func malformed(value: String) {
        for name in ["SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_COUNT",
                     "SLURM_ARRAY_TASK_STEP"] {
            var environment = slurm(id: "1")
            environment[name] = value
            let message = refusal(environment)
            #expect(message == "\(name)=\(value.debugDescription) is not a whole number (decimal digits only)", "\(name)")
        }
        var pod = ["JOB_COMPLETION_INDEX": value, "WSLOAD_SHARDS": "4"]
        #expect(refusal(pod)?.hasPrefix("JOB_COMPLETION_INDEX=\(value.debugDescription)") == true)
        pod = ["JOB_COMPLETION_INDEX": "1", "WSLOAD_SHARDS": value]
        #expect(refusal(pod)?.hasPrefix("WSLOAD_SHARDS=\(value.debugDescription)") == true)
    }

    @Test("a huge value is cut in the message")
    func hugeValue() {
        let message = refusal(["JOB_COMPLETION_INDEX": String(repeating: "x", count: 100_000), "WSLOAD_SHARDS": "2"])
        #expect(message != nil && message!.count < 200, "\(message?.count ?? 0) characters")
    }

    @Test("arithmetic limits: a zero step, MIN above MAX, more than 1000 tasks")
    func limits() {
        #expect(refusal(slurm(id: "0", step: "0")) == "SLURM_ARRAY_TASK_STEP=0: a step must be at least 1")
        #expect(refusal(slurm(id: "3", minimum: "3", maximum: "0"))?.contains("SLURM_ARRAY_TASK_MIN=3 is above") == true)
        #expect(refusal(slurm(id: "0", maximum: "1000", count: "1001")) == "SLURM_ARRAY_TASK_COUNT=1001: a run has 1 to 1000 shards")
        #expect(refusal(slurm(id: "0", maximum: "999999998", count: "999999999"))?.contains("1 to 1000 shards") == true)
        #expect(refusal(slurm(id: "0", count: "0"))?.contains("SLURM_ARRAY_TASK_COUNT=0") == true)
    }

    @Test("a count given with a Slurm array must equal its COUNT (a resubmitted part is not a whole run)")
    func slurmCountMismatch() {
        // sbatch --array=2 wsload.sbatch, to rerun one shard: a one-task array.
        let part = slurm(id: "2", minimum: "2", maximum: "2", count: "1")
        #expect(refusal(part, shards: 4) == "the Slurm array has 1 tasks (SLURM_ARRAY_TASK_COUNT) but --shards says 4 shards")
        var environment = slurm(id: "1")
        environment["WSLOAD_SHARDS"] = "3"
        #expect(refusal(environment) == "the Slurm array has 4 tasks (SLURM_ARRAY_TASK_COUNT) but WSLOAD_SHARDS says 3 shards")
    }

    @Test("a Kubernetes Indexed Job pod: JOB_COMPLETION_INDEX with --shards or WSLOAD_SHARDS")
    func indexedJob() throws {
        #expect(try Shard(environment: ["JOB_COMPLETION_INDEX": "0"], shards: 4) == Shard(index: 0, count: 4))
        #expect(try Shard(environment: ["JOB_COMPLETION_INDEX": "3", "WSLOAD_SHARDS": "4"], shards: nil) == Shard(index: 3, count: 4))
        #expect(try Shard(environment: ["JOB_COMPLETION_INDEX": "3", "WSLOAD_SHARDS": "4"], shards: 4) == Shard(index: 3, count: 4))
        #expect(refusal(["JOB_COMPLETION_INDEX": "1"])?.hasPrefix("JOB_COMPLETION_INDEX is set but not the shard count") == true)
        #expect(refusal(["JOB_COMPLETION_INDEX": "4", "WSLOAD_SHARDS": "4"])
            == "JOB_COMPLETION_INDEX=4 is not below the shard count 4 (WSLOAD_SHARDS)")
        #expect(refusal(["JOB_COMPLETION_INDEX": "4"], shards: 4) == "JOB_COMPLETION_INDEX=4 is not below the shard count 4 (--shards)")
        #expect(refusal(["JOB_COMPLETION_INDEX": "1", "WSLOAD_SHARDS": "3"], shards: 4) == "--shards 4 and WSLOAD_SHARDS=3 disagree")
        #expect(refusal(["JOB_COMPLETION_INDEX": "0", "WSLOAD_SHARDS": "0"]) == "WSLOAD_SHARDS=0: a run has 1 to 1000 shards")
        #expect(refusal(["JOB_COMPLETION_INDEX": "0", "WSLOAD_SHARDS": "1001"]) == "WSLOAD_SHARDS=1001: a run has 1 to 1000 shards")
        #expect(refusal(["JOB_COMPLETION_INDEX": "0"], shards: 0) == "--shards 0: a run has 1 to 1000 shards")
    }

    @Test("neither engine, or both, is refused naming the variables")
    func noEngine() {
        let neither = refusal(["PATH": "/usr/bin", "WSLOAD_SHARDS": "4"])
        #expect(neither == "neither SLURM_ARRAY_TASK_ID (a Slurm job array task) nor JOB_COMPLETION_INDEX (a Kubernetes "
            + "Indexed Job pod) is set; elsewhere give --shard i/n")
        // A Slurm job that is not an array says so.
        #expect(refusal(["SLURM_JOB_ID": "12"])?.contains("SLURM_JOB_ID is: a Slurm job that is not an array") == true)
        var both = slurm(id: "1")
        both["JOB_COMPLETION_INDEX"] = "1"
        #expect(refusal(both)?.hasPrefix("both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are set") == true)
    }
}

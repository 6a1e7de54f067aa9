import Crypto
/// One of `count` equal, deterministic slices of a profile (`--shard 2/4`, 1-based as written): run
/// them in `count` processes (on one box, past the per-process file limit, or on several machines) and
/// merge their reports into the whole run.
package struct Shard: Sendable, Hashable, CustomStringConvertible {
    /// 0-based.
    package var index: Int
    package var count: Int

    package init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// Parses `i/n` with 1 ≤ i ≤ n ≤ 1000.
    package init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let position = Int(parts[0]), let count = Int(parts[1]),
            (1...1000).contains(count), (1...count).contains(position)
        else { return nil }
        self.init(index: position - 1, count: count)
    }

    package var description: String { "\(index + 1)/\(count)" }

    /// This slice's share of `total`: the slices' shares differ by at most one and sum to `total`.
    package func share(of total: Int) -> Int {
        total * (index + 1) / count - total * index / count
    }

    /// The profile this slice runs: every scenario's connections and stage targets are this slice's share
    /// (per-connection rates stay; a total rate was divided over all connections, so the slices' rates sum
    /// to it), and the seed is derived from the profile's and the slice.
    package func slice(_ profile: Profile, seed: UInt64) -> (profile: Profile, seed: UInt64) {
        var sliced = profile
        for index in sliced.scenarios.indices {
            var websocket = sliced.scenarios[index].websocket
            websocket.connections = share(of: websocket.connections)
            websocket.stages = websocket.stages.map { .init(target: share(of: $0.target), duration: $0.duration) }
            sliced.scenarios[index].websocket = websocket
        }
        // A different, well-mixed seed per slice, the same every time.
        var mixer = SeededRandomNumberGenerator(seed: seed &+ UInt64(index))
        return (sliced, mixer.next())
    }
}

extension Shard {
    /// The most shards a run splits into (`--shard i/n`, `--shards`, a Slurm array, an Indexed Job).
    package static let maximumCount = 1000

    /// Why `--shard auto` could not tell this process's shard from its environment; names the variable.
    package struct EnvironmentError: Error, Equatable, CustomStringConvertible {
        package var description: String
        init(_ description: String) { self.description = description }
    }

    /// The variables `--shard auto` reads: Slurm's job array task variables (sbatch(1), OUTPUT ENVIRONMENT
    /// VARIABLES), Kubernetes' Indexed Job index (the control plane sets it in every pod), and the shard count a
    /// manifest gives the pods (which know only their index).
    package enum Variable {
        package static let slurmTaskID = "SLURM_ARRAY_TASK_ID"
        package static let slurmTaskMinimum = "SLURM_ARRAY_TASK_MIN"
        package static let slurmTaskMaximum = "SLURM_ARRAY_TASK_MAX"
        package static let slurmTaskCount = "SLURM_ARRAY_TASK_COUNT"
        package static let slurmTaskStep = "SLURM_ARRAY_TASK_STEP"
        package static let slurmJobID = "SLURM_JOB_ID"
        package static let completionIndex = "JOB_COMPLETION_INDEX"
        package static let shardCount = "WSLOAD_SHARDS"
    }

    /// The shard of this process from the engine that started it (`--shard auto`), `shards` being `--shards N`.
    ///
    /// A Slurm job array task is shard (ID − MIN) / STEP of COUNT; the array must be a uniform range
    /// ((MAX − MIN) / STEP + 1 = COUNT: `--array=1,5,6` is refused, its tasks would not be the slices 0, 1, 2) and
    /// the ID on its grid. A Kubernetes Indexed Job pod is shard JOB_COMPLETION_INDEX (0-based) of `shards` or
    /// `WSLOAD_SHARDS`. A count given both ways must agree, and with Slurm it must equal COUNT (so a resubmitted part
    /// of the array is not mistaken for a whole run). Values are parsed strictly (decimal digits only); any doubt
    /// (neither engine, both, a variable missing or malformed) throws naming the variable.
    package init(environment: [String: String], shards: Int?) throws(EnvironmentError) {
        let count = try Self.requestedCount(environment: environment, shards: shards)
        let slurm = environment[Variable.slurmTaskID]
        let kubernetes = environment[Variable.completionIndex]
        switch (slurm, kubernetes) {
        case (nil, nil):
            var message = "neither \(Variable.slurmTaskID) (a Slurm job array task) nor \(Variable.completionIndex) "
                + "(a Kubernetes Indexed Job pod) is set"
            if environment[Variable.slurmJobID] != nil {
                message += "; \(Variable.slurmJobID) is: a Slurm job that is not an array (submit it with --array=0-N)"
            }
            throw EnvironmentError(message + "; elsewhere give --shard i/n")
        case (.some, .some):
            throw EnvironmentError("both \(Variable.slurmTaskID) and \(Variable.completionIndex) are set, so the engine is "
                + "unclear; give --shard i/n")
        case (.some(let id), nil):
            self = try Self.slurmShard(id: id, environment: environment, requested: count)
        case (nil, .some(let index)):
            guard let count else {
                throw EnvironmentError("\(Variable.completionIndex) is set but not the shard count (an Indexed Job's pods "
                    + "know only their index): give --shards N or set \(Variable.shardCount)")
            }
            let position = try Self.number(index, Variable.completionIndex)
            guard position < count.value else {
                throw EnvironmentError("\(Variable.completionIndex)=\(position) is not below the shard count \(count.value) "
                    + "(\(count.source))")
            }
            self.init(index: position, count: count.value)
        }
    }

    private static func slurmShard(id text: String, environment: [String: String], requested: (value: Int, source: String)?)
        throws(EnvironmentError) -> Shard
    {
        func value(_ name: String) throws(EnvironmentError) -> Int {
            guard let text = environment[name] else {
                throw EnvironmentError("\(Variable.slurmTaskID) is set but \(name) is not")
            }
            return try number(text, name)
        }
        let id = try number(text, Variable.slurmTaskID)
        let minimum = try value(Variable.slurmTaskMinimum)
        let maximum = try value(Variable.slurmTaskMaximum)
        let count = try value(Variable.slurmTaskCount)
        let step = try value(Variable.slurmTaskStep)
        guard step > 0 else { throw EnvironmentError("\(Variable.slurmTaskStep)=0: a step must be at least 1") }
        guard minimum <= maximum else {
            throw EnvironmentError("\(Variable.slurmTaskMinimum)=\(minimum) is above \(Variable.slurmTaskMaximum)=\(maximum)")
        }
        guard (1...maximumCount).contains(count) else {
            throw EnvironmentError("\(Variable.slurmTaskCount)=\(count): a run has 1 to \(maximumCount) shards")
        }
        // Digits only, at most 9 each: none of this arithmetic can overflow.
        let spanned = (maximum - minimum) / step + 1
        guard spanned == count else {
            throw EnvironmentError("\(Variable.slurmTaskCount)=\(count), but \(Variable.slurmTaskMinimum)=\(minimum), "
                + "\(Variable.slurmTaskMaximum)=\(maximum) and \(Variable.slurmTaskStep)=\(step) span \(spanned) indexes: "
                + "the array is not a uniform range (submit it as --array=0-\(count - 1))")
        }
        guard (minimum...maximum).contains(id), (id - minimum) % step == 0 else {
            throw EnvironmentError("\(Variable.slurmTaskID)=\(id) is not one of the array's indexes (\(minimum) to \(maximum) "
                + "in steps of \(step))")
        }
        if let requested, requested.value != count {
            throw EnvironmentError("the Slurm array has \(count) tasks (\(Variable.slurmTaskCount)) but \(requested.source) "
                + "says \(requested.value) shards")
        }
        return Shard(index: (id - minimum) / step, count: count)
    }

    /// The count `--shards` or `WSLOAD_SHARDS` gives, with where it came from; both given must agree.
    private static func requestedCount(environment: [String: String], shards: Int?) throws(EnvironmentError)
        -> (value: Int, source: String)?
    {
        if let shards, !(1...maximumCount).contains(shards) {
            throw EnvironmentError("--shards \(shards): a run has 1 to \(maximumCount) shards")
        }
        guard let text = environment[Variable.shardCount] else { return shards.map { ($0, "--shards") } }
        let fromEnvironment = try number(text, Variable.shardCount)
        guard (1...maximumCount).contains(fromEnvironment) else {
            throw EnvironmentError("\(Variable.shardCount)=\(fromEnvironment): a run has 1 to \(maximumCount) shards")
        }
        if let shards, shards != fromEnvironment {
            throw EnvironmentError("--shards \(shards) and \(Variable.shardCount)=\(fromEnvironment) disagree")
        }
        return (fromEnvironment, shards == nil ? Variable.shardCount : "--shards")
    }

    /// A variable's value as a whole number: 1 to 9 decimal digits, nothing else (no sign, no spaces).
    private static func number(_ text: String, _ name: String) throws(EnvironmentError) -> Int {
        guard (1...9).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(text)
        else {
            let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
            throw EnvironmentError("\(name)=\(shown.debugDescription) is not a whole number (decimal digits only)")
        }
        return value
    }
}

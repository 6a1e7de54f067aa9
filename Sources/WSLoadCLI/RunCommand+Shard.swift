import Foundation
import Profile

extension RunCommand {
    /// `--shard i/n`, or `--shard auto`: the slice from the engine that started this process (a Slurm job array
    /// task, a Kubernetes Indexed Job pod), `shards` being `--shards N`. A malformed or missing variable is a usage
    /// error naming it (exit 64).
    static func shard(_ text: String, shards: Int?, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(UsageError) -> Shard
    {
        guard text == "auto" else {
            guard let parsed = Shard(parsing: text) else {
                throw UsageError("--shard: \"\(text)\" is not i/n with 1 ≤ i ≤ n ≤ \(Shard.maximumCount), or auto")
            }
            guard shards == nil else { throw UsageError("--shards: only with --shard auto (--shard i/n gives the count)") }
            return parsed
        }
        do {
            return try Shard(environment: environment, shards: shards)
        } catch {
            throw UsageError("--shard auto: \(error)")
        }
    }
}

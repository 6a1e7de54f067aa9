import Foundation
import Profile

extension DistributeCommand {
    /// The command line of `wsload distribute`, checked (every mistake a ``UsageError`` naming its option) and made
    /// absolute against the working directory.
    struct Request {
        enum EngineOptions {
            case slurm(SlurmScripts.Options)
            case kubernetes(KubernetesManifests.Options)
        }

        var engine: EngineOptions
        var profilePath: String
        var out: String
        var shards: Int
        var lead: Duration
        var time: Duration?
        var target: String?
        var workingDirectory: String

        init(_ options: Arguments, engine: Engine, workingDirectory: String = FileManager.default.currentDirectoryPath,
             now: Date = Date()) throws(UsageError) {
            guard options.positional.count == 1, let profile = options.positional.first else {
                throw UsageError(options.positional.isEmpty
                    ? "missing <profile.json>" : "one profile only (got \(options.positional.count) arguments)")
            }
            guard let shards = try options.integer("shards", in: 1...Shard.maximumCount) else {
                throw UsageError("--shards is required (the number of shards, 1-\(Shard.maximumCount))")
            }
            guard let out = options.value("out"), !out.isEmpty else { throw UsageError("--out is required (a directory)") }
            self.workingDirectory = workingDirectory
            self.profilePath = Self.absolute(profile, in: workingDirectory)
            self.out = Self.absolute(out, in: workingDirectory)
            self.shards = shards
            lead = try options.duration("lead") ?? .seconds(30)
            guard lead >= .zero, lead <= DistributeCommand.maximumLead else {
                throw UsageError("--lead: \(formatDuration(lead)) is more than \(formatDuration(DistributeCommand.maximumLead)) "
                    + "(wsload run refuses a start that far ahead)")
            }
            time = try options.duration("time")
            if let time, time <= .zero { throw UsageError("--time: a time limit must be longer than 0s") }
            target = try options.profileOverrides().target
            switch engine {
            case .slurm:
                if let refusal = SlurmScripts.refusal(ofDirectory: self.out) { throw UsageError("--out: \(refusal)") }
                self.engine = .slurm(try Self.slurmOptions(options, workingDirectory: workingDirectory))
            case .kubernetes: self.engine = .kubernetes(try Self.kubernetesOptions(options, now: now))
            }
        }

        /// The plan the generators turn into files, `directory` being DIR as created.
        func plan(profile: Profile, profileText: String, directory: String) -> DistributionPlan {
            let tokenEnvironment = Self.tokenEnvironment(of: profile)
            let isRelative = DistributeCommand.profileFiles(profile).contains { !$0.hasPrefix("/") }
            return DistributionPlan(
                profileName: profile.name, profilePath: profilePath, profileText: profileText, shards: shards, lead: lead,
                timeLimit: time ?? profile.duration + profile.gracefulStop + lead + DistributeCommand.timeMargin,
                target: target, directory: directory, workingDirectory: isRelative ? workingDirectory : nil, tokenEnvironment: tokenEnvironment)
        }

        /// The environment variable the profile's token comes from (`auth.tokenEnv`), if any.
        static func tokenEnvironment(of profile: Profile) -> String? {
            if case .environment(let name)? = profile.authentication?.source { return name }
            return nil
        }

        private static func slurmOptions(_ options: Arguments, workingDirectory: String) throws(UsageError)
            -> SlurmScripts.Options
        {
            let wsload = options.value("wsload").map { absolute($0, in: workingDirectory) } ?? currentExecutable()
            let partition = options.value("partition")
            if let partition {
                guard !partition.isEmpty, partition.unicodeScalars.allSatisfy(isNameScalar(allowing: ",")) else {
                    throw UsageError("--partition: \"\(partition)\" is not a partition name "
                        + "(letters, digits, '-', '_', '.', ',')")
                }
            }
            let extra = options.values("sbatch-option")
            for option in extra {
                if let refusal = SlurmScripts.refusal(ofOption: option) { throw UsageError("--sbatch-option: \(refusal)") }
            }
            return SlurmScripts.Options(wsload: wsload, partition: partition, sbatchOptions: extra)
        }

        private static func kubernetesOptions(_ options: Arguments, now: Date) throws(UsageError)
            -> KubernetesManifests.Options
        {
            guard let image = options.value("image") else { throw UsageError("--image is required (the wsload image)") }
            guard !image.isEmpty, image.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
                throw UsageError("--image: \"\(image)\" is not an image reference")
            }
            guard let claim = options.value("reports-claim") else {
                throw UsageError("--reports-claim is required (a ReadWriteMany PersistentVolumeClaim for the reports)")
            }
            try checkObjectName(claim, option: "reports-claim")
            let secret = options.value("token-secret")
            if let secret { try checkObjectName(secret, option: "token-secret") }
            let cpu = options.value("cpu") ?? "1"
            guard isQuantity(cpu, suffixes: ["", "m"]) else {
                throw UsageError("--cpu: \"\(cpu)\" is not a CPU quantity (1, 0.5, 500m)")
            }
            let memory = options.value("memory") ?? "1Gi"
            guard isQuantity(memory, suffixes: ["", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"]) else {
                throw UsageError("--memory: \"\(memory)\" is not a memory quantity (512Mi, 2Gi, 1G)")
            }
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyyMMdd-HHmmss"
            return KubernetesManifests.Options(
                image: image, reportsClaim: claim, cpu: cpu, memory: memory, tokenSecret: secret,
                runStamp: formatter.string(from: now))
        }

        /// A Kubernetes object name (RFC 1123 subdomain): lower-case letters, digits, '-' and '.', at most 253.
        private static func checkObjectName(_ name: String, option: String) throws(UsageError) {
            let isAllowed: (Unicode.Scalar) -> Bool = {
                ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "."
            }
            guard (1...253).contains(name.utf8.count), name.unicodeScalars.allSatisfy(isAllowed),
                let first = name.unicodeScalars.first, let last = name.unicodeScalars.last,
                first != "-" && first != ".", last != "-" && last != "."
            else {
                throw UsageError("--\(option): \"\(name)\" is not a Kubernetes name (lower-case letters, digits, '-', '.')")
            }
        }

        /// A decimal number (digits, at most one '.') followed by one of `suffixes`.
        private static func isQuantity(_ text: String, suffixes: [String]) -> Bool {
            let number = text.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            let suffix = String(text.dropFirst(number.count))
            return !number.isEmpty && number.filter { $0 == "." }.count <= 1 && number.first != "." && number.last != "."
                && number.count <= 12 && suffixes.contains(suffix) && number.contains { $0 != "0" && $0 != "." }
        }

        private static func isNameScalar(allowing extra: Unicode.Scalar) -> (Unicode.Scalar) -> Bool {
            { ("0"..."9").contains($0) || ("a"..."z").contains($0) || ("A"..."Z").contains($0)
                || $0 == "-" || $0 == "_" || $0 == "." || $0 == extra }
        }

        static func absolute(_ path: String, in directory: String) -> String {
            path.hasPrefix("/") ? path : (directory.hasSuffix("/") ? directory : directory + "/") + path
        }

        /// This wsload, absolute (`/proc/self/exe`), so the jobs run the build that wrote them.
        private static func currentExecutable() -> String {
            // Only a system without /proc has no link there: the name it was started by is then the best there is.
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        }
    }
}

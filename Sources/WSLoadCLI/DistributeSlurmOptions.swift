/// `--sbatch-option` words, read as sbatch reads its command line (getopt_long): a short option word may bundle
/// several (`-vJname` is `-v -J name`), the value of one that takes a value being the rest of the word; a long name may
/// be abbreviated. Every word must be whole (a value in the same word), so no word takes the next one, the script
/// path among them, as its value.
extension SlurmScripts {
    /// sbatch's short options (Slurm 22.05) by long name: those that take a value, and flags. A test checks both
    /// against the installed sbatch's getopt.
    static let shortOptionsWithValue: [Character: String] = [
        "a": "array", "b": "begin", "c": "cpus-per-task", "d": "dependency", "e": "error", "i": "input", "m": "distribution",
        "n": "ntasks", "o": "output", "p": "partition", "q": "qos", "t": "time", "w": "nodelist", "x": "exclude",
        "A": "account", "B": "extra-node-info", "C": "constraint", "D": "chdir", "F": "nodefile", "G": "gpus",
        "J": "job-name", "L": "licenses", "M": "clusters", "N": "nodes", "S": "core-spec",
    ]
    static let shortFlags: [Character: String] = [
        "h": "help", "k": "no-kill", "s": "oversubscribe", "v": "verbose", "H": "hold", "O": "overcommit", "Q": "quiet",
        "V": "version", "W": "wait",
    ]
    /// The long options sbatch takes without a value (some with an optional `=value`); every other needs `=value`.
    static let longFlags: Set<String> = [
        "contiguous", "exclusive", "get-user-env", "help", "hold", "ignore-pbs", "nice", "no-kill", "no-requeue",
        "overcommit", "oversubscribe", "parsable", "propagate", "quiet", "reboot", "requeue", "spread-job", "test-only",
        "usage", "use-min-nodes", "verbose", "version", "wait",
    ]

    /// The options the generated layout depends on, or that another option of `wsload distribute` sets. Long names
    /// are refused by prefix too (sbatch takes an unambiguous abbreviation).
    static let ownedOptions = ["array", "dependency", "parsable", "output", "error", "chdir", "wrap", "job-name",
                               "kill-on-invalid-dep", "time", "partition"]
    /// The options with which sbatch submits nothing, or prints something other than the job id `submit.sh` reads.
    static let submitNothingOptions = ["help", "usage", "version", "test-only"]

    /// One option as sbatch reads it: its long name (a short one's, or an abbreviation's when it abbreviates one of
    /// the names above), and its value.
    struct SbatchOption: Equatable {
        var name: String
        var value: String?
    }

    /// Why a word is not one whole sbatch option.
    struct OptionError: Error, Equatable {
        var reason: String
    }

    /// The options in one `--sbatch-option` word, or why the word is not one whole sbatch option.
    static func parse(option word: String) -> Result<[SbatchOption], OptionError> {
        guard word.hasPrefix("-"), word.count > 1, word != "--" else {
            return .failure(OptionError(reason: "\"\(word)\" is not an option (give one sbatch option per --sbatch-option, as --name=value)"))
        }
        if word.hasPrefix("--") {
            let body = word.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            let value = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
            let known = Set(shortOptionsWithValue.values).union(shortFlags.values).union(longFlags).union(ownedOptions)
                .union(["export"])
            let matches = known.filter { $0.hasPrefix(name) }
            let resolved = known.contains(name) ? name : matches.count == 1 ? matches.first! : name
            if value == nil, !longFlags.contains(resolved), !ownedOptions.contains(where: { $0.hasPrefix(name) }) {
                return .failure(OptionError(reason: "\(word) takes a value in the same word (--\(name)=VALUE): given alone, sbatch would "
                    + "take the next word as its value"))
            }
            return .success([SbatchOption(name: resolved, value: value)])
        }
        var options: [SbatchOption] = []
        var rest = word.dropFirst()
        while let letter = rest.first {
            rest = rest.dropFirst()
            if let name = shortFlags[letter] {
                options.append(SbatchOption(name: name, value: nil))
            } else if let name = shortOptionsWithValue[letter] {
                guard !rest.isEmpty else {
                    return .failure(OptionError(reason: "\(word): -\(letter) (--\(name)) takes a value in the same word (-\(letter)VALUE or "
                        + "--\(name)=VALUE): given alone, sbatch would take the next word as its value"))
                }
                options.append(SbatchOption(name: name, value: String(rest)))
                break
            } else {
                return .failure(OptionError(reason: "\(word): sbatch has no option -\(letter) (give the long form, --name=value)"))
            }
        }
        return .success(options)
    }

    /// Why `word` may not be given with `--sbatch-option`, or nil if it may.
    static func refusal(ofOption word: String) -> String? {
        let options: [SbatchOption]
        switch parse(option: word) {
        case .failure(let error): return error.reason
        case .success(let parsed): options = parsed
        }
        for option in options {
            if let owned = ownedOptions.first(where: { !option.name.isEmpty && $0.hasPrefix(option.name) }) {
                let hint = owned == "time" || owned == "partition" ? " (use wsload distribute's --\(owned))" : ""
                return "\(word) would replace the generated --\(owned)" + hint
            }
            if let name = submitNothingOptions.first(where: { !option.name.isEmpty && $0.hasPrefix(option.name) }) {
                return "\(word): with --\(name) sbatch submits no job (submit.sh reads the job id it prints)"
            }
        }
        return nil
    }

    /// What deserves a warning about `word` (accepted by ``refusal(ofOption:)``), or nil.
    static func warning(ofOption word: String) -> String? {
        guard case .success(let options) = parse(option: word) else { return nil }
        for option in options {
            switch option.name {
            case "begin":
                return "--sbatch-option=\(word): the shards start at the launch time plus the lead; a job held past it by "
                    + "--begin starts late (its report's run.lateBy says how late)"
            case "hold":
                return "--sbatch-option=\(word): held jobs start when released; past the launch time plus the lead, they "
                    + "start late (run.lateBy)"
            case "export" where !(option.value ?? "").split(separator: ",").contains("ALL"):
                return "--sbatch-option=\(word): the jobs get only the variables named, not this shell's environment: the "
                    + "profile's token variable (auth.tokenEnv) reaches them only if it is among them"
            default: continue
            }
        }
        return nil
    }
}

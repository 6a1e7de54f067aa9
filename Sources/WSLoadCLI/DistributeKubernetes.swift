import JSON

/// `wsload distribute kubernetes`: a run as an Indexed Job (a pod per shard, all starting at the same instant), a merge
/// Job over the shards' reports on a shared claim, a pod that copies the merged report out, and `apply.sh` that runs
/// them in order. Pure: a plan in, the manifests (as JSON values, written as YAML) and the script out.
///
/// On the claim a run has a directory of its own, `<run>/reports/` for the shards and `<run>/<name>-merged.json`, so
/// runs sharing a claim never meet in one `wsload merge DIR`.
enum KubernetesManifests {
    /// The Kubernetes side of the command line.
    struct Options: Sendable, Equatable {
        var image: String
        /// A ReadWriteMany PersistentVolumeClaim every shard writes its report to.
        var reportsClaim: String
        /// CPU and memory requested by every pod (`--cpu`, `--memory`); memory is also the limit.
        var cpu = "1"
        var memory = "1Gi"
        /// The Secret holding the profile's token under the key `token` (with `auth.tokenEnv`).
        var tokenSecret: String?
        /// The UTC time `wsload distribute` ran (`yyyymmdd-hhmmss`): it tells the run's directory on the claim.
        var runStamp: String
    }

    /// The oldest Kubernetes the manifests are written for: `backoffLimitPerIndex` is on by default (beta) since 1.29.
    static let minimumVersion = "1.29"
    /// Where the ConfigMap (`profile.json`, `start-at`) is mounted in the pods.
    static let profileMount = "/etc/wsload"
    static let labelName = "app.kubernetes.io/name"
    static let labelInstance = "app.kubernetes.io/instance"
    /// How long finished Jobs stay (with their pods' logs) before Kubernetes deletes them.
    static let finishedJobLifetime = 86_400
    /// The merge Job's deadline, seconds.
    static let mergeDeadline = 1800

    /// The names of the run's objects: `wsload-<profile name>` made a DNS label (lower case, `-` for anything else)
    /// and short enough for `-merge`, `-fetch` and the pods' `-<index>` hostnames.
    struct Names: Sendable, Equatable {
        var base: String
        var configMap: String { base }
        var job: String { base }
        var mergeJob: String { base + "-merge" }
        var fetchPod: String { base + "-fetch" }
        var tokenSecret: String { base + "-token" }

        init(profileName: String) {
            var label = ""
            for character in "wsload-" + profileName.lowercased() {
                let isAllowed = character.isASCII && (character.isLetter || character.isNumber)
                if isAllowed { label.append(character) } else if label.last != "-" { label.append("-") }
            }
            base = String(label.prefix(40).drop { $0 == "-" }.reversed().drop { $0 == "-" }.reversed())
        }
    }

    /// The run's directory on the claim: the objects' base name and the time `wsload distribute` ran.
    static func runDirectory(_ plan: DistributionPlan, _ options: Options) -> String {
        Names(profileName: plan.profileName).base + "-" + options.runStamp
    }

    /// `configmap.yaml`, `job.yaml`, `merge-job.yaml`, `fetch-pod.yaml` and `apply.sh`.
    static func files(_ plan: DistributionPlan, _ options: Options) -> [GeneratedFile] {
        [
            GeneratedFile(name: "configmap.yaml", text: DistributeText.yaml(configMap(plan)), isExecutable: false),
            GeneratedFile(name: "job.yaml", text: DistributeText.yaml(job(plan, options)), isExecutable: false),
            GeneratedFile(name: "merge-job.yaml", text: DistributeText.yaml(mergeJob(plan, options)), isExecutable: false),
            GeneratedFile(name: "fetch-pod.yaml", text: DistributeText.yaml(fetchPod(plan, options)), isExecutable: false),
            GeneratedFile(name: "apply.sh", text: KubernetesApplyScript.text(plan, options), isExecutable: true),
        ]
    }

    private static func labels(_ names: Names) -> JSONValue {
        [labelName: "wsload", labelInstance: .string(names.base)]
    }

    /// The profile as `profile.json`, and `start-at`, the launch time `apply.sh` writes just before the shards start.
    static func configMap(_ plan: DistributionPlan) -> JSONValue {
        let names = Names(profileName: plan.profileName)
        return [
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": ["name": .string(names.configMap), "labels": labels(names)],
            "data": ["profile.json": .string(plan.profileText), "start-at": ""],
        ]
    }

    /// The shards: an Indexed Job of N pods at once, none retried (a retry would start at another time).
    static func job(_ plan: DistributionPlan, _ options: Options) -> JSONValue {
        let names = Names(profileName: plan.profileName)
        let name = plan.shardReportName
        // The pod's shell turns the 0-based index into the report's 1-based name, says in the pod's log when the pod
        // itself came up after the shards' start (scheduling, an image pull: the shard then starts late), and keeps a
        // slice's verdict (3 thresholds, 4 invariants: its report is written) from failing the index: the merge judges
        // the whole run.
        let startFile = profileMount + "/start-at"
        let lead = plan.lead.components.seconds
        let script = """
            case ${JOB_COMPLETION_INDEX-} in '' | *[!0-9]* | 0?*) shard=unknown ;; *) shard=$((JOB_COMPLETION_INDEX + 1)) ;; esac
            if start=$(cat \(startFile) 2>/dev/null) && [ -n "$start" ] && at=$(date -u -d "$start" +%s 2>/dev/null); then
                late=$(($(date -u +%s) - at - \(lead)))
                [ "$late" -gt 0 ] && echo "wsload-shard: shard $shard/\(plan.shards) came up ${late}s after the shards' start" \\
                    "($start + \(plan.leadText)): it starts late (its report's run.lateBy says by how much)" >&2
            fi
            wsload "$@" --out "/reports/\(name.prefix)${shard}\(name.suffix)"
            status=$?
            case $status in 0 | 3 | 4) exit 0 ;; *) exit "$status" ;; esac

            """
        var arguments = ["run", profileMount + "/profile.json", "--shard", "auto",
                         "--start-at", "@\(profileMount)/start-at+\(plan.leadText)", "--quiet"]
        if let target = plan.target { arguments += ["--target", target] }
        var environment: [JSONValue] = [["name": "WSLOAD_SHARDS", "value": .string("\(plan.shards)")]]
        if let variable = plan.tokenEnvironment {
            environment.append([
                "name": .string(variable),
                "valueFrom": ["secretKeyRef": ["name": .string(options.tokenSecret ?? names.tokenSecret), "key": "token"]],
            ])
        }
        let container: JSONValue = [
            "name": "wsload", "image": .string(options.image),
            "command": commandWords(["/bin/sh", "-c", script, "wsload-shard"]),
            "args": commandWords(arguments),
            "env": .array(environment),
            "resources": resources(options),
            "securityContext": containerSecurity,
            "volumeMounts": [
                ["name": "profile", "mountPath": .string(profileMount), "readOnly": true],
                ["name": "reports", "mountPath": "/reports", "subPath": .string(runDirectory(plan, options) + "/reports")],
                ["name": "tmp", "mountPath": "/tmp"],
            ],
        ]
        return [
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": ["name": .string(names.job), "labels": labels(names)],
            "spec": [
                "completionMode": "Indexed",
                "completions": .number(Double(plan.shards)),
                "parallelism": .number(Double(plan.shards)),
                "backoffLimitPerIndex": 0,
                "activeDeadlineSeconds": .number(Double(DistributionPlan.wholeSeconds(plan.timeLimit))),
                "ttlSecondsAfterFinished": .number(Double(finishedJobLifetime)),
                "template": [
                    "metadata": ["labels": labels(names)],
                    "spec": [
                        "restartPolicy": "Never",
                        "securityContext": podSecurity,
                        "containers": [container],
                        "volumes": [
                            ["name": "profile", "configMap": ["name": .string(names.configMap)]],
                            claimVolume(options),
                            ["name": "tmp", "emptyDir": [:]],
                        ],
                    ],
                ],
            ],
        ]
    }

    /// `wsload merge` over the run's directory on the claim, after the shards' Job completed.
    static func mergeJob(_ plan: DistributionPlan, _ options: Options) -> JSONValue {
        let names = Names(profileName: plan.profileName)
        let container: JSONValue = [
            "name": "merge", "image": .string(options.image),
            "command": commandWords(["wsload", "merge", "/data/reports", "--out", "/data/" + plan.mergedReportName]),
            "resources": resources(options),
            "securityContext": containerSecurity,
            "volumeMounts": [["name": "reports", "mountPath": "/data", "subPath": .string(runDirectory(plan, options))]],
        ]
        return [
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": ["name": .string(names.mergeJob), "labels": labels(names)],
            "spec": [
                "backoffLimit": 0,
                "activeDeadlineSeconds": .number(Double(mergeDeadline)),
                "ttlSecondsAfterFinished": .number(Double(finishedJobLifetime)),
                "template": [
                    "metadata": ["labels": labels(names)],
                    "spec": [
                        "restartPolicy": "Never",
                        "securityContext": podSecurity,
                        "containers": [container],
                        "volumes": [claimVolume(options)],
                    ],
                ],
            ],
        ]
    }

    /// A pod that holds the claim's run directory while `apply.sh` copies the merged report out (`kubectl cp`).
    static func fetchPod(_ plan: DistributionPlan, _ options: Options) -> JSONValue {
        let names = Names(profileName: plan.profileName)
        return [
            "apiVersion": "v1", "kind": "Pod",
            "metadata": ["name": .string(names.fetchPod), "labels": labels(names)],
            "spec": [
                "restartPolicy": "Never",
                "activeDeadlineSeconds": 3600,
                "securityContext": podSecurity,
                "containers": [[
                    "name": "fetch", "image": .string(options.image),
                    "command": commandWords(["sleep", "3600"]),
                    "resources": ["requests": ["cpu": "10m", "memory": "16Mi"], "limits": ["memory": "64Mi"]],
                    "securityContext": containerSecurity,
                    "volumeMounts": [
                        ["name": "reports", "mountPath": "/data", "subPath": .string(runDirectory(plan, options)), "readOnly": true],
                    ],
                ]],
                "volumes": [claimVolume(options)],
            ],
        ]
    }

    /// `words` as a container's `command` or `args`: Kubernetes expands `$(NAME)` there from the container's
    /// environment and reads `$$` as `$`, so every `$` is written `$$` and each word reaches the container as given
    /// (a `--target` holding `$(WS_TOKEN)` must not become the token).
    static func commandWords(_ words: [String]) -> JSONValue {
        .array(words.map { .string($0.replacingOccurrences(of: "$", with: "$$")) })
    }

    /// Requests CPU and memory, limits memory only: a CPU limit throttles the load generator in 100 ms slices, which
    /// would show as latency the server never caused.
    private static func resources(_ options: Options) -> JSONValue {
        [
            "requests": ["cpu": .string(options.cpu), "memory": .string(options.memory)],
            "limits": ["memory": .string(options.memory)],
        ]
    }

    /// The reports claim as the volume `reports`.
    private static func claimVolume(_ options: Options) -> JSONValue {
        ["name": "reports", "persistentVolumeClaim": ["claimName": .string(options.reportsClaim)]]
    }

    /// The image's user and group (the Containerfile's `USER`), which every pod runs as.
    static let userID = 10001

    /// No privilege escalation, no capabilities, a read-only root (reports go to the claim, temporaries to an
    /// emptyDir): with ``podSecurity``, what the "restricted" Pod Security Standard asks of a container.
    private static let containerSecurity: JSONValue = [
        "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": ["drop": ["ALL"]],
        "seccompProfile": ["type": "RuntimeDefault"],
    ]

    /// Every pod runs as the image's non-root user. `fsGroup` makes the claim (and the `<run>/reports` directory the
    /// kubelet creates in it with the claim's mode) writable for that group where the volume supports ownership
    /// changes; an NFS claim that does not must be writable for group ``userID`` already.
    private static let podSecurity: JSONValue = [
        "runAsNonRoot": true, "runAsUser": .number(Double(userID)), "runAsGroup": .number(Double(userID)),
        "fsGroup": .number(Double(userID)), "fsGroupChangePolicy": "OnRootMismatch", "seccompProfile": ["type": "RuntimeDefault"],
    ]
}

import Foundation
import JSON
import Testing
import TestSupport
@testable import WSLoadCLI

/// A profile that reads its token from WS_TOKEN, written with a tab, a blank line and non-ASCII text so the ConfigMap's
/// copy is checked byte for byte.
private let tokenProfile = """
    {"version": 1, "name": "Echo_Token.v2",\t"description": "grüße, \\"quoted\\" and a blank line after",

     "target": "ws://127.0.0.1:9000/", "duration": "20s", "gracefulStop": "3s",
     "auth": {"type": "bearer", "tokenEnv": "WS_TOKEN"},
     "scenarios": [{"name": "echo", "pattern": "echo", "connections": 8, "schedule": {"model": "closed", "thinkTime": "5ms"}}]}

    """

/// The YAML documents of `path` as PyYAML reads them (kubectl's reader agrees on everything these files use).
private func yamlDocuments(_ path: String) async throws -> [JSONValue] {
    let run = try await runScript(["python3", "-c", """
        import json, sys, yaml
        print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1], encoding="utf-8"))), ensure_ascii=False))
        """, path])
    guard run.status == 0 else { throw TestProcess.Failure(description: "PyYAML could not read \(path): \(run.errors)") }
    guard case .array(let documents) = try JSONValue(parsing: run.output) else { throw TestProcess.Failure(description: run.output) }
    return documents
}

/// `kubernetes-validate --strict -k VERSION FILES` (pip, offline schemas; `python3 -m` finds it wherever pip put it).
private func kubernetesValidate(_ files: [String], version: String) async throws -> ScriptRun {
    try await runScript(["python3", "-m", "kubernetes_validate", "--strict", "-k", version] + files)
}

/// `value` at a path of keys and array indexes.
private func at(_ value: JSONValue?, _ path: Any...) -> JSONValue? {
    var current = value
    for step in path {
        if let key = step as? String { current = current?.objectValue?[key] } else if let index = step as? Int {
            guard let items = current?.arrayValue, items.indices.contains(index) else { return nil }
            current = items[index]
        }
    }
    return current
}

/// A `--target` that Kubernetes would rewrite if it reached `args` as written: `$(NAME)` is replaced by the container's
/// variable (the token's among them) and `$$` read as `$`.
private let expandableTarget = "ws://127.0.0.1:9/x?a=$(WSLOAD_SHARDS)&b=$$c&t=$(WS_TOKEN)&d=$"

/// What the kubelet makes of a container's `command` or `args` string: `$(NAME)` replaced from `environment` (left as
/// written when NAME is not there), `$$` read as `$`, any other `$` kept. A port of Kubernetes'
/// third_party/forked/golang/expansion `Expand` with `MappingFuncFor`, byte for byte.
func kubernetesExpanded(_ text: String, environment: [String: String]) -> String {
    let input = Array(text.utf8)
    var output: [UInt8] = []
    var checkpoint = 0
    var cursor = 0
    let dollar = UInt8(ascii: "$"), opener = UInt8(ascii: "("), closer = UInt8(ascii: ")")
    while cursor < input.count {
        if input[cursor] == dollar && cursor + 1 < input.count {
            output += input[checkpoint..<cursor]
            let rest = input[(cursor + 1)...]
            var advance = 1
            if rest.first == dollar {
                output.append(dollar)
            } else if rest.first == opener, let end = rest.dropFirst().firstIndex(of: closer) {
                let name = String(decoding: input[(cursor + 2)..<end], as: UTF8.self)
                output += Array((environment[name] ?? "$(" + name + ")").utf8)
                advance = end - cursor
            } else {
                output += [dollar, rest.first!]
            }
            cursor += advance
            checkpoint = cursor + 1
        }
        cursor += 1
    }
    output += input[checkpoint...]
    return String(decoding: output, as: UTF8.self)
}

/// What the "restricted" Pod Security Standard (kubernetes.io/docs/concepts/security/pod-security-standards, with the
/// "baseline" controls it includes) finds wrong with a pod spec: each control's allowed values, checked on the pod and
/// every container. Empty when the pod is admitted.
func restrictedViolations(_ pod: JSONValue?) -> [String] {
    var found: [String] = []
    let podSecurity = at(pod, "securityContext")
    for key in ["hostNetwork", "hostPID", "hostIPC"] where at(pod, key) == true { found.append("spec.\(key)") }
    let allowedVolumes: Set<String> = ["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                                       "projected", "secret"]
    for volume in at(pod, "volumes")?.arrayValue ?? [] {
        for key in volume.objectValue?.keys ?? [] where key != "name" && !allowedVolumes.contains(key) {
            found.append("volume type \(key)")
        }
    }
    if at(podSecurity, "runAsUser") == 0 { found.append("spec.securityContext.runAsUser 0") }
    if at(podSecurity, "seccompProfile", "type") == "Unconfined" { found.append("spec.securityContext.seccompProfile Unconfined") }
    if !(at(podSecurity, "sysctls")?.arrayValue ?? []).isEmpty { found.append("spec.securityContext.sysctls") }
    let containers = (at(pod, "containers")?.arrayValue ?? []) + (at(pod, "initContainers")?.arrayValue ?? [])
    for container in containers {
        let name = at(container, "name")?.stringValue ?? "?"
        let security = at(container, "securityContext")
        if at(security, "privileged") == true { found.append("\(name): privileged") }
        if at(security, "allowPrivilegeEscalation") != false { found.append("\(name): allowPrivilegeEscalation is not false") }
        let nonRoot = at(security, "runAsNonRoot") ?? at(podSecurity, "runAsNonRoot")
        if nonRoot != true { found.append("\(name): runAsNonRoot is not true") }
        if at(security, "runAsUser") == 0 { found.append("\(name): runAsUser 0") }
        let seccomp = at(security, "seccompProfile", "type") ?? at(podSecurity, "seccompProfile", "type")
        if seccomp != "RuntimeDefault" && seccomp != "Localhost" { found.append("\(name): seccompProfile is not RuntimeDefault") }
        let dropped = at(security, "capabilities", "drop")?.arrayValue ?? []
        if !dropped.contains("ALL") { found.append("\(name): capabilities do not drop ALL") }
        for added in at(security, "capabilities", "add")?.arrayValue ?? [] where added != "NET_BIND_SERVICE" {
            found.append("\(name): adds capability \(added)")
        }
        for port in at(container, "ports")?.arrayValue ?? [] where (at(port, "hostPort")?.numberValue ?? 0) != 0 {
            found.append("\(name): hostPort")
        }
        if let procMount = at(security, "procMount"), procMount != "Default" { found.append("\(name): procMount") }
    }
    return found
}

@Suite("wsload distribute kubernetes", .serialized, .timeLimit(.minutes(4)))
struct DistributeKubernetesTests {
    /// Writes the manifests of a 4-shard run of ``tokenProfile`` into a fresh directory and returns it.
    private func generate(_ scratch: DistributeScratch, extra: [String] = []) async throws -> String {
        let profile = try scratch.write("profile.json", tokenProfile)
        let out = scratch.file("k8s")
        let result = await runDistribute(["distribute", "kubernetes", profile, "--shards", "4", "--out", out, "--lead", "45s",
                                          "--image", "registry.example/wsload:0.2.0", "--reports-claim", "wsload-reports",
                                          "--cpu", "500m", "--memory", "768Mi"] + extra)
        #expect(result.code == .success, "\(result.error)")
        return out
    }

    @Test("the manifests pass kubernetes-validate --strict, oldest claimed version (1.29) and newest bundled (1.37)")
    func strictValidation() async throws {
        let scratch = try DistributeScratch()
        let out = try await generate(scratch)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted()
            == ["apply.sh", "configmap.yaml", "fetch-pod.yaml", "job.yaml", "merge-job.yaml"])
        let files = ["configmap.yaml", "job.yaml", "merge-job.yaml", "fetch-pod.yaml"].map { out + "/" + $0 }
        for version in [KubernetesManifests.minimumVersion, "1.37"] {
            let run = try await kubernetesValidate(files, version: version)
            #expect(run.status == 0, "\(version): \(run.output) \(run.errors)")
            // (DIR has a line break in its name: count the verdicts, not the lines.)
            #expect(run.output.components(separatedBy: " passed for resource ").count - 1 == 4, "\(run.output)")
            for resource in ["configmap/wsload-echo-token-v2", "job/wsload-echo-token-v2", "job/wsload-echo-token-v2-merge",
                             "pod/wsload-echo-token-v2-fetch"] {
                #expect(run.output.contains(" passed for resource \(resource) against version \(version)\n"), "\(resource)")
            }
            // An unknown kind or apiVersion only warns (exit 0): none may.
            #expect(!run.output.contains("WARN") && !run.output.contains("ERROR"), "\(run.output)")
        }
        // The validator does catch what it is here for: an unknown field under --strict.
        let broken = try String(contentsOfFile: out + "/job.yaml", encoding: .utf8)
            .replacingOccurrences(of: "  completionMode: Indexed", with: "  completionMode: Indexed\n  completionz: 4")
        let brokenPath = try scratch.write("broken-job.yaml", broken)
        let refused = try await kubernetesValidate([brokenPath], version: "1.37")
        #expect(refused.status == 1 && refused.output.contains("'completionz' was unexpected"), "\(refused.output)")
    }

    @Test("every pod passes the restricted Pod Security Standard, as the image's non-root user")
    func restrictedPods() async throws {
        let scratch = try DistributeScratch()
        let out = try await generate(scratch)
        let job = try #require(try await yamlDocuments(out + "/job.yaml").first)
        let merge = try #require(try await yamlDocuments(out + "/merge-job.yaml").first)
        let fetch = try #require(try await yamlDocuments(out + "/fetch-pod.yaml").first)
        let pods = [("job", at(job, "spec", "template", "spec")), ("merge", at(merge, "spec", "template", "spec")),
                    ("fetch", at(fetch, "spec"))]
        for (name, pod) in pods {
            #expect(restrictedViolations(pod) == [], "\(name)")
            let user = JSONValue.number(Double(KubernetesManifests.userID))
            #expect(at(pod, "securityContext", "runAsUser") == user && at(pod, "securityContext", "fsGroup") == user, "\(name)")
        }
        // The check does refuse what the standard refuses: the pods as they were before (no runAsNonRoot), a root user.
        var rootPod = try #require(pods[0].1?.objectValue)
        rootPod["securityContext"] = nil
        #expect(restrictedViolations(.object(rootPod)) == ["wsload: runAsNonRoot is not true"])
        rootPod["securityContext"] = ["runAsNonRoot": true, "runAsUser": 0, "seccompProfile": ["type": "RuntimeDefault"]]
        #expect(restrictedViolations(.object(rootPod)) == ["spec.securityContext.runAsUser 0"])
    }

    @Test("structure: what the schema cannot check, on the files as a YAML reader reads them")
    func structure() async throws {
        let scratch = try DistributeScratch()
        let out = try await generate(scratch)
        let configMap = try #require(try await yamlDocuments(out + "/configmap.yaml").first)
        let job = try #require(try await yamlDocuments(out + "/job.yaml").first)
        let merge = try #require(try await yamlDocuments(out + "/merge-job.yaml").first)
        let fetch = try #require(try await yamlDocuments(out + "/fetch-pod.yaml").first)

        #expect(at(configMap, "apiVersion") == "v1" && at(configMap, "kind") == "ConfigMap")
        #expect(at(configMap, "metadata", "name") == "wsload-echo-token-v2")
        // The profile exactly as the file holds it; the start time empty until apply.sh writes it.
        #expect(at(configMap, "data", "profile.json")?.stringValue == tokenProfile)
        #expect(at(configMap, "data", "start-at") == "")

        #expect(at(job, "apiVersion") == "batch/v1" && at(job, "kind") == "Job")
        #expect(at(job, "metadata", "name") == "wsload-echo-token-v2")
        let spec = at(job, "spec")
        #expect(at(spec, "completionMode") == "Indexed")
        #expect(at(spec, "completions") == 4 && at(spec, "parallelism") == 4)
        #expect(at(spec, "backoffLimitPerIndex") == 0)
        // 20 s + 3 s + the lead 45 s + 5 min.
        #expect(at(spec, "activeDeadlineSeconds") == 368)
        let pod = at(spec, "template", "spec")
        #expect(at(pod, "restartPolicy") == "Never")
        let container = at(pod, "containers", 0)
        #expect(at(pod, "containers")?.arrayValue?.count == 1)
        #expect(at(container, "image") == "registry.example/wsload:0.2.0")
        #expect(at(container, "args") == ["run", "/etc/wsload/profile.json", "--shard", "auto", "--start-at",
                                          "@/etc/wsload/start-at+45s", "--quiet"])
        #expect(at(container, "env") == [
            ["name": "WSLOAD_SHARDS", "value": "4"],
            ["name": "WS_TOKEN", "valueFrom": ["secretKeyRef": ["name": "wsload-echo-token-v2-token", "key": "token"]]],
        ])
        #expect(at(container, "resources") == ["requests": ["cpu": "500m", "memory": "768Mi"], "limits": ["memory": "768Mi"]])
        #expect(at(container, "securityContext", "readOnlyRootFilesystem") == true)
        // The ConfigMap the volume names is the one configmap.yaml holds, mounted where the args read it.
        let volumes = try #require(at(pod, "volumes")?.arrayValue)
        let profileVolume = try #require(volumes.first { at($0, "configMap") != nil })
        #expect(at(profileVolume, "configMap", "name") == at(configMap, "metadata", "name"))
        let mounts = try #require(at(container, "volumeMounts")?.arrayValue)
        #expect(mounts.contains { at($0, "name") == at(profileVolume, "name") && at($0, "mountPath") == "/etc/wsload" })
        // The shards write to <run>/reports on the claim; the merge reads the same directory and writes beside it.
        let shardMount = try #require(mounts.first { at($0, "mountPath") == "/reports" })
        let runDirectory = try #require(at(shardMount, "subPath")?.stringValue?.replacingOccurrences(of: "/reports", with: ""))
        #expect(runDirectory.wholeMatch(of: /wsload-echo-token-v2-\d{8}-\d{6}/) != nil, "\(runDirectory)")
        for manifest in [job, merge] {
            let claims = at(manifest, "spec", "template", "spec", "volumes")?.arrayValue?.compactMap {
                at($0, "persistentVolumeClaim", "claimName")?.stringValue }
            #expect(claims == ["wsload-reports"])
        }
        let mergeContainer = at(merge, "spec", "template", "spec", "containers", 0)
        #expect(at(mergeContainer, "command") == ["wsload", "merge", "/data/reports", "--out", "/data/Echo_Token.v2-merged.json"])
        #expect(at(mergeContainer, "volumeMounts", 0, "subPath")?.stringValue == runDirectory)
        #expect(at(merge, "spec", "backoffLimit") == 0 && at(merge, "spec", "template", "spec", "restartPolicy") == "Never")
        #expect(at(fetch, "kind") == "Pod" && at(fetch, "spec", "containers", 0, "volumeMounts", 0, "subPath")?.stringValue == runDirectory)
        // Every object is labelled as one run's.
        for manifest in [configMap, job, merge, fetch] {
            #expect(at(manifest, "metadata", "labels", "app.kubernetes.io/instance") == "wsload-echo-token-v2")
        }
        // No token anywhere: the Secret is named, never filled.
        for name in ["configmap.yaml", "job.yaml", "merge-job.yaml", "fetch-pod.yaml", "apply.sh"] {
            #expect(!(try String(contentsOfFile: out + "/" + name, encoding: .utf8)).contains("s3cr3t"))
        }
    }

    @Test("the YAML on disk is exactly the manifests' values")
    func faithfulYAML() async throws {
        let scratch = try DistributeScratch()
        let profile = try scratch.write("profile.json", tokenProfile)
        let plan = DistributionPlan(
            profileName: "Echo_Token.v2", profilePath: profile, profileText: tokenProfile, shards: 3, lead: .seconds(30),
            timeLimit: .seconds(400), target: "ws://h/?q='a'&b=\"c\"", directory: scratch.file("k"),
            workingDirectory: scratch.path, tokenEnvironment: "WS_TOKEN")
        let options = KubernetesManifests.Options(image: "wsload", reportsClaim: "claim", tokenSecret: "other-secret",
                                                  runStamp: "20261201-101010")
        for (name, value) in [("c", KubernetesManifests.configMap(plan)), ("j", KubernetesManifests.job(plan, options)),
                              ("m", KubernetesManifests.mergeJob(plan, options)), ("f", KubernetesManifests.fetchPod(plan, options))] {
            let path = try scratch.write(name + ".yaml", DistributeText.yaml(value))
            #expect(try await yamlDocuments(path) == [value], "\(name)")
        }
    }

    @Test("YAML text: hostile keys and values read back unchanged")
    func hostileYAML() async throws {
        let strings = ["", " ", "yes", "No", "on", "OFF", "y", "null", "~", "true", "1", "0x1F", "1e3", ".5", "-", "- a", "a: b",
                       "#c", "a #c", "[x]", "{x}", "&a", "*a", "!t", "%x", "@x", "`x`", "'", "\"", "\\", "\t", "tab\tin",
                       "line\nbreak", "  lead\nsecond\n", "trail \nx", "\n\nlead", "end\n\n\n", "crlf\r\n", "\r", "\u{0}x",
                       "\u{7}", "\u{7F}", "\u{85}", "nel\u{85}x\n", "\u{A0}", "ls\u{2028}ps\u{2029}", "\u{FEFF}bom",
                       "grüße 😀", "\u{1F600}\n", "---", "...", "--- x\n", "a\n---\nb\n", "\n", "\n\n", "x\n", "\tlead\nx\n"]
        var object = JSONObject()
        for (index, text) in strings.enumerated() {
            object["k\(index)"] = .string(text)
            object[text.isEmpty ? "empty key" : text] = .number(Double(index))
        }
        let value: JSONValue = [
            "strings": .object(object), "list": .array(strings.map { .string($0) }),
            "nested": [[["a": [], "b": [:], "c": [1, 2.5, -3, true, false, .null]]], [["x"]], [:], []],
            "numbers": [0, 1, -1, 0.25, 1e15, 123_456_789_012],
        ]
        let scratch = try DistributeScratch(hostile: false)
        let path = try scratch.write("hostile.yaml", DistributeText.yaml(value))
        #expect(try await yamlDocuments(path) == [value])
    }

    @Test("the pod's shell: the report named after JOB_COMPLETION_INDEX, a slice's verdict kept from failing the index",
          arguments: [(Int32(0), Int32(0)), (3, 0), (4, 0), (1, 1), (64, 64), (70, 70)])
    func podScript(status: Int32, expected: Int32) async throws {
        let scratch = try DistributeScratch()
        try scratch.recorder("wsload")
        let out = try await generate(scratch, extra: ["--target", expandableTarget])
        let container = try #require(at(try await yamlDocuments(out + "/job.yaml").first, "spec", "template", "spec", "containers", 0))
        // The container's environment as the kubelet has it when it expands command and args.
        let environment = ["JOB_COMPLETION_INDEX": "2", "WSLOAD_SHARDS": "4", "WS_TOKEN": "s3cr3t"]
        let command = (at(container, "command")?.arrayValue ?? []).compactMap { $0.stringValue }
            .map { kubernetesExpanded($0, environment: environment) }
        let arguments = (at(container, "args")?.arrayValue ?? []).compactMap { $0.stringValue }
            .map { kubernetesExpanded($0, environment: environment) }
        #expect(command.count == 4 && command.prefix(2) == ["/bin/sh", "-c"])
        // The target reaches wsload as given: neither the shard count nor the token put into it, no `$$` halved.
        #expect(arguments == ["run", "/etc/wsload/profile.json", "--shard", "auto", "--start-at", "@/etc/wsload/start-at+45s",
                              "--quiet", "--target", expandableTarget])
        let run = try await runScript(command + arguments, environment: environment.merging(["FAKE_STATUS": "\(status)"]) { $1 },
                                      prependingPath: scratch.file("bin"))
        #expect(run.status == expected, "\(run.errors)")
        #expect(try scratch.recorded("wsload") == arguments + ["--out", "/reports/Echo_Token.v2-shard3of4.json"])
    }

    @Test("the pod's log says when the pod came up after the shards' start, and nothing when it is in time")
    func podLateStart() async throws {
        let scratch = try DistributeScratch()
        try scratch.recorder("wsload")
        let out = try await generate(scratch)
        let container = try #require(at(try await yamlDocuments(out + "/job.yaml").first, "spec", "template", "spec", "containers", 0))
        let environment = ["JOB_COMPLETION_INDEX": "1", "WSLOAD_SHARDS": "4", "WS_TOKEN": "s3cr3t"]
        // The ConfigMap's start-at, here a scratch file where the pod mounts /etc/wsload.
        let startFile = scratch.file("start-at")
        let command = (at(container, "command")?.arrayValue ?? []).compactMap { $0.stringValue }
            .map { kubernetesExpanded($0, environment: environment).replacingOccurrences(of: "/etc/wsload/start-at",
                                                                                         with: DistributeText.shellWord(startFile)) }
        let arguments = (at(container, "args")?.arrayValue ?? []).compactMap { $0.stringValue }
        let formatter = ISO8601DateFormatter()
        for (ago, isLate) in [(120.0, true), (0.0, false)] {
            try scratch.write("start-at", formatter.string(from: Date().addingTimeInterval(-ago)) + "\n")
            let run = try await runScript(command + arguments, environment: environment, prependingPath: scratch.file("bin"))
            #expect(run.status == 0, "\(run.errors)")
            // 120 s ago with a 45 s lead: about 75 s late (a second either way on a busy box).
            let said = run.errors.firstMatch(of: /wsload-shard: shard 2\/4 came up (\d+)s after the shards' start \(.*Z \+ 45s\): it starts late/)
            #expect((said != nil) == isLate, "\(ago) s ago: \(run.errors)")
            if let late = said.flatMap({ Int($0.output.1) }) { #expect((73...80).contains(late), "\(late)") }
        }
        // No start time written yet (the ConfigMap's empty start-at): nothing said here; wsload names the problem.
        try scratch.write("start-at", "")
        let empty = try await runScript(command + arguments, environment: environment, prependingPath: scratch.file("bin"))
        #expect(!empty.errors.contains("came up"), "\(empty.errors)")
    }

    @Test("the Kubernetes expansion the pod test applies is the kubelet's")
    func expansionModel() {
        let environment = ["A": "x", "B": ""]
        #expect(kubernetesExpanded("$(A)-$(B)-$(C)-$$(A)-$$$(A)-$-$x-$(A", environment: environment) == "x--$(C)-$(A)-$x-$-$x-$(A")
        #expect(kubernetesExpanded("end$", environment: environment) == "end$")
        #expect(kubernetesExpanded("$((A + 1))", environment: environment) == "$((A + 1))")
    }

    @Test("apply.sh: ConfigMap, start time, shards, merge, copy, in that order, with the kubectl options given")
    func applyScript() async throws {
        let scratch = try DistributeScratch()
        let out = try await generate(scratch)
        try writeKubectl(scratch)
        let run = try await runScript(["sh", out + "/apply.sh", "--namespace", "load test"], environment: ["FAKE_MODE": "ok"],
                                      prependingPath: scratch.file("bin"))
        #expect(run.status == 0, "\(run.output) \(run.errors)")
        // A range, not 1...count: a script that never ran kubectl fails this test, not the whole suite's process.
        let calls = (0..<scratch.calls("kubectl")).map { (try? scratch.recorded("kubectl", call: $0 + 1)) ?? [] }
        #expect(calls.allSatisfy { $0.prefix(2) == ["--namespace", "load test"] }, "\(calls)")
        let verbs = calls.map { $0.dropFirst(2).prefix(2).joined(separator: " ") }
        #expect(verbs == ["get job/wsload-echo-token-v2", "get job/wsload-echo-token-v2-merge", "get pod/wsload-echo-token-v2-fetch",
                          "get pvc", "get secret", "create --dry-run=server", "apply -f", "patch configmap", "create -f", "wait --for=condition=complete",
                          "create -f", "wait --for=condition=complete", "create -f", "wait --for=condition=Ready", "cp -c",
                          "delete pod"], "\(verbs)")
        #expect(calls[5].suffix(4) == ["-f", out + "/job.yaml", "-o", "jsonpath={.spec.backoffLimitPerIndex}"])
        let patch = calls[7]
        #expect(patch.suffix(3).first == "merge")
        #expect(patch.last?.wholeMatch(of: /\{"data":\{"start-at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"\}\}/) != nil, "\(patch)")
        #expect(calls[8].last == out + "/job.yaml" && calls[10].last == out + "/merge-job.yaml" && calls[12].last == out + "/fetch-pod.yaml")
        #expect(calls[14].suffix(2) == ["wsload-echo-token-v2-fetch:/data/Echo_Token.v2-merged.json", out + "/Echo_Token.v2-merged.json"])
        #expect(FileManager.default.fileExists(atPath: out + "/Echo_Token.v2-merged.json"))
        #expect(run.output.contains("merged report: \(out)/Echo_Token.v2-merged.json\n"))
        #expect(!scratch.wasInjected)
    }

    @Test("apply.sh stops at a failed shard (no merge), an earlier run's objects, a missing Secret, or a cluster that drops backoffLimitPerIndex")
    func applyFailures() async throws {
        let scratch = try DistributeScratch()
        let out = try await generate(scratch)
        try writeKubectl(scratch)
        for (mode, message) in [("failed", "job/wsload-echo-token-v2 failed (failed indexes: 2)"),
                                ("exists", "job/wsload-echo-token-v2 exists (an earlier run)"),
                                ("nosecret", "the Secret wsload-echo-token-v2-token is missing"),
                                ("old", "the cluster drops the Job's backoffLimitPerIndex: it needs Kubernetes 1.29 or later")] {
            try? FileManager.default.removeItem(atPath: scratch.file("record"))  // a fresh record for each mode; none yet is fine
            let run = try await runScript(["sh", out + "/apply.sh"], environment: ["FAKE_MODE": mode], prependingPath: scratch.file("bin"))
            #expect(run.status == 1, "\(mode)")
            #expect(run.errors.contains(message), "\(mode): \(run.errors)")
            let created = (1...max(1, scratch.calls("kubectl"))).compactMap { try? scratch.recorded("kubectl", call: $0) }
                .filter { $0.first == "create" && !$0.contains("--dry-run=server") }.compactMap(\.last)
            #expect(created == (mode == "failed" ? [out + "/job.yaml"] : []), "\(mode): \(created)")
            let applied = (1...max(1, scratch.calls("kubectl"))).compactMap { try? scratch.recorded("kubectl", call: $0) }
                .filter { $0.first == "apply" || $0.first == "patch" }
            #expect(applied.isEmpty == (mode != "failed"), "\(mode): \(applied)")
        }
    }

    @Test("option errors exit 64 naming the option", arguments: [
        ([String](), "--image is required"),
        (["--image", "w"], "--reports-claim is required"),
        (["--image", "a b", "--reports-claim", "c"], "--image: \"a b\" is not an image reference"),
        (["--image", "w", "--reports-claim", "Reports"], "--reports-claim: \"Reports\" is not a Kubernetes name"),
        (["--image", "w", "--reports-claim", "-c"], "is not a Kubernetes name"),
        (["--image", "w", "--reports-claim", "c", "--cpu", "lots"], "--cpu: \"lots\" is not a CPU quantity"),
        (["--image", "w", "--reports-claim", "c", "--cpu", "0"], "--cpu: \"0\""),
        (["--image", "w", "--reports-claim", "c", "--memory", "2GB"], "--memory: \"2GB\" is not a memory quantity"),
        (["--image", "w", "--reports-claim", "c", "--token-secret", "S"], "--token-secret: \"S\" is not a Kubernetes name"),
        (["--image", "w", "--reports-claim", "c", "--partition", "p"], "unknown option '--partition'"),
    ])
    func optionErrors(extra: [String], message: String) async throws {
        let scratch = try DistributeScratch(hostile: false)
        let profile = try scratch.write("p.json", echoProfile(name: "e", duration: "5s"))
        let result = await runDistribute(["distribute", "kubernetes", profile, "--shards", "2", "--out", scratch.file("o")] + extra)
        #expect(result.code == .usage)
        #expect(result.error.contains(message), "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: scratch.file("o")))
    }

    @Test("--token-secret only with auth.tokenEnv; the files a pod cannot see are named")
    func tokenAndFiles() async throws {
        let scratch = try DistributeScratch(hostile: false)
        let plain = try scratch.write("p.json", echoProfile(name: "e", duration: "5s"))
        let refused = await runDistribute(["distribute", "kubernetes", plain, "--shards", "2", "--out", scratch.file("o"),
                                           "--image", "w", "--reports-claim", "c", "--token-secret", "s"])
        #expect(refused.code == .usage && refused.error.contains("the profile reads no token from the environment"))
        #expect(!FileManager.default.fileExists(atPath: scratch.file("o")), "a usage error creates no DIR")
        let withFile = try scratch.write("f.json", """
            {"version": 1, "name": "f", "target": "ws://127.0.0.1:9/", "duration": "5s",
             "auth": {"type": "bearer", "tokenFile": "secrets/token"},
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2}]}
            """)
        let warned = await runDistribute(["distribute", "kubernetes", withFile, "--shards", "2", "--out", scratch.file("o2"),
                                          "--image", "w", "--reports-claim", "c"])
        #expect(warned.code == .success, "\(warned.error)")
        #expect(warned.error.contains("warning: the pods see only the profile (/etc/wsload/profile.json); mount what it reads "
            + "at the same paths in job.yaml: secrets/token"), "\(warned.error)")
        #expect(warned.output.contains("run with: sh '\(scratch.file("o2"))/apply.sh' [kubectl options]"))
    }

    @Test("object names: wsload-<profile name> as a DNS label, short enough for -merge and the pods' hostnames")
    func names() {
        #expect(KubernetesManifests.Names(profileName: "Echo_Token.v2").base == "wsload-echo-token-v2")
        #expect(KubernetesManifests.Names(profileName: "a__b..c").base == "wsload-a-b-c")
        #expect(KubernetesManifests.Names(profileName: "_").base == "wsload")
        let long = KubernetesManifests.Names(profileName: String(repeating: "ab-", count: 40))
        #expect(long.base.count <= 40 && !long.base.hasSuffix("-") && long.mergeJob.count <= 46)
    }

    /// A kubectl stand-in: records every call and answers as a cluster would in `FAKE_MODE` (ok: everything completes;
    /// failed: the shards' Job fails with index 2; exists: an earlier run's Job is there; nosecret: the Secret is not;
    /// old: the API server drops backoffLimitPerIndex, as 1.28 does).
    private func writeKubectl(_ scratch: DistributeScratch) throws {
        let recorder = try scratch.recorder("kubectl-record", key: "kubectl")
        try scratch.write("bin/kubectl", """
            #!/bin/sh
            \(DistributeText.shellWord(recorder)) "$@"
            while [ "$1" = --namespace ]; do shift 2; done
            case "$1 $2" in
                "get job/"*) [ "$FAKE_MODE" = exists ] && exit 0; exit 1 ;;
                "get pod/"*) exit 1 ;;
                "get secret") [ "$FAKE_MODE" = nosecret ] && exit 1; exit 0 ;;
                "create --dry-run=server") [ "$FAKE_MODE" = old ] || printf 0; exit 0 ;;
                "get job")
                    case "$*" in
                        *failedIndexes*) echo 2 ;;
                        *Failed*) [ "$FAKE_MODE" = failed ] && echo True ;;
                    esac
                    exit 0 ;;
                "wait --for=condition=complete") [ "$FAKE_MODE" = failed ] && exit 1; exit 0 ;;
                "cp -c") for last; do :; done; echo '{}' >"$last"; exit 0 ;;
            esac
            exit 0

            """, executable: true)
    }
}

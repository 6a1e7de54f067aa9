import Foundation
import Testing
import TestSupport
@testable import WSLoadCLI

/// A 10 s echo profile (gracefulStop 5 s): the default time limit is 10 s + 5 s + the lead 30 s + 5 min = 5m45s.
private let profileText = echoProfile(name: "echo-4", duration: "10s", connections: 8)

@Suite("wsload distribute slurm", .serialized, .timeLimit(.minutes(3)))
struct DistributeSlurmTests {
    @Test("writes submit.sh, wsload.sbatch, merge.sbatch, reports/ and logs/; the scripts parse")
    func files() async throws {
        let scratch = try DistributeScratch(hostile: false)
        let profile = try scratch.write("echo.json", profileText)
        let out = scratch.file("run/a")
        let result = await runDistribute(["distribute", "slurm", profile, "--shards", "4", "--out", out,
                                          "--target", "ws://127.0.0.1:9000/", "--wsload", "/opt/wsload/bin/wsload",
                                          "--partition", "debug", "--sbatch-option=--exclusive"])
        #expect(result.code == .success, "\(result.error)")
        let entries = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        #expect(entries == ["logs", "merge.sbatch", "reports", "submit.sh", "wsload.sbatch"])
        #expect(result.output.contains("submit with: sh '\(out)/submit.sh'"), "\(result.output)")
        #expect(result.error.contains("/opt/wsload/bin/wsload is not an executable here"))
        for name in ["submit.sh", "wsload.sbatch", "merge.sbatch"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: out + "/" + name)
            #expect((attributes[.posixPermissions] as? Int ?? 0) & 0o100 != 0, "\(name) is executable")
            let check = try await runScript(["sh", "-n", out + "/" + name])
            #expect(check.status == 0, "\(name): \(check.errors)")
        }
        let submit = try String(contentsOfFile: out + "/submit.sh", encoding: .utf8)
        #expect(submit.contains("--array=0-3 --job-name='wsload-echo-4'"))
        #expect(submit.contains("--time=00:05:45 '--partition=debug' '--exclusive' \"$dir/wsload.sbatch\""))
        #expect(submit.contains("--dependency=\"afterok:$array\" --kill-on-invalid-dep=yes"))
        #expect(submit.contains("--time=00:30:00 '--partition=debug' '--exclusive' \"$dir/merge.sbatch\""))
        let shard = try String(contentsOfFile: out + "/wsload.sbatch", encoding: .utf8)
        #expect(shard.contains("ulimit -n \"$(ulimit -H -n)\""))
        #expect(shard.contains("'/opt/wsload/bin/wsload' 'run' '\(profile)' '--shard' 'auto' '--shards' '4' "
            + "'--start-at' '@\(out)/launch-time+30s' '--quiet' '--target' 'ws://127.0.0.1:9000/'"))
        #expect(shard.contains("--out '\(out)/reports/echo-4-shard'\"$shard\"'of4.json'"))
        let merge = try String(contentsOfFile: out + "/merge.sbatch", encoding: .utf8)
        #expect(merge.contains("exec '/opt/wsload/bin/wsload' merge '\(out)/reports' --out '\(out)/echo-4-merged.json'"))
        // Nothing secret: the profile's text is not in the scripts, only its path.
        #expect(!submit.contains("\"scenarios\"") && !shard.contains("\"scenarios\""))
    }

    @Test("hostile paths stay one word: submit.sh, wsload.sbatch and merge.sbatch run against recording stand-ins")
    func hostilePaths() async throws {
        let scratch = try DistributeScratch()
        let wsload = try scratch.recorder("wsload " + hostileName, key: "wsload")
        try scratch.recorder("sbatch", output: "10")
        var plan = hostilePlan(in: scratch)
        try FileManager.default.createDirectory(atPath: plan.workingDirectory!, withIntermediateDirectories: true)
        plan.directory = try DistributeFiles.prepare(plan.directory).get()
        let options = SlurmScripts.Options(wsload: wsload, partition: "debug", sbatchOptions: ["--comment=a 'b' $(c)", "--exclusive"])
        #expect(DistributeFiles.write(SlurmScripts.files(plan, options), directories: ["reports", "logs"], into: plan.directory) == nil)
        let dir = plan.directory
        // A log path is a Slurm filename pattern: DIR's own % doubled.
        let logs = dir.replacingOccurrences(of: "%", with: "%%") + "/logs"
        #expect(logs.contains("%%x %%%%"))

        let submitted = try await runScript(["sh", dir + "/submit.sh"], prependingPath: scratch.file("bin"))
        #expect(submitted.status == 0, "\(submitted.errors)")
        #expect(try scratch.recorded("sbatch", call: 1) == [
            "--parsable", "--array=0-3", "--job-name=wsload-echo-run_1.v2", "--chdir=\(dir)", "--output=\(logs)/%x-%A_%a.out",
            "--time=00:05:45", "--partition=debug", "--comment=a 'b' $(c)", "--exclusive", dir + "/wsload.sbatch",
        ])
        #expect(try scratch.recorded("sbatch", call: 2) == [
            "--parsable", "--dependency=afterok:101", "--kill-on-invalid-dep=yes", "--job-name=wsload-echo-run_1.v2-merge",
            "--chdir=\(dir)", "--output=\(logs)/%x-%j.out", "--time=00:30:00", "--partition=debug", "--comment=a 'b' $(c)",
            "--exclusive", dir + "/merge.sbatch",
        ])
        #expect(submitted.output.hasPrefix("array job: 101 (4 shards, starting at "), "\(submitted.output)")
        #expect(submitted.output.contains("\nmerge job: 102 (after every shard succeeds)\n"))
        #expect(submitted.output.contains("\nmerged report: \(dir)/echo-run_1.v2-merged.json\n"))
        let launch = try String(contentsOfFile: dir + "/launch-time", encoding: .utf8)
        #expect(launch.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n/) != nil, "\(launch)")

        // A task of the array: the shard from SLURM_ARRAY_TASK_ID, the report named after it, run from the directory
        // distribute ran in, with the hard open-file limit.
        let shard = try await runScript(["prlimit", "--nofile=512:4096", "sh", dir + "/wsload.sbatch"],
                                        environment: ["SLURM_ARRAY_TASK_ID": "2"], in: dir)
        #expect(shard.status == 0, "\(shard.errors)")
        #expect(try scratch.recorded("wsload") == [
            "run", plan.profilePath, "--shard", "auto", "--shards", "4", "--start-at", "@\(dir)/launch-time+30s", "--quiet",
            "--target", plan.target!, "--out", "\(dir)/reports/echo-run_1.v2-shard3of4.json",
        ])
        #expect(try scratch.recordedText("wsload", "pwd") == plan.workingDirectory!)
        #expect(try scratch.recordedText("wsload", "nofile") == "4096")

        let merge = try await runScript(["sh", dir + "/merge.sbatch"])
        #expect(merge.status == 0, "\(merge.errors)")
        #expect(try scratch.recorded("wsload", call: 2) == [
            "merge", dir + "/reports", "--out", dir + "/echo-run_1.v2-merged.json",
        ])
        #expect(!scratch.wasInjected)
    }

    @Test("wsload.sbatch enters the directory distribute ran in only for a profile with relative paths")
    func workingDirectory() async throws {
        let scratch = try DistributeScratch(name: slurmHostileName)
        let wsload = try scratch.recorder("wsload")
        let absolute = try scratch.write("absolute.json", profileText)
        let relative = try scratch.write("relative.json", """
            {"version": 1, "name": "rel", "target": "ws://127.0.0.1:9/", "duration": "5s",
             "auth": {"type": "bearer", "tokenFile": "secrets/token"},
             "scenarios": [{"name": "echo", "pattern": "echo", "connections": 2}]}
            """)
        // distribute runs in a directory only the login node has (its /tmp): it is gone when the shards run.
        let local = scratch.file("login-node-only")
        try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: false)
        for (profile, out) in [(absolute, "abs"), (relative, "rel")] {
            let run = try await runScript([wsloadExecutable, "distribute", "slurm", profile, "--shards", "2", "--out",
                                           scratch.file(out), "--wsload", wsload, "--target", "ws://127.0.0.1:9/"], in: local)
            #expect(run.status == 0, "\(run.errors)")
            #expect(run.errors.contains("the profile names files by relative paths (secrets/token): the shards run in "
                + local + ", which every node must see") == (out == "rel"), "\(run.errors)")
        }
        let shard = try await runScript(["sh", scratch.file("rel/wsload.sbatch")], environment: ["SLURM_ARRAY_TASK_ID": "0"],
                                        in: scratch.path)
        #expect(shard.status == 0, "\(shard.errors)")
        #expect(try scratch.recordedText("wsload", "pwd") == local)
        try FileManager.default.removeItem(atPath: local)

        // No relative path: the task runs where Slurm put it (--chdir=DIR), whatever became of the login node's directory.
        let plain = try await runScript(["sh", scratch.file("abs/wsload.sbatch")], environment: ["SLURM_ARRAY_TASK_ID": "1"],
                                        in: scratch.file("abs"))
        #expect(plain.status == 0, "\(plain.errors)")
        #expect(try scratch.recordedText("wsload", "pwd", call: 2) == scratch.file("abs"))
        #expect(!(try scratch.read("abs/wsload.sbatch")).contains("\ncd "))
        // Relative paths: the task cannot run without that directory, and says which.
        let lost = try await runScript(["sh", scratch.file("rel/wsload.sbatch")], environment: ["SLURM_ARRAY_TASK_ID": "0"],
                                       in: scratch.path)
        #expect(lost.status == 1)
        #expect(lost.errors.contains("wsload.sbatch: cannot enter \(local), where the profile's relative paths start"),
                "\(lost.errors)")
        #expect(scratch.calls("wsload") == 2)
        #expect(!scratch.wasInjected)
    }

    @Test("wsload.sbatch: a slice's verdict (3, 4) lets the merge run; any other failure stops it", arguments: [
        (Int32(0), Int32(0)), (3, 0), (4, 0), (1, 1), (64, 64), (65, 65), (74, 74), (130, 130),
    ])
    func shardExitCodes(status: Int32, expected: Int32) async throws {
        let scratch = try DistributeScratch(hostile: false)
        let wsload = try scratch.recorder("wsload")
        var plan = hostilePlan(in: scratch)
        plan.workingDirectory = scratch.path
        plan.directory = try DistributeFiles.prepare(plan.directory).get()
        #expect(DistributeFiles.write(SlurmScripts.files(plan, .init(wsload: wsload)), directories: [], into: plan.directory) == nil)
        let run = try await runScript(["sh", plan.directory + "/wsload.sbatch"],
                                      environment: ["SLURM_ARRAY_TASK_ID": "0", "FAKE_STATUS": "\(status)"])
        #expect(run.status == expected)
        // Outside an array (or with a garbled ID) wsload itself names the variable: the name is left unfilled.
        let outside = try await runScript(["sh", plan.directory + "/wsload.sbatch"], environment: ["SLURM_ARRAY_TASK_ID": "07"])
        #expect(outside.status == 0)
        #expect(try scratch.recorded("wsload", call: 2).last == "\(plan.directory)/reports/echo-run_1.v2-shardunknownof4.json")
    }

    @Test("submit.sh refuses a second submit, and undoes a half-done one")
    func submitFailures() async throws {
        let scratch = try DistributeScratch()
        try scratch.recorder("scancel")
        var plan = hostilePlan(in: scratch)
        plan.directory = try DistributeFiles.prepare(plan.directory).get()
        #expect(DistributeFiles.write(SlurmScripts.files(plan, .init(wsload: "/usr/bin/wsload")), directories: [], into: plan.directory) == nil)
        let submit = plan.directory + "/submit.sh"

        // The array refused: no launch time left behind, so the run can be submitted again.
        try scratch.recorder("sbatch", output: "20", failOnCall: 1)
        let refused = try await runScript(["sh", submit], prependingPath: scratch.file("bin"))
        #expect(refused.status == 1)
        #expect(refused.errors.contains("sbatch refused the shards' job array"), "\(refused.errors)")
        #expect(!FileManager.default.fileExists(atPath: plan.directory + "/launch-time"))

        // The merge refused: the array it would have followed is cancelled, and the run can be submitted again.
        try FileManager.default.removeItem(atPath: scratch.file("record"))
        try scratch.recorder("sbatch", output: "20", failOnCall: 2)
        let half = try await runScript(["sh", submit], prependingPath: scratch.file("bin"))
        #expect(half.status == 1)
        #expect(half.errors.contains("cancelling the shards (job 201)"), "\(half.errors)")
        #expect(try scratch.recorded("scancel") == ["201"])
        #expect(!FileManager.default.fileExists(atPath: plan.directory + "/launch-time"))

        // Submitted (the launch time exists): a second submit is refused before sbatch runs.
        try FileManager.default.removeItem(atPath: scratch.file("record"))
        try scratch.recorder("sbatch", output: "30")
        let first = try await runScript(["sh", submit], prependingPath: scratch.file("bin"))
        #expect(first.status == 0, "\(first.errors)")
        let again = try await runScript(["sh", submit], prependingPath: scratch.file("bin"))
        #expect(again.status == 1)
        #expect(again.errors.contains("was submitted already"), "\(again.errors)")
        #expect(scratch.calls("sbatch") == 2)
        #expect(!scratch.wasInjected)
    }

    @Test("refuses a DIR that is a file or not empty, and writes nothing")
    func refusesDirectory() async throws {
        let scratch = try DistributeScratch(name: slurmHostileName)
        let profile = try scratch.write("echo.json", profileText)
        try scratch.write("busy/keep.txt", "mine")
        let busy = await runDistribute(["distribute", "slurm", profile, "--shards", "2", "--out", scratch.file("busy")])
        #expect(busy.code == .ioError)
        #expect(busy.error.contains("exists and is not empty (1 entries); nothing is overwritten"), "\(busy.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.file("busy")) == ["keep.txt"])
        try scratch.write("plain-file", "x")
        let file = await runDistribute(["distribute", "slurm", profile, "--shards", "2", "--out", scratch.file("plain-file")])
        #expect(file.code == .ioError)
        #expect(file.error.contains("exists and is not a directory"))
        // An empty directory is taken.
        try FileManager.default.createDirectory(atPath: scratch.file("empty"), withIntermediateDirectories: false)
        let empty = await runDistribute(["distribute", "slurm", profile, "--shards", "2", "--out", scratch.file("empty"),
                                         "--wsload", "/bin/true"])
        #expect(empty.code == .success, "\(empty.error)")
    }

    @Test("option errors exit 64 naming the option, and write nothing", arguments: [
        ([], "missing <profile.json>"),
        (["--shards", "4"], "missing <profile.json>"),
        (["P", "P", "--shards", "4", "--out", "O"], "one profile only"),
        (["P", "--out", "O"], "--shards is required"),
        (["P", "--shards", "0", "--out", "O"], "--shards: \"0\" is not a whole number from 1 to 1000"),
        (["P", "--shards", "1001", "--out", "O"], "--shards: \"1001\""),
        (["P", "--shards", "four", "--out", "O"], "--shards: \"four\""),
        (["P", "--shards", "4"], "--out is required"),
        (["P", "--shards", "4", "--out", "O", "--lead", "25h"], "--lead: 25h00m is more than 24h00m"),
        (["P", "--shards", "4", "--out", "O", "--lead", "soon"], "--lead: \"soon\" is not a duration"),
        (["P", "--shards", "4", "--out", "O", "--time", "0s"], "--time: a time limit must be longer than 0s"),
        (["P", "--shards", "4", "--out", "O", "--target", "http://x/"], "--target:"),
        (["P", "--shards", "4", "--out", "O", "--partition", "a b"], "--partition: \"a b\" is not a partition name"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option", "exclusive"], "\"exclusive\" is not an option"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=--array=0-1"], "--array=0-1 would replace the generated --array"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=--arr=0-1"], "would replace the generated --array"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=-a0-1"], "would replace the generated --array"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=--output=x"], "would replace the generated --output"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=-D/tmp"], "would replace the generated --chdir"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=--time=10"], "(use wsload distribute's --time)"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=--dependency=afterany:1"], "the generated --dependency"),
        // Bundled short options, as sbatch's getopt reads them: -v then -J other, -a 0-9, -o /x.
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=-vJother"], "-vJother would replace the generated --job-name"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=-va0-9"], "-va0-9 would replace the generated --array"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=-Qvo/x"], "-Qvo/x would replace the generated --output"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=-A"], "-A: -A (--account) takes a value in the same word"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=--account"], "--account takes a value in the same word"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=-vf"], "-vf: sbatch has no option -f"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=--test-only"], "with --test-only sbatch submits no job"),
        (["P", "--shards", "4", "--out", "O", "--sbatch-option=-vV"], "with --version sbatch submits no job"),
        (["P", "--shards", "4", "--out", "O", "--image", "x"], "unknown option '--image'"),
        (["P", "--shards", "4", "--out", "O\\x"], "--out: a backslash in the path turns off Slurm's %A/%a log names"),
    ])
    func optionErrors(arguments: [String], message: String) async throws {
        let scratch = try DistributeScratch(hostile: false)
        let profile = try scratch.write("echo.json", profileText)
        let out = scratch.file("out")
        let resolved = arguments.map { $0 == "P" ? profile : $0.hasPrefix("O") ? out + $0.dropFirst() : $0 }
        let result = await runDistribute(["distribute", "slurm"] + resolved)
        #expect(result.code == .usage)
        #expect(result.error.contains(message), "\(result.error)")
        #expect(result.error.contains("See 'wsload distribute --help'."))
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test("a DIR that resolves (through a link) to a path with a backslash exits 64 before anything is created")
    func backslashThroughLink() async throws {
        let scratch = try DistributeScratch(hostile: false)
        let profile = try scratch.write("echo.json", profileText)
        try FileManager.default.createDirectory(atPath: scratch.file("back\\slash"), withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: scratch.file("link"), withDestinationPath: scratch.file("back\\slash"))
        let result = await runDistribute(["distribute", "slurm", profile, "--shards", "2", "--out", scratch.file("link/runs/a")])
        #expect(result.code == .usage)
        #expect(result.error.contains("is \(scratch.file("back\\slash"))/runs/a: a backslash in the path"), "\(result.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.file("back\\slash")).isEmpty)
    }

    @Test("an engine is required; a bad or missing profile exits 65 or 66 before DIR is made")
    func engineAndProfile() async throws {
        #expect(await runDistribute(["distribute"]).error.contains("missing engine: give slurm or kubernetes"))
        #expect(await runDistribute(["distribute", "pbs"]).error.contains("unknown engine 'pbs'"))
        #expect(await runDistribute(["distribute", "pbs"]).code == .usage)
        let scratch = try DistributeScratch(hostile: false)
        let bad = try scratch.write("bad.json", #"{"version": 1, "name": "x y"}"#)
        let invalid = await runDistribute(["distribute", "slurm", bad, "--shards", "2", "--out", scratch.file("o1")])
        #expect(invalid.code == .invalidInput)
        #expect(invalid.error.contains("problem"))
        let missing = await runDistribute(["distribute", "slurm", scratch.file("none.json"), "--shards", "2", "--out", scratch.file("o2")])
        #expect(missing.code == .noInput)
        // A name starting with '.' would make every report a hidden file, which 'merge DIR' never reads.
        let hidden = try scratch.write("hidden.json", echoProfile(name: ".smoke", duration: "5s"))
        let dotted = await runDistribute(["distribute", "slurm", hidden, "--shards", "2", "--out", scratch.file("o3")])
        #expect(dotted.code == .invalidInput)
        #expect(dotted.error.contains("name: \".smoke\" starts with '.' (it names the report files, which would be hidden)"),
                "\(dotted.error)")
        for out in ["o1", "o2", "o3"] { #expect(!FileManager.default.fileExists(atPath: scratch.file(out)), "\(out)") }
    }

    @Test("accepted sbatch options: bundles parsed as sbatch does; --begin, --hold and --export without ALL are warned about")
    func sbatchOptions() async throws {
        #expect(try SlurmScripts.parse(option: "-vQAload").get() == [
            .init(name: "verbose", value: nil), .init(name: "quiet", value: nil), .init(name: "account", value: "load")])
        #expect(try SlurmScripts.parse(option: "--acc=x").get() == [.init(name: "account", value: "x")])
        #expect(try SlurmScripts.parse(option: "--beg=now").get() == [.init(name: "begin", value: "now")])
        let scratch = try DistributeScratch(hostile: false)
        let profile = try scratch.write("echo.json", profileText)
        let result = await runDistribute(["distribute", "slurm", profile, "--shards", "2", "--out", scratch.file("o"),
                                          "--wsload", "/bin/true", "--sbatch-option=-vbnow+1hour", "--sbatch-option=--export=NONE",
                                          "--sbatch-option=-H", "--sbatch-option=--export=ALL,X=1", "--sbatch-option=-Aload"])
        #expect(result.code == .success, "\(result.error)")
        #expect(result.error.contains("warning: --sbatch-option=-vbnow+1hour: the shards start at the launch time plus the "
            + "lead; a job held past it by --begin starts late"), "\(result.error)")
        #expect(result.error.contains("warning: --sbatch-option=--export=NONE: the jobs get only the variables named"))
        #expect(result.error.contains("warning: --sbatch-option=-H: held jobs start when released"))
        #expect(!result.error.contains("--export=ALL,X=1") && !result.error.contains("-Aload"), "\(result.error)")
    }

    @Test("the short-option table is the installed sbatch's: each letter takes a value, is a flag, or is no option")
    func shortOptionTable() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sbatch") else {
            Issue.record("slurm-wlm is not installed: scripts/install-dependencies.sh --test installs it")
            return
        }
        // sbatch reads its options before it talks to any daemon: a configuration naming a controller is enough.
        let scratch = try DistributeScratch(hostile: false)
        let configuration = try scratch.write("slurm.conf", "ClusterName=probe\nSlurmctldHost=localhost\n")
        for letter in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" {
            let run = try await runScript(["sbatch", "-\(letter)"], environment: ["SLURM_CONF": configuration], deadline: .seconds(20))
            let said = run.output + run.errors
            let kind = said.contains("option requires an argument") ? "value" : said.contains("invalid option") ? "none" : "flag"
            let table = SlurmScripts.shortOptionsWithValue[letter] != nil ? "value" : SlurmScripts.shortFlags[letter] != nil
                ? "flag" : "none"
            #expect(kind == table, "-\(letter): sbatch says \(kind) (\(said.prefix(80))), the table \(table)")
        }
        for flag in SlurmScripts.longFlags {
            let run = try await runScript(["sbatch", "--" + flag], environment: ["SLURM_CONF": configuration], deadline: .seconds(20))
            #expect(!(run.output + run.errors).contains("requires an argument"), "--\(flag)")
            #expect(!(run.output + run.errors).contains("unrecognized option"), "--\(flag)")
        }
    }

    @Test("time limits in Slurm's [days-]hours:minutes:seconds, rounded up")
    func timeText() {
        #expect(SlurmScripts.timeText(.seconds(345)) == "00:05:45")
        #expect(SlurmScripts.timeText(.milliseconds(345_001)) == "00:05:46")
        #expect(SlurmScripts.timeText(.seconds(90_061)) == "1-01:01:01")
        #expect(SlurmScripts.timeText(.seconds(3600 * 30)) == "1-06:00:00")
    }

    @Test("the default --wsload is the wsload that wrote the files; a short --time is warned about")
    func defaultExecutable() async throws {
        let scratch = try DistributeScratch(hostile: false)
        let profile = try scratch.write("echo.json", profileText)
        let out = scratch.file("out")
        let run = try await runScript([wsloadExecutable, "distribute", "slurm", profile, "--shards", "3", "--out", out,
                                       "--lead", "1.5s", "--time", "20s"])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("warning: --time 20.0s is shorter than the lead, duration and gracefulStop (16.5s)")
            == false)
        let real = try #require(realpath(wsloadExecutable, nil))
        defer { free(real) }
        let shard = try String(contentsOfFile: out + "/wsload.sbatch", encoding: .utf8)
        #expect(shard.hasPrefix("#!/bin/sh"))
        #expect(shard.contains("\n'\(String(cString: real))' 'run' "), "\(shard)")
        #expect(shard.contains("'--start-at' '@\(out)/launch-time+1500ms'"))
        #expect(try String(contentsOfFile: out + "/submit.sh", encoding: .utf8).contains("--time=00:00:20"))
        let short = try await runScript([wsloadExecutable, "distribute", "slurm", profile, "--shards", "3", "--out", scratch.file("o2"),
                                         "--time", "10s"])
        #expect(short.errors.contains("warning: --time 10.0s is shorter than the lead, duration and gracefulStop (45.0s)"),
                "\(short.errors)")
        #expect(short.errors.contains("warning: the profile's target is embedded"))
    }
}

import Foundation
import JSON
import Testing
import TestSupport
@testable import WSLoadCLI

/// The Containerfile's stages: each `FROM` line and its instructions, continuation lines joined.
private func containerfileStages() throws -> [(from: String, instructions: [String])] {
    let text = try String(contentsOfFile: SourceTree.root.appendingPathComponent("Containerfile").path, encoding: .utf8)
    var instructions: [String] = []
    var pending = ""
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if pending.isEmpty && (trimmed.isEmpty || trimmed.hasPrefix("#")) { continue }
        if trimmed.hasSuffix("\\") {
            pending += trimmed.dropLast() + " "
        } else {
            instructions.append(pending + trimmed)
            pending = ""
        }
    }
    var stages: [(from: String, instructions: [String])] = []
    for instruction in instructions {
        if instruction.hasPrefix("FROM ") {
            stages.append((String(instruction.dropFirst(5)), []))
        } else if !stages.isEmpty {
            stages[stages.count - 1].instructions.append(instruction)
        }
    }
    return stages
}

/// The packages an instruction's `apt-get install` names (its options left out).
private func aptPackages(_ instructions: [String]) -> Set<String> {
    var packages: Set<String> = []
    for instruction in instructions where instruction.hasPrefix("RUN ") {
        for command in instruction.components(separatedBy: "&&") {
            let words = command.split(separator: " ").map(String.init)
            guard let install = words.firstIndex(of: "install"), words[..<install].contains("apt-get") else { continue }
            packages.formUnion(words[(install + 1)...].filter { !$0.hasPrefix("-") })
        }
    }
    return packages
}

/// The build packages `scripts/install-dependencies.sh` installs (its first `packages=(…)`).
private func buildDependencies() throws -> Set<String> {
    let script = try String(contentsOfFile: SourceTree.root.appendingPathComponent("scripts/install-dependencies.sh").path, encoding: .utf8)
    let line = try #require(script.split(separator: "\n").first { $0.hasPrefix("packages=(") })
    return Set(line.dropFirst("packages=(".count).prefix { $0 != ")" }.split(separator: " ").map(String.init))
}

/// Package names of a dpkg relation field (`a (= 1), b | c`), alternatives and versions dropped.
private func relationNames(_ field: String) -> [String] {
    field.split(separator: ",").compactMap { relation in
        relation.split(separator: "|").first?.trimmingCharacters(in: .whitespaces).split(separator: " ").first
            .map { String($0.split(separator: ":").first ?? $0) }
    }
}

@Suite("Containerfile", .timeLimit(.minutes(5)))
struct DistributeContainerfileTests {
    @Test("two stages: the Swift 6.3 toolchain image builds a static-stdlib release wsload, Debian slim runs it")
    func stages() throws {
        let stages = try containerfileStages()
        #expect(stages.map(\.from) == ["swift:6.3-bookworm AS build", "debian:bookworm-slim"])
        let build = stages[0].instructions
        #expect(build.contains { $0.hasPrefix("RUN swift build -c release --product wsload --static-swift-stdlib ") })
        let run = stages[1].instructions
        #expect(run.contains("COPY --from=build /out/wsload /usr/local/bin/wsload"))
        #expect(run.contains("ENTRYPOINT [\"wsload\"]"))
        // The pods' scripts need a POSIX shell and kubectl cp needs tar: both are in debian:bookworm-slim (dash, tar are
        // Essential), nothing to install. The run stage has no toolchain, compiler or package cache left.
        #expect(run.allSatisfy { !$0.contains("swift") || $0.hasPrefix("COPY --from=build") })
        #expect(run.contains { $0.contains("rm -rf /var/lib/apt/lists/*") })
    }

    @Test("the image runs as the non-root user the pods ask for, and wsload raises its open-file limit as that user",
          .enabled(if: getuid() == 0, "setpriv changes user: root only (CI runs as root)"))
    func nonRootUser() async throws {
        let run = try containerfileStages()[1].instructions
        let user = KubernetesManifests.userID
        #expect(run.last { $0.hasPrefix("USER ") } == "USER \(user):\(user)")
        // 150 connections to the embedded server: about 300 sockets, past a soft limit of 256. As a user without
        // privileges, wsload may raise its soft limit to the hard one (4096), as it does as root.
        let scratch = try DistributeScratch(hostile: false)
        chmod(scratch.path, 0o777)
        let profile = try scratch.write("fds.json", echoProfile(name: "fds", duration: "1s", connections: 150, gracefulStop: "2s"))
        func runAsUser(nofile: String, report: String, _ extra: [String] = []) async throws -> ScriptRun {
            try await runScript(["setpriv", "--reuid=\(user)", "--regid=\(user)", "--clear-groups", "prlimit", "--nofile=" + nofile,
                                 wsloadExecutable, "run", profile, "--quiet", "--out", scratch.file(report)] + extra,
                                in: scratch.path)
        }
        let raised = try await runAsUser(nofile: "256:4096", report: "raised.json")
        #expect(raised.status == 0, "\(raised.errors)")
        #expect(FileManager.default.fileExists(atPath: scratch.file("raised.json")))
        // The same run in one process where the hard limit is 256 too: the profile does need the raise. (Without
        // --processes 1 the run would split itself over processes that fit, as a profile too big for the limit does.)
        let capped = try await runAsUser(nofile: "256:256", report: "capped.json", ["--processes", "1"])
        #expect(capped.status != 0 && capped.errors.contains("may open 256 files"), "\(capped.status) \(capped.errors)")
    }

    @Test("the build stage installs what scripts/install-dependencies.sh installs for a build")
    func buildPackages() throws {
        let stages = try containerfileStages()
        #expect(aptPackages(stages[0].instructions) == (try buildDependencies()))
        #expect(stages[0].instructions.contains { $0.contains("--no-install-recommends") })
    }

    @Test("the run stage installs the library package of every -dev package (as dpkg says), and CA certificates")
    func runPackages() async throws {
        let stages = try containerfileStages()
        let runPackages = aptPackages(stages[1].instructions)
        var libraries: Set<String> = []
        for package in try buildDependencies() where package.hasSuffix("-dev") {
            let run = try await runScript(["dpkg-query", "-W", "-f", "${Depends}", package])
            #expect(run.status == 0, "\(package): \(run.errors)")
            libraries.formUnion(relationNames(run.output).filter { !$0.hasSuffix("-dev") })
        }
        #expect(libraries == ["libuv1", "libssl3", "zlib1g"])
        #expect(libraries.isSubset(of: runPackages), "\(runPackages)")
        #expect(runPackages.subtracting(libraries) == ["ca-certificates"])
    }

    @Test("every library a built wsload loads, past the Swift runtime (linked in statically), is the run stage's or the slim image's")
    func loadedLibraries() async throws {
        let runPackages = aptPackages(try containerfileStages()[1].instructions)
        let ldd = try await runScript(["ldd", wsloadExecutable])
        #expect(ldd.status == 0, "\(ldd.errors)")
        let paths = ldd.output.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ").map(String.init)
            if let arrow = words.firstIndex(of: "=>"), arrow + 1 < words.count, words[arrow + 1].hasPrefix("/") { return words[arrow + 1] }
            return words.first.flatMap { $0.hasPrefix("/") ? $0 : nil }
        }
        let swiftRuntime = try #require(paths.first { $0.hasSuffix("/libswiftCore.so") }.map { ($0 as NSString).deletingLastPathComponent })
        let system = paths.filter { !$0.hasPrefix(swiftRuntime + "/") }
        #expect(system.contains { $0.hasSuffix("/libuv.so.1") } && system.contains { $0.hasSuffix("/libssl.so.3") })
        let base = try await slimImagePackages()
        // dpkg knows a library by the path its package ships (/usr/lib on a merged /usr, /lib on older systems): ask
        // for both at once (one scan of dpkg's lists), each answer a line "package:arch: path".
        let candidates = system.flatMap { [$0, $0.hasPrefix("/lib") ? "/usr" + $0 : $0] }
        let search = try await runScript(["dpkg", "-S"] + Array(Set(candidates)), deadline: .seconds(100))
        var owners: [String: String] = [:]
        for line in search.output.split(separator: "\n") {
            guard let separator = line.range(of: ": ") else { continue }
            let package = line[..<separator.lowerBound].split(separator: ":").first.map(String.init)
            owners[String(line[separator.upperBound...])] = package
        }
        for path in system {
            let package = try #require(owners[path] ?? owners["/usr" + path], "no package ships \(path): \(search.errors)")
            #expect(runPackages.contains(package) || base.contains(package), "\(path) is in \(package)")
        }
    }

    @Test("the build copies every directory Package.swift's targets live in, and the context keeps them")
    func buildContext() async throws {
        // A scratch path of its own: the running `swift test` holds the lock on .build.
        let scratch = try DistributeScratch(hostile: false)
        let dump = try await runScript(["swift", "package", "--package-path", SourceTree.root.path, "--scratch-path", scratch.path,
                                        "dump-package"], deadline: .seconds(100))
        #expect(dump.status == 0, "\(dump.errors)")
        let package = try JSONValue(parsing: dump.output)
        let targets = try #require(package.objectValue?["targets"]?.arrayValue)
        let directories = Set(targets.compactMap { target -> String? in
            guard let object = target.objectValue, let name = object["name"]?.stringValue else { return nil }
            let path = object["path"]?.stringValue ?? ((object["type"]?.stringValue == "test" ? "Tests/" : "Sources/") + name)
            return path.split(separator: "/").first.map(String.init)
        })
        #expect(directories == ["Sources", "Tests", "Benchmarks"])
        let build = try containerfileStages()[0].instructions
        for directory in directories { #expect(build.contains("COPY \(directory) \(directory)"), "\(directory)") }
        #expect(build.contains("COPY Package.swift ./"))
        #expect(package.objectValue?["products"]?.arrayValue?.contains { $0.objectValue?["name"] == "wsload" } == true)
        let ignore = try String(contentsOfFile: SourceTree.root.appendingPathComponent(".containerignore").path, encoding: .utf8)
            .split(separator: "\n").map(String.init)
        #expect(ignore.contains("*") && ignore.contains("**/.build"))
        for kept in directories.union(["Package.swift"]) { #expect(ignore.contains("!" + kept), "\(kept)") }
    }

    /// What debian:bookworm-slim holds, as this Debian 12 system says: the Essential packages and apt, with every
    /// package they depend on.
    private func slimImagePackages() async throws -> Set<String> {
        let run = try await runScript(["dpkg-query", "-W", "-f", "${Package}\t${Essential}\t${Pre-Depends}, ${Depends}\n"])
        #expect(run.status == 0, "\(run.errors)")
        var dependencies: [String: [String]] = [:]
        var pending: [String] = ["apt"]
        for line in run.output.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 3 else { continue }
            dependencies[fields[0]] = relationNames(fields[2])
            if fields[1] == "yes" { pending.append(fields[0]) }
        }
        var closure: Set<String> = []
        while let package = pending.popLast() {
            guard closure.insert(package).inserted else { continue }
            pending += dependencies[package] ?? []
        }
        return closure
    }
}

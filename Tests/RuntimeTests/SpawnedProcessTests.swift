import Foundation
import Glibc
import Runtime
import Testing
import TestSupport

/// The tests' children start through ``SpawnedProcess`` (posix_spawn), never Foundation's `Process.run()`, whose scan of
/// `/proc/self/fd` over-reads the heap and crashed the suite on CI (swift-corelibs-foundation #5472).
@Suite(.timeLimit(.minutes(1))) struct SpawnedProcessTests {
    @Test("nothing starts a child with Foundation's Process: not the tests, not Sources")
    func noFoundationProcess() throws {
        let pattern = try Regex(#"(^|[^A-Za-z_.])Process\(\)|\bProcess\.run\("#)
        let files = try SourceTree.files(in: "Tests") + SourceTree.files()
        #expect(files.count > 100, "found only \(files.count) Swift files")
        for (path, text) in files where !path.hasSuffix("SpawnedProcessTests.swift") {
            let code = text.split(separator: "\n").filter { !$0.drop { $0 == " " }.hasPrefix("//") }
            for line in code where line.contains(pattern) {
                Issue.record("\(path) starts a child with Foundation's Process (use SpawnedProcess): \(line)")
            }
        }
    }

    @Test("exit status, the signal that ended a child, and its output to EOF through a pipe")
    func statusSignalAndOutput() throws {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "echo out; echo err >&2; exit 3"]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        #expect(!process.isRunning, "not started yet")
        try process.run()
        #expect(process.processIdentifier > 0)
        // Both reads end: this process closed its copies of the child's write ends.
        #expect(String(decoding: output.fileHandleForReading.readToEndRetryingInterrupts(), as: UTF8.self) == "out\n")
        #expect(String(decoding: errors.fileHandleForReading.readToEndRetryingInterrupts(), as: UTF8.self) == "err\n")
        process.waitUntilExit()
        #expect(!process.isRunning)
        #expect(process.terminationStatus == 3)
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 3, "reaped once: asking again reads the same status")

        let sleeper = SpawnedProcess()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        try sleeper.run()
        #expect(sleeper.isRunning)
        sleeper.terminate()
        sleeper.waitUntilExit()
        #expect(sleeper.terminationReason == .uncaughtSignal)
        #expect(sleeper.terminationStatus == SIGTERM)
    }

    @Test("the environment replaces this process's; the working directory is the one given; stdin comes from a pipe")
    func environmentDirectoryAndInput() throws {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", #"read line; echo "$line|$ONLY|${HOME:-none}|$(pwd)""#]
        process.environment = ["ONLY": "one=two"]
        process.currentDirectoryURL = URL(fileURLWithPath: "/tmp")
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: Data("hello\n".utf8))
        try input.fileHandleForWriting.close()
        let line = String(decoding: output.fileHandleForReading.readToEndRetryingInterrupts(), as: UTF8.self)
        process.waitUntilExit()
        #expect(line == "hello|one=two|none|/tmp\n")
        #expect(process.terminationStatus == 0)

        let quiet = SpawnedProcess()  // FileHandle.nullDevice (no descriptor of its own) is /dev/null
        quiet.executableURL = URL(fileURLWithPath: "/bin/sh")
        quiet.arguments = ["-c", "test \"$(readlink /proc/self/fd/0)\" = /dev/null && echo through"]
        quiet.standardInput = FileHandle.nullDevice
        let quietOutput = Pipe()
        quiet.standardOutput = quietOutput
        try quiet.run()
        #expect(String(decoding: quietOutput.fileHandleForReading.readToEndRetryingInterrupts(), as: UTF8.self) == "through\n")
        quiet.waitUntilExit()
        #expect(quiet.terminationStatus == 0)

        let leader = SpawnedProcess()  // a process group of its own, as Foundation's children
        leader.executableURL = URL(fileURLWithPath: "/bin/sh")
        leader.arguments = ["-c", "test \"$(ps -o pgid= -p $$ | tr -d ' ')\" = \"$$\""]
        try leader.run()
        leader.waitUntilExit()
        #expect(leader.terminationStatus == 0, "the child leads its own process group")
    }

    @Test("a spawn with 3,000 descriptors open (where Foundation's scan reads past short records) starts and ends")
    func manyOpenDescriptors() throws {
        var pipes: [ProcessPipe] = []  // closed as they are released, after the spawns
        for _ in 0..<1500 {
            guard let pipe = try? ProcessPipe() else { break }
            pipes.append(pipe)
        }
        #expect(pipes.count * 2 >= 2000, "opened \(pipes.count * 2) descriptors")
        for _ in 0..<20 {
            let process = SpawnedProcess()
            process.executableURL = URL(fileURLWithPath: "/bin/true")
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        withExtendedLifetime(pipes) {}
    }
}

/// ``ProcessSpawn``'s descriptor map, with sources where its moves land: each child descriptor is the one asked for.
@Suite(.timeLimit(.minutes(1))) struct ProcessSpawnDescriptorTests {
    @Test("a source just above the highest target is moved before another move overwrites it")
    func sourceAboveTargets() throws {
        let output = try ProcessPipe()
        let errors = try ProcessPipe()
        // The highest target sits right below stderr's source, so the first move's landing place is that source.
        let target = errors.writeEnd - 1
        #expect(target > 2 && target != output.writeEnd, "pipe ends \(output.writeEnd) and \(errors.writeEnd)")
        let pid = try ProcessSpawn.spawn("/bin/sh", arguments: ["sh", "-c", "echo out; echo err >&2"], descriptors: [
            1: .duplicate(output.writeEnd), 2: .duplicate(errors.writeEnd), target: .null(isWritable: false),
        ])
        ProcessPipe.close(output.writeEnd)
        ProcessPipe.close(errors.writeEnd)
        var outLines = DescriptorLines(descriptor: output.readEnd)
        var errLines = DescriptorLines(descriptor: errors.readEnd)
        var said: ([String], [String]) = ([], [])
        while !outLines.isAtEnd { said.0 += outLines.readLines() }
        while !errLines.isAtEnd { said.1 += errLines.readLines() }
        var termination: ProcessSpawn.Termination?
        while termination == nil {
            termination = ProcessSpawn.reap(pid)
            usleep(2_000)
        }
        #expect(said.0 == ["out"])
        #expect(said.1 == ["err"])
        #expect(termination == .exited(0))
    }
}

import Foundation
import LoadEngine
import Profile
import Runtime
import Testing
import TestSupport

/// A conformance that overrides nothing: what the seams do when a test bends none of them.
private struct Untouched: ReconnectFaults, MessageFaults, TransferFaults, RunLevelFaults {}

/// The oracle's faults are injected, never built in: Sources has seams (package protocols whose defaults are
/// the honest behaviour) and no fault logic; the switches and the code that misbehaves live in the tests
/// (`FaultSwitches`). These rules fail if fault behaviour creeps back into Sources or onto a per-message path.
@Suite("Fault seams: nothing that breaks wsload lives in Sources", .timeLimit(.minutes(1)))
struct FaultSeamTests {
    @Test("Sources declare no fault switch: not the type, not one of its switches, not the client's")
    func noSwitchesInSources() throws {
        let switches = Mirror(reflecting: FaultSwitches()).children.compactMap(\.label)
        #expect(switches.count == 22, "FaultSwitches has \(switches.count) switches: \(switches)")
        let banned = ["FaultSwitches", "ClientFaults", "isConnectedBeforeHandshake", "isDeliveringAfterClose",
                      "isForgettingAbnormalCloseReason", "flipFirstByte", "hasDeliveredAfterClose"] + switches
        let patterns = try banned.map { (name: $0, pattern: try Regex("\\b\($0)\\b")) }
        let files = try SourceTree.files()
        #expect(files.count > 50, "found only \(files.count) source files under \(SourceTree.root.path)")
        for (path, text) in files {
            for (name, pattern) in patterns where text.contains(name) {
                let mentions = text.contains(pattern)
                #expect(!mentions, "\(path) mentions \(name): fault behaviour belongs in the tests' conformance")
            }
        }
    }

    @Test("no per-message or per-frame path consults a fault: ConnectionRun only in its init, the read loop never")
    func noFaultOnThePerMessagePath() throws {
        let engine = try #require(try SourceTree.files(under: "LoadEngine").first { $0.path.hasSuffix("/ConnectionRun.swift") })
        let text = engine.text
        let body = try #require(text.range(of: "final class ConnectionRun"), "ConnectionRun moved")
        let initializer = try #require(text.range(of: "    init(", range: body.upperBound..<text.endIndex))
        let initializerEnd = try #require(text.range(of: "\n    }\n", range: initializer.upperBound..<text.endIndex))
        let outside = String(text[body.upperBound..<initializer.lowerBound]) + String(text[initializerEnd.upperBound...])
        #expect(!outside.contains("faults"), "ConnectionRun consults a fault outside its initializer (once per connection)")
        let perMessageFiles = ["+Reading.swift", "+Sending.swift", "+Heartbeats.swift", "+Delivery.swift"]
        let readSide = try SourceTree.files(under: "WebSocketIO") + SourceTree.files(under: "Clients").filter { file in
            perMessageFiles.contains { file.path.hasSuffix($0) }
        }
        #expect(readSide.count >= 5, "\(readSide.map(\.path))")
        for (path, text) in readSide {
            #expect(!text.contains("faults"), "\(path) consults a fault on the per-message path")
        }
    }

    @Test("each seam's defaults are the honest behaviour")
    func defaultsAreHonest() async {
        let honest = Untouched()
        for maximum in [0, 1, 5] { #expect(honest.maximumAttempts(allowing: maximum) == maximum) }
        #expect(!honest.connectsThoughStoppedBeforeStart())
        for number in 1...3 { #expect(!honest.connectsAgain(afterOpening: number)) }
        #expect(honest.tellsLifecycleOfSuccess())
        for earlier in 0...2 { #expect(!honest.connectsAgainAfterStop(earlier: earlier)) }
        for delay in [Duration.zero, .milliseconds(100), .milliseconds(1500), .seconds(3)] {
            #expect(honest.backoff(drawn: delay) == delay)
            #expect(honest.wait(forBackoff: delay) == delay)
        }
        #expect(honest.echoRequestNotSent() == nil && honest.pushedMessageLost() == nil)
        for slot in 0...1 {
            for sequence in 0...1 { #expect(honest.completionsDelivered(slot: slot, transfer: sequence) == 1) }
        }
        #expect(honest.destinationAfterInterruption(of: "/tmp/d.bin") == nil)
        #expect(honest.removes(.partialDownload, at: "/tmp/d.bin.wsload-part"))
        #expect(honest.removes(.multipartBody, at: "/tmp/u.multipart.tmp"))
        #expect(await honest.handlesWillBeCounted(on: []) == nil)
    }

    @Test("an honest partial file is left as it was when the download resumes")
    func honestResumeKeepsTheFile() throws {
        let path = NSTemporaryDirectory() + "wsload-seam-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).wsload-part"
        let bytes: [UInt8] = [0x41, 0x42, 0x43]
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        defer { try? FileManager.default.removeItem(atPath: path) }  // scratch; a leftover in /tmp is harmless
        Untouched().willResume(fromPartialFile: path)
        FaultSwitches().willResume(fromPartialFile: path)
        #expect(FileManager.default.contents(atPath: path).map(Array.init) == bytes)
        var corrupting = FaultSwitches()
        corrupting.corruptPartialFile = true
        corrupting.willResume(fromPartialFile: path)  // the switch does bend it: the test above can fail
        #expect(FileManager.default.contents(atPath: path).map(Array.init) == [~0x41, 0x42, 0x43])
    }

    @Test("real runs inject nothing: LoadRun's default, and FaultSwitches all off")
    func realRunsAreHonest() throws {
        let run = LoadRun(profile: try profile("""
            {"version": 1, "name": "honest", "target": "ws://127.0.0.1:9/", "duration": "1s",
             "scenarios": [{"name": "s", "pattern": "echo", "connections": 1}]}
            """))
        #expect(run.faults.isHonest)
        #expect(RunFaults().isHonest && RunFaults(FaultSwitches()).isHonest)
        var one = FaultSwitches()
        one.leakHandle = true
        #expect(!RunFaults(one).isHonest)
    }
}

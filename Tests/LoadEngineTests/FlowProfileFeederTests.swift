import Foundation
import JSON
import Profile
import Runtime
import Testing
import WSLoadCLI

private func readFile(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

private func write(_ text: String, _ name: String, in directory: URL) throws -> String {
    let url = directory.appendingPathComponent(name)
    try Data(text.utf8).write(to: url)
    return url.path
}

/// A profile reading feeder `users` (CSV at `file`, `mode`) from scenarios of these connection counts.
private func usersProfile(file: String, mode: String = "sequential", connections: [Int] = [3], template: String = "${users.token}") -> String {
    flowProfile(data: #""users": {"file": "\#(file)", "mode": "\#(mode)", "secret": ["token"]}"#,
                connections.enumerated().map { index, count in
                    #"{"name": "s\#(index)", "pattern": "flow", "connections": \#(count), "steps": [{"send": {"text": "\#(template)"}}]}"#
                }.joined(separator: ","))
}

private func decode(_ text: String) throws -> Profile { try ProfileDecoder.decode(Array(text.utf8)) }

@Suite("Flow profiles: feeders", .timeLimit(.minutes(2)))
struct FlowProfileFeederTests {
    @Test("CSV and JSON lines files load into tables the templates' columns are checked against")
    func loadsBoth() throws {
        let directory = try feederDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }  // a leftover temp directory harms nothing
        let csv = try write("name,token\r\nann,t1\r\n\"b,ob\",t2\n", "users.csv", in: directory)
        let jsonl = try write("{\"room\": \"r1\", \"n\": 1}\n\n{\"room\": \"r2\"}\n", "rooms.jsonl", in: directory)
        let profile = try decode(flowProfile(
            data: #""users": {"file": "\#(csv)"}, "rooms": {"file": "\#(jsonl)"}"#,
            rawFlow(#"[{"send": {"text": "${users.name} ${rooms.room} ${rooms.n}"}}]"#)))
        let tables = try FeederLoader.load(profile, read: readFile).get()
        #expect(tables.tables["users"]?.columns == ["name", "token"])
        #expect(tables.tables["users"]?.rowCount == 2)
        #expect(tables.tables["users"]?.value(row: 1, column: "name") == .string("b,ob"))
        #expect(tables.tables["rooms"]?.columns == ["room", "n"])
        #expect(tables.tables["rooms"]?.value(row: 1, column: "n") == nil)
    }

    @Test("a missing file is exit 66 naming data.users.file")
    func missingFile() throws {
        let profile = try decode(usersProfile(file: "/nonexistent/wsload/users.csv"))
        guard case .failure(let error) = FeederLoader.load(profile, read: readFile) else { Issue.record("loaded"); return }
        #expect(error.exitCode == 66)
        #expect(error.problems.map(\.path) == ["data.users.file"])
        #expect(error.description.hasPrefix("data.users.file: cannot read /nonexistent/wsload/users.csv: "))
    }

    @Test("a unique feeder with fewer rows than the connections reading it is exit 65, naming rows and connections")
    func shortUnique() throws {
        let directory = try feederDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }  // a leftover temp directory harms nothing
        let file = try write("token\nSECRET-1\nSECRET-2\nSECRET-3\nSECRET-4\n", "users.csv", in: directory)
        // 4 rows: enough for one scenario of 4, not for 3 + 2 across two scenarios.
        #expect(throws: Never.self) { try FeederLoader.load(try decode(usersProfile(file: file, mode: "unique", connections: [4])), read: readFile).get() }
        let profile = try decode(usersProfile(file: file, mode: "unique", connections: [3, 2]))
        guard case .failure(let error) = FeederLoader.load(profile, read: readFile) else { Issue.record("loaded"); return }
        #expect(error.exitCode == 65)
        #expect(error.description == "data.users.file: \(file) has 4 rows; mode unique needs one per connection: 5 (scenarios s0, s1)")
        #expect(!error.description.contains("SECRET"))
    }

    @Test("a template naming a column the file lacks is exit 65 at the template's path")
    func unknownColumn() throws {
        let directory = try feederDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }  // a leftover temp directory harms nothing
        let file = try write("token\nSECRET-1\n", "users.csv", in: directory)
        let profile = try decode(usersProfile(file: file, template: "${users.tokn}"))
        guard case .failure(let error) = FeederLoader.load(profile, read: readFile) else { Issue.record("loaded"); return }
        #expect(error.exitCode == 65)
        #expect(error.description == "scenarios[0].steps[0].send.text: \(file) (data.users) has no column tokn")
    }

    @Test("a malformed row names file:line and never the secret value")
    func malformedRow() throws {
        let directory = try feederDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }  // a leftover temp directory harms nothing
        let file = try write("name,token\nann,SECRET-1\nbob,SECRET-2,extra\n\"cy,SECRET-3\n", "users.csv", in: directory)
        let profile = try decode(usersProfile(file: file))
        guard case .failure(let error) = FeederLoader.load(profile, read: readFile) else { Issue.record("loaded"); return }
        #expect(error.exitCode == 65)
        #expect(error.description.hasPrefix("data.users.file: \(file):3"), "\(error)")
        #expect(!error.description.contains("SECRET"), "\(error)")
    }

    @Test("rows bind sequentially, uniquely across scenarios, or at random within the table")
    func binding() throws {
        let directory = try feederDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }  // a leftover temp directory harms nothing
        let file = try write("token\n" + (0..<10).map { "t\($0)" }.joined(separator: "\n") + "\n", "users.csv", in: directory)
        var random = SystemRandomNumberGenerator()
        for mode in ["sequential", "unique", "random"] {
            var profile = try decode(usersProfile(file: file, mode: mode, connections: [3, 4]))
            profile.feederTables = try FeederLoader.load(profile, read: readFile).get()
            let binding = FeederBinding(profile: profile)
            let rows = (0..<2).flatMap { scenario in
                (0..<(scenario == 0 ? 3 : 4)).map { binding.row(feeder: "users", scenarioIndex: scenario, connection: $0, random: &random) }
            }
            switch mode {
            case "sequential": #expect(rows == [0, 1, 2, 0, 1, 2, 3])
            case "unique": #expect(rows == [0, 1, 2, 3, 4, 5, 6])
            default: #expect(rows.allSatisfy { $0.map { (0..<10).contains($0) } == true })
            }
        }
    }

    @Test("unique rows: the shards of a two-scenario run bind disjoint rows that cover the table")
    func uniqueAcrossShards() throws {
        let directory = try feederDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }  // a leftover temp directory harms nothing
        let file = try write("token\n" + (0..<200).map { "t\($0)" }.joined(separator: "\n") + "\n", "users.csv", in: directory)
        var profile = try decode(usersProfile(file: file, mode: "unique", connections: [100, 100]))
        profile.feederTables = try FeederLoader.load(profile, read: readFile).get()
        // As the engine binds: from the unsharded profile, with each shard's run-wide `${vu}` (its offset + n).
        let binding = FeederBinding(profile: profile)
        var random = SystemRandomNumberGenerator()
        var rowsByShard: [[Int]] = []
        for index in 0..<2 {
            let shard = Shard(index: index, count: 2)
            var rows: [Int] = []
            for scenario in 0..<2 {
                let offset = 100 * shard.index / shard.count
                for n in 0..<shard.share(of: 100) {
                    let row = binding.row(feeder: "users", scenarioIndex: scenario, connection: offset + n, random: &random)
                    rows.append(try #require(row))
                }
            }
            rowsByShard.append(rows)
        }
        #expect(Set(rowsByShard[0]).isDisjoint(with: rowsByShard[1]))
        #expect((rowsByShard[0] + rowsByShard[1]).sorted() == Array(0..<200))
        // A connection number past the scenario's connections (a ramp that starts connections again) has no row:
        // never another scenario's, never a wrapped one.
        #expect(binding.row(feeder: "users", scenarioIndex: 0, connection: 100, random: &random) == nil)
        #expect(binding.row(feeder: "users", scenarioIndex: 1, connection: 100, random: &random) == nil)
        #expect(binding.row(feeder: "users", scenarioIndex: 1, connection: 99, random: &random) == 199)
        #expect(binding.row(feeder: "users", scenarioIndex: 2, connection: 0, random: &random) == nil)
    }

    @Test("wsload validate reads the feeders: 0 when good, 66 for a missing file, 65 for a short unique one")
    func validateCommand() async throws {
        let directory = try feederDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }  // a leftover temp directory harms nothing
        let file = try write("token\nSECRET-1\nSECRET-2\n", "users.csv", in: directory)
        func validate(_ profile: String) async throws -> (code: Int32, error: String) {
            let path = try write(profile, "profile-\(UUID().uuidString).json", in: directory)
            let error = Lock("")
            let code = await WSLoad.main(arguments: ["validate", path], output: CommandOutput(
                writeOutput: { _ in }, writeError: { text in error.withLock { $0 += text } }))
            return (code.rawValue, error.withLock { $0 })
        }
        #expect(try await validate(usersProfile(file: file, mode: "unique", connections: [2])).code == 0)
        let missing = try await validate(usersProfile(file: directory.appendingPathComponent("nope.csv").path))
        #expect(missing.code == 66)
        #expect(missing.error.contains("data.users.file: cannot read "))
        let short = try await validate(usersProfile(file: file, mode: "unique", connections: [3]))
        #expect(short.code == 65)
        #expect(short.error.contains("data.users.file: \(file) has 2 rows; mode unique needs one per connection: 3"))
        #expect(!short.error.contains("SECRET"))
    }
}

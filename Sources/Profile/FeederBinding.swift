import Flow

/// Which feeder row a connection binds (for its lifetime): `sequential` takes row `connection % rows`, `random` a
/// draw from the connection's seeded generator, `unique` row `offset + connection`, where a scenario's offset is the
/// connections of the earlier scenarios reading the same feeder (so rows are unique across the run). Pure: the engine
/// passes the connection's scenario-local number (shard-aware) and its generator.
package struct FeederBinding: Sendable {
    private var rowCounts: [String: Int] = [:]
    private var modes: [String: FeederSource.Mode] = [:]
    /// By feeder, the first row of each scenario (by scenario index) for `unique`.
    private var offsets: [String: [Int: Int]] = [:]

    package init(profile: Profile) {
        for source in profile.data {
            rowCounts[source.name] = profile.feederTables.tables[source.name]?.rowCount ?? 0
            modes[source.name] = source.mode
            var offset = 0
            var scenarioOffsets: [Int: Int] = [:]
            for (index, scenario) in profile.scenarios.enumerated()
            where scenario.websocket.flow?.feeders.contains(source.name) == true {
                scenarioOffsets[index] = offset
                offset = offset.addingReportingOverflow(scenario.websocket.connections).partialValue
            }
            offsets[source.name] = scenarioOffsets
        }
    }

    /// The row of `feeder` connection `connection` (≥ 0, scenario-local) of scenario `scenarioIndex` binds; 0 for a
    /// feeder with no rows (the loader refuses those before a run). Never traps: a `unique` row past the end (a
    /// table the loader did not check) wraps.
    package func row(feeder: String, scenarioIndex: Int, connection: Int, random: inout some RandomNumberGenerator) -> Int {
        guard let rows = rowCounts[feeder], rows > 0 else { return 0 }
        let connection = max(connection, 0)
        switch modes[feeder] ?? .sequential {
        case .sequential: return connection % rows
        case .random: return Int.random(in: 0..<rows, using: &random)
        case .unique:
            let (row, overflow) = (offsets[feeder]?[scenarioIndex] ?? 0).addingReportingOverflow(connection)
            return overflow ? connection % rows : row % rows
        }
    }
}

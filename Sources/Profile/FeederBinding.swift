import Flow

/// Which feeder row a connection binds (for its lifetime): `sequential` takes row `connection % rows`, `random` a
/// draw from the connection's seeded generator, `unique` row `offset + connection`, where a scenario's offset is the
/// connections of the earlier scenarios reading the same feeder (so rows are unique across the run). Pure: the engine
/// passes the connection's run-wide number (`${vu}`: the same in every shard as in the unsharded run) and its
/// generator.
///
/// Build it from the **unsharded** profile: the offsets are the whole run's connection counts, so the shards of a run
/// bind disjoint rows (a slice's counts would give every shard the same offsets while `${vu}` is run-wide).
package struct FeederBinding: Sendable {
    private var rowCounts: [String: Int] = [:]
    private var modes: [String: FeederSource.Mode] = [:]
    /// By feeder, the first row of each scenario (by scenario index) for `unique`.
    private var offsets: [String: [Int: Int]] = [:]
    /// By scenario index, its connections in the unsharded run: a `unique` row exists only for `${vu}` below it.
    private var connections: [Int] = []

    /// - Parameter profile: the unsharded profile (not a shard's slice), with its feeder tables loaded.
    package init(profile: Profile) {
        connections = profile.scenarios.map(\.websocket.connections)
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

    /// The row of `feeder` connection `connection` (`${vu}`, ≥ 0) of scenario `scenarioIndex` binds; 0 for a feeder
    /// with no rows (the loader refuses those before a run).
    ///
    /// nil: a `unique` feeder has no row for this connection — `connection` is not below the scenario's (unsharded)
    /// connections (a ramp that starts connections again past them), or the row is past the table (one the loader
    /// did not check). Taking another scenario's row, or wrapping, would break `unique`; the engine leaves the feeder
    /// unbound, so a template reading it fails as `template_undefined`.
    package func row(feeder: String, scenarioIndex: Int, connection: Int, random: inout some RandomNumberGenerator) -> Int? {
        guard let rows = rowCounts[feeder], rows > 0 else { return 0 }
        let connection = max(connection, 0)
        switch modes[feeder] ?? .sequential {
        case .sequential: return connection % rows
        case .random: return Int.random(in: 0..<rows, using: &random)
        case .unique:
            guard scenarioIndex >= 0, scenarioIndex < connections.count, connection < connections[scenarioIndex] else {
                return nil
            }
            let (row, overflow) = (offsets[feeder]?[scenarioIndex] ?? 0).addingReportingOverflow(connection)
            return overflow || row >= rows ? nil : row
        }
    }
}

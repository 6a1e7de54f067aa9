import JSON

/// Every feeder of a run, loaded from its file (`data.<name>`): connections bind rows from it. Loaded once per
/// run, shared by every loop; a profile decoded from a report has none.
package struct FeederTables: Sendable {
    /// By feeder name (a key of the profile's `data`).
    package var tables: [String: FeederTable]

    package init(tables: [String: FeederTable] = [:]) { self.tables = tables }
}

/// One feeder's rows: a header of column names and the rows' values (CSV values are strings; JSON lines keep
/// their JSON types).
package struct FeederTable: Sendable {
    package var columns: [String]
    /// Row-major values, `columns.count` per row; nil: the row has no value for the column (JSON lines).
    package var values: [JSONValue?]

    package init(columns: [String], values: [JSONValue?]) {
        self.columns = columns
        self.values = values
    }

    package var rowCount: Int { columns.isEmpty ? 0 : values.count / columns.count }
}

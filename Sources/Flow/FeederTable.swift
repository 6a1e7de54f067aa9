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

extension FeederTable {
    /// The largest feeder file a run reads (64 MiB); the parsers refuse larger input too.
    package static let maximumFileSize = 64 << 20
    /// The most columns a feeder has (a JSON lines file's union of keys, a CSV header).
    package static let maximumColumns = 1024
    /// The most cells (rows × columns) a feeder holds: its values are stored densely, so a JSON lines file of many
    /// distinct keys would otherwise ask for rows × columns values (terabytes) from a few megabytes of input.
    package static let maximumCells = 1 << 26

    /// The error for a table that reached `rows` × `columns` cells at `line`, when that is over ``maximumCells``.
    package static func checkCells(rows: Int, columns: Int, file: String, line: Int) -> FeederError? {
        let (cells, overflow) = rows.multipliedReportingOverflow(by: columns)
        guard overflow || cells > maximumCells else { return nil }
        return FeederError(file: file, line: line, message: "\(rows) rows of \(columns) columns are over the limit of "
            + "\(maximumCells) values (rows × columns)")
    }

    /// The position of `column` in ``columns``, or nil.
    package func columnIndex(_ column: String) -> Int? { columns.firstIndex(of: column) }

    /// The value of `column` in row `row` (0-based); nil for a row or column the table lacks, or a JSON lines row
    /// without the key. CSV values are strings.
    package func value(row: Int, column: String) -> JSONValue? {
        guard let index = columnIndex(column) else { return nil }
        return value(row: row, columnIndex: index)
    }

    /// The value at row `row`, column position `columnIndex` (see ``columnIndex(_:)``); nil when out of range.
    package func value(row: Int, columnIndex: Int) -> JSONValue? {
        guard row >= 0, row < rowCount, columnIndex >= 0, columnIndex < columns.count else { return nil }
        let (position, overflow) = row.multipliedReportingOverflow(by: columns.count)
        guard !overflow, position + columnIndex < values.count else { return nil }
        return values[position + columnIndex]
    }
}

/// Why a feeder file cannot be used, and where: `file:line` (1-based), and for CSV the 1-based field number.
/// Messages never quote a field's value (a column may be secret); they name the line and field.
package struct FeederError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file as the profile names it.
    package var file: String
    /// The 1-based line; 0 when the error is about the whole file (its size).
    package var line: Int
    /// CSV: the 1-based field number in the row; JSON lines: the 1-based character column; nil: the whole line.
    package var column: Int?
    package var message: String

    package init(file: String, line: Int, column: Int? = nil, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    package var description: String {
        guard line > 0 else { return "\(file): \(message)" }
        guard let column else { return "\(file):\(line): \(message)" }
        return "\(file):\(line):\(column): \(message)"
    }
}

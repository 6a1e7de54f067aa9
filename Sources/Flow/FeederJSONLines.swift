import JSON

/// JSON lines for feeders: one JSON object per line (LF or CRLF), blank lines skipped. The columns are the union
/// of the objects' keys in first-seen order; a row without a key has no value (nil) for that column.
extension FeederTable {
    /// The nesting a row's value may have.
    package static let maximumJSONDepth = 64

    package static func parse(jsonLines bytes: [UInt8], file: String) -> Result<FeederTable, FeederError> {
        guard bytes.count <= maximumFileSize else {
            return .failure(FeederError(
                file: file, line: 0, message: "the file is \(bytes.count) bytes, over the \(maximumFileSize >> 20) MiB limit"))
        }
        var rows: [JSONObject] = []
        var columns: [String] = []
        var known: Set<String> = []
        var lineStart = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var lineNumber = 1
        while lineStart < bytes.count {
            let lineEnd = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            defer {
                lineStart = lineEnd + 1
                lineNumber += 1
            }
            let line = bytes[lineStart..<lineEnd]
            guard line.contains(where: { ![0x20, 0x09, 0x0D].contains($0) }) else { continue }
            let value: JSONValue
            do {
                value = try JSONValue(parsing: line, maximumDepth: maximumJSONDepth)
            } catch {
                return .failure(FeederError(file: file, line: lineNumber, column: error.column, message: error.reason))
            }
            guard case .object(let object) = value else {
                return .failure(FeederError(file: file, line: lineNumber,
                                            message: "a row must be a JSON object, not \(value.kindName)"))
            }
            for key in object.keys where known.insert(key).inserted {
                guard columns.count < maximumColumns else {
                    return .failure(FeederError(file: file, line: lineNumber, message: "the row adds column \(columns.count + 1); "
                        + "a feeder has at most \(maximumColumns) columns"))
                }
                columns.append(key)
            }
            rows.append(object)
            if let failure = checkCells(rows: rows.count, columns: columns.count, file: file, line: lineNumber) {
                return .failure(failure)
            }
        }
        guard !rows.isEmpty else { return .failure(FeederError(file: file, line: 1, message: "no rows")) }
        guard !columns.isEmpty else {
            return .failure(FeederError(file: file, line: 1, message: "no row has a key (every object is empty)"))
        }
        var values: [JSONValue?] = []
        values.reserveCapacity(rows.count * columns.count)
        for row in rows {
            for column in columns { values.append(row[column]) }
        }
        return .success(FeederTable(columns: columns, values: values))
    }
}

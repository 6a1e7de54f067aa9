import JSON

/// RFC 4180 CSV for feeders: a header row of unique, non-empty column names, then rows of the header's width.
/// Fields may be quoted (`"a, b"`, `""` for a quote, line breaks inside); lines end in CRLF or LF; the final line
/// break is optional; a leading UTF-8 BOM is skipped; empty lines are skipped (write `""` for a row whose single
/// field is empty). A quote inside an unquoted field is an error, as is text that is not UTF-8.
extension FeederTable {
    package static func parse(csv bytes: [UInt8], file: String) -> Result<FeederTable, FeederError> {
        guard bytes.count <= maximumFileSize else {
            return .failure(FeederError(
                file: file, line: 0, message: "the file is \(bytes.count) bytes, over the \(maximumFileSize >> 20) MiB limit"))
        }
        var reader = CSVReader(bytes: bytes, file: file)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { reader.position = 3 }
        var columns: [String] = []
        var values: [JSONValue?] = []
        while true {
            let recordLine = reader.line
            let record: [String]?
            switch reader.nextRecord() {
            case .failure(let error): return .failure(error)
            case .success(let next): record = next
            }
            guard let record else { break }
            if columns.isEmpty {
                for (index, name) in record.enumerated() {
                    guard !name.isEmpty else {
                        return .failure(FeederError(file: file, line: recordLine, column: index + 1,
                                                    message: "the header's column \(index + 1) has no name"))
                    }
                    guard !columns.contains(name) else {
                        return .failure(FeederError(file: file, line: recordLine, column: index + 1,
                                                    message: "the header names column \(name) twice"))
                    }
                    guard columns.count < maximumColumns else {
                        return .failure(FeederError(file: file, line: recordLine, column: index + 1,
                                                    message: "the header has over \(maximumColumns) columns"))
                    }
                    columns.append(name)
                }
                continue
            }
            guard record.count == columns.count else {
                return .failure(FeederError(
                    file: file, line: recordLine, column: min(record.count, columns.count) + 1,
                    message: "the row has \(record.count) fields, the header \(columns.count)"))
            }
            if let failure = checkCells(rows: values.count / columns.count + 1, columns: columns.count, file: file, line: recordLine) {
                return .failure(failure)
            }
            values.append(contentsOf: record.map { .string($0) })
        }
        guard !columns.isEmpty else { return .failure(FeederError(file: file, line: 1, message: "no header row")) }
        return .success(FeederTable(columns: columns, values: values))
    }
}

/// The record scanner: one record (a list of fields) per call, tracking the 1-based line.
private struct CSVReader {
    let bytes: [UInt8]
    let file: String
    var position = 0
    var line = 1

    init(bytes: [UInt8], file: String) {
        self.bytes = bytes
        self.file = file
    }

    private static let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), lineFeed = UInt8(ascii: "\n")
    private static let carriageReturn = UInt8(ascii: "\r")

    /// The next non-empty record, or nil at the end of the file.
    mutating func nextRecord() -> Result<[String]?, FeederError> {
        while position < bytes.count, atLineBreak() { consumeLineBreak() }
        guard position < bytes.count else { return .success(nil) }
        var fields: [String] = []
        while true {
            let field: String
            switch nextField(number: fields.count + 1) {
            case .failure(let error): return .failure(error)
            case .success(let next): field = next
            }
            fields.append(field)
            if position == bytes.count { return .success(fields) }
            if bytes[position] == Self.comma {
                position += 1
                continue
            }
            // nextField stops only at a comma, a line break or the end.
            consumeLineBreak()
            return .success(fields)
        }
    }

    private func atLineBreak() -> Bool {
        bytes[position] == Self.lineFeed
            || (bytes[position] == Self.carriageReturn && position + 1 < bytes.count && bytes[position + 1] == Self.lineFeed)
    }

    private mutating func consumeLineBreak() {
        position += bytes[position] == Self.carriageReturn ? 2 : 1
        line += 1
    }

    private func failure(_ message: String, field: Int, line: Int? = nil) -> Result<String, FeederError> {
        .failure(FeederError(file: file, line: line ?? self.line, column: field, message: message))
    }

    private mutating func nextField(number: Int) -> Result<String, FeederError> {
        let start = position
        if position < bytes.count, bytes[position] == Self.quote {
            let startLine = line
            var field: [UInt8] = []
            position += 1
            while true {
                guard position < bytes.count else {
                    return failure("a quoted field opened here is never closed", field: number, line: startLine)
                }
                let byte = bytes[position]
                if byte == Self.quote {
                    if position + 1 < bytes.count, bytes[position + 1] == Self.quote {
                        field.append(Self.quote)
                        position += 2
                        continue
                    }
                    position += 1
                    break
                }
                if byte == Self.lineFeed { line += 1 }
                field.append(byte)
                position += 1
            }
            guard position == bytes.count || bytes[position] == Self.comma || atLineBreak() else {
                return failure("a closing quote must end its field (write \"\" for a quote)", field: number)
            }
            return decode(field[...], field: number)
        }
        // One scan to the next byte that ends or breaks the field.
        position = bytes[position...].firstIndex { byte in
            byte == Self.comma || byte == Self.lineFeed || byte == Self.carriageReturn || byte == Self.quote
        } ?? bytes.count
        if position < bytes.count, bytes[position] == Self.quote {
            return failure("a quote inside an unquoted field (quote the whole field, and write \"\" for a quote)",
                           field: number)
        }
        if position < bytes.count, bytes[position] == Self.carriageReturn, !atLineBreak() {
            return failure("a carriage return not followed by a line feed", field: number)
        }
        return decode(bytes[start..<position], field: number)
    }

    private func decode(_ field: ArraySlice<UInt8>, field number: Int) -> Result<String, FeederError> {
        guard let text = String(validating: field, as: UTF8.self) else {
            return failure("the field is not valid UTF-8", field: number)
        }
        return .success(text)
    }
}

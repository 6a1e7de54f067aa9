import Flow
import JSON
import Testing

@Suite("Feeder tables", .timeLimit(.minutes(2)))
struct FeederTests {
    func csv(_ text: String) -> Result<FeederTable, FeederError> { FeederTable.parse(csv: Array(text.utf8), file: "users.csv") }
    func jsonl(_ text: String) -> Result<FeederTable, FeederError> {
        FeederTable.parse(jsonLines: Array(text.utf8), file: "users.jsonl")
    }
    func rows(_ table: FeederTable?) -> [[JSONValue?]] {
        guard let table else { return [] }
        return (0..<table.rowCount).map { row in table.columns.map { table.value(row: row, column: $0) } }
    }

    @Test("RFC 4180: quoted fields with commas, quotes and line breaks; CRLF or LF; the last line break optional")
    func csvQuoting() {
        let table = csv("name,token\r\n\"Doe, Ann\",\"a\"\"b\"\r\nbob,\"two\nlines\"\n\"\",x").success
        #expect(table?.columns == ["name", "token"])
        #expect(rows(table) == [["Doe, Ann", "a\"b"], ["bob", "two\nlines"], ["", "x"]])
        #expect(rows(csv("a\n1\n").success) == [["1"]])
        #expect(rows(csv("a\n1").success) == [["1"]])
        #expect(rows(csv("\u{FEFF}a,b\n1,2").success) == [["1", "2"]])
        #expect(rows(csv("a,b\n\n1,2\n\n\r\n").success) == [["1", "2"]])
        #expect(rows(csv("a,b\n,\n").success) == [["", ""]])
        #expect(rows(csv("a\n\"\"\n").success) == [[""]])
        #expect(csv("a,b").success?.rowCount == 0)
        #expect(rows(csv("a\né😀\n").success) == [["é😀"]])
    }

    @Test("CSV errors name file, line and field", arguments: [
        ("", "users.csv:1: no header row"), ("\n\n", "users.csv:1: no header row"), ("\u{FEFF}", "users.csv:1: no header row"),
        ("a,b\n1,2\n3\n", "users.csv:3:2: the row has 1 fields, the header 2"),
        ("a,b\n1,2,3\n", "users.csv:2:3: the row has 3 fields, the header 2"),
        ("a,,c\n", "users.csv:1:2: the header's column 2 has no name"),
        ("a,b,a\n", "users.csv:1:3: the header names column a twice"),
        ("a\nx\"y\n", "users.csv:2:1: a quote inside an unquoted field (quote the whole field, and write \"\" for a quote)"),
        ("a,b\n1,\"open\n\n\nstill", "users.csv:2:2: a quoted field opened here is never closed"),
        ("a,b\n\"x\"y,2\n", "users.csv:2:1: a closing quote must end its field (write \"\" for a quote)"),
        ("a,b\n\"x\nx\",2\n1,2,3", "users.csv:4:3: the row has 3 fields, the header 2"),
        ("a\nx\ry\n", "users.csv:2:1: a carriage return not followed by a line feed"),
    ])
    func csvErrors(text: String, message: String) {
        #expect(csv(text).failure?.description == message)
    }

    @Test("a field that is not UTF-8 is an error naming its place, not its bytes")
    func csvEncoding() {
        let error = FeederTable.parse(csv: Array("a,b\n1,".utf8) + [0xFF, 0xFE], file: "f.csv").failure
        #expect(error?.description == "f.csv:2:2: the field is not valid UTF-8")
    }

    @Test("error messages never hold a field's value")
    func noValuesInErrors() {
        for text in ["token\nsecret\"x\n", "token,b\nsecret\n", "token\n\"secret\"x\n", "token\n\"secret"] {
            let error = csv(text).failure
            #expect(error != nil)
            #expect(error?.description.contains("secret") == false, "\(text)")
        }
        #expect(jsonl("{\"token\": secret}").failure?.description.contains("secret") == false)
    }

    @Test("JSON lines: objects, blank lines skipped, columns the union of keys in first-seen order")
    func jsonLines() {
        let table = jsonl("{\"name\":\"ann\",\"age\":30}\n\n  \r\n{\"token\":\"t\",\"name\":\"bob\"}\r\n{\"o\":{\"k\":[1]}}").success
        #expect(table?.columns == ["name", "age", "token", "o"])
        #expect(rows(table) == [["ann", 30, nil, nil], ["bob", nil, "t", nil], [nil, nil, nil, ["k": [1]]]])
        #expect(table?.value(row: 3, column: "name") == nil)
        #expect(table?.value(row: -1, column: "name") == nil)
        #expect(table?.value(row: 0, column: "nope") == nil)
        #expect(rows(jsonl("\u{FEFF}{\"a\":1}\n").success) == [[1]])
    }

    @Test("JSON lines errors name file and line (and column for bad JSON)", arguments: [
        ("", "users.jsonl:1: no rows"), ("\n \n", "users.jsonl:1: no rows"),
        ("{}\n{}", "users.jsonl:1: no row has a key (every object is empty)"),
        ("{\"a\":1}\n[1]\n", "users.jsonl:2: a row must be a JSON object, not an array"),
        ("{\"a\":1}\n\n\"s\"", "users.jsonl:3: a row must be a JSON object, not a string"),
    ])
    func jsonLinesErrors(text: String, message: String) {
        #expect(jsonl(text).failure?.description == message)
    }

    @Test("bad JSON on a line names that line and the column")
    func jsonLinesSyntax() {
        let error = jsonl("{\"a\":1}\n{\"a\":1,,}\n").failure
        #expect(error?.line == 2)
        #expect(error?.column == 8)
        #expect(jsonl("{\"a\":1,\"a\":2}").failure?.line == 1)
        #expect(jsonl(String(repeating: "{\"a\":", count: 70) + "1" + String(repeating: "}", count: 70)).failure?.line == 1)
    }

    @Test("the size cap is checked by the parsers (an error, not a trap)")
    func sizeCap() {
        let big = [UInt8](repeating: UInt8(ascii: "a"), count: FeederTable.maximumFileSize + 1)
        #expect(FeederTable.parse(csv: big, file: "big.csv").failure?.line == 0)
        #expect(FeederTable.parse(jsonLines: big, file: "big.jsonl").failure?.description.hasPrefix("big.jsonl: the file is") == true)
        var large = [UInt8](repeating: UInt8(ascii: "a"), count: 4 << 20)
        large[1] = UInt8(ascii: "\n")
        #expect(FeederTable.parse(csv: large, file: "large.csv").success?.rowCount == 1)
    }

    @Test("many distinct JSON lines keys are an error at the line adding column 1,025, not a huge allocation")
    func jsonLinesColumnCap() {
        // 300,000 lines of one new key each (4 MB): stored densely that was 300,000² cells, a trap.
        var bytes: [UInt8] = []
        for index in 0..<300_000 { bytes += Array("{\"k\(index)\":1}\n".utf8) }
        let error = FeederTable.parse(jsonLines: bytes, file: "keys.jsonl").failure
        #expect(error?.description == "keys.jsonl:1025: the row adds column 1025; a feeder has at most 1024 columns")
        // Below the cap, a table of as many columns loads.
        let fits = (0..<1024).map { "{\"k\($0)\":\($0)}" }.joined(separator: "\n")
        let table = jsonl(fits).success
        #expect(table?.columns.count == 1024)
        #expect(table?.value(row: 1023, column: "k1023") == 1023 && table?.value(row: 1023, column: "k0") == nil)
    }

    @Test("rows × columns over 2^26 cells is an error at the line that passes it, before the table is stored")
    func jsonLinesCellCap() {
        let wide = "{" + (0..<1024).map { "\"c\($0)\":0" }.joined(separator: ",") + "}\n"
        let rows = FeederTable.maximumCells / 1024  // the lines that fill the cap exactly; one more passes it
        let bytes = Array(wide.utf8) + Array(String(repeating: "{}\n", count: rows).utf8)
        let error = FeederTable.parse(jsonLines: bytes, file: "wide.jsonl").failure
        #expect(error?.description
            == "wide.jsonl:\(rows + 1): \(rows + 1) rows of 1024 columns are over the limit of 67108864 values (rows × columns)")
        #expect(FeederTable.checkCells(rows: rows, columns: 1024, file: "f", line: 1) == nil)
        #expect(FeederTable.checkCells(rows: .max, columns: 2, file: "f", line: 1) != nil)
    }

    @Test("a CSV header over 1,024 columns is an error at the column past the cap")
    func csvColumnCap() {
        let header = (0..<1025).map { "c\($0)" }.joined(separator: ",")
        #expect(csv(header + "\n").failure?.description == "users.csv:1:1025: the header has over 1024 columns")
        #expect(csv(header.split(separator: ",").dropLast().joined(separator: ",") + "\n").success?.columns.count == 1024)
    }
}

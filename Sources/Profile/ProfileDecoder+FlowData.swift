import Flow
import HTTP1
import JSON

/// Feeders: the profile's `data`, row sources (CSV or JSON lines files) a flow connection binds a row of.
extension ProfileReader {
    mutating func dataSources(_ value: JSONValue?) -> [FeederSource] {
        guard let value else { return [] }
        guard let object = value.objectValue else {
            problem("data", "expected an object of feeder names to sources, found \(value.kindName)")
            return []
        }
        var sources: [FeederSource] = []
        for (name, element) in object.members {
            let path = "data." + TerminalText.printable(name, limit: 80)
            let isIdentifier = name.utf8.first.map { !($0 >= 0x30 && $0 <= 0x39) } == true && name.utf8.count <= 64
                && name.utf8.allSatisfy { $0 == UInt8(ascii: "_") || ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) }
            guard isIdentifier else {
                problem(path, "is not a feeder name", hint: "[A-Za-z_][A-Za-z0-9_]*, at most 64 bytes: templates name it as ${\(name).column}")
                continue
            }
            if ["vu", "iteration", "seq", "uuid", "now_ms", "random"].contains(name) {
                problem(path, "\(name) names a built-in value", hint: "choose another name")
                continue
            }
            guard let source = self.object(element, path, kind: "dataSource") else { continue }
            let before = problems.count
            let file = required(source, "file", path, hint: "a .csv or .jsonl file").flatMap { string($0, Self.join(path, "file")) }
            var format = choice(source["format"], Self.join(path, "format"), as: FeederSource.Format.self)
            if format == nil, source["format"] == nil, let file {
                let lowered = file.lowercased()
                if lowered.hasSuffix(".csv") {
                    format = .csv
                } else if lowered.hasSuffix(".jsonl") || lowered.hasSuffix(".ndjson") {
                    format = .jsonLines
                } else {
                    problem(Self.join(path, "format"), "is required: \(file) is neither .csv nor .jsonl", hint: "csv or jsonl")
                }
            }
            let mode = choice(source["mode"], Self.join(path, "mode"), as: FeederSource.Mode.self) ?? .sequential
            var secrets: [String] = []
            if let list = array(source["secret"], Self.join(path, "secret")) {
                for (index, column) in list.enumerated() {
                    if let column = string(column, Self.join(path, "secret") + "[\(index)]") { secrets.append(column) }
                }
            }
            guard problems.count == before, let file, let format else { continue }
            var feeder = FeederSource(name: name, file: file, format: format)
            feeder.mode = mode
            feeder.secretColumns = secrets
            sources.append(feeder)
        }
        return sources
    }
}

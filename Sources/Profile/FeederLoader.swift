import Flow
import JSON

/// Why a profile's feeders cannot be loaded: every problem, each naming its profile path (`data.users.file`) and,
/// for a bad row, `file:line`. A secret column's values never appear (the parsers never quote a field; this loader
/// names columns and counts only).
package struct FeederLoadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// One problem, by profile path.
    package struct Problem: Sendable, Equatable, CustomStringConvertible {
        package var path: String
        package var message: String
        /// A missing or unreadable file (exit 66); otherwise bad data (exit 65).
        package var isUnreadable: Bool

        package var description: String { path + ": " + message }
    }

    package var problems: [Problem]

    /// 66 (EX_NOINPUT) when a file could not be read, 65 (EX_DATAERR) when one is malformed, too short for
    /// `unique`, or lacks a column a template reads.
    package var exitCode: Int32 { problems.contains(where: \.isUnreadable) ? 66 : 65 }
    package var description: String { problems.map(\.description).joined(separator: "\n") }
}

/// Loads a profile's feeders (`data`) once per run (and for `wsload validate`): reads each file, parses it as CSV or
/// JSON lines, and checks it against the profile — every column a template reads exists, and a `unique` feeder has
/// a row for every connection of the scenarios reading it.
package enum FeederLoader {
    /// The largest feeder file (64 MiB): read whole, once per run.
    package static let maximumFileSize = FeederTable.maximumFileSize

    /// What `read` throws for a file over ``maximumFileSize`` (refused as bad data, exit 65, not as unreadable).
    package struct FileTooLarge: Error {
        package init() {}
    }

    /// - Parameter read: reads a file (a path as the profile gives it) with at most
    ///   `FeederTable.maximumFileSize + 1` bytes, or throws ``FileTooLarge``; any other thrown error means the
    ///   file is missing or unreadable.
    package static func load(_ profile: Profile, read: (String) throws -> [UInt8]) -> Result<FeederTables, FeederLoadError> {
        var problems: [FeederLoadError.Problem] = []
        var tables: [String: FeederTable] = [:]
        for source in profile.data {
            let path = "data.\(source.name).file"
            let bytes: [UInt8]
            do {
                bytes = try read(source.file)
            } catch is FileTooLarge {
                bytes = []
                problems.append(.init(path: path, message: "\(source.file) is larger than \(FeederTable.maximumFileSize >> 20) MiB",
                                      isUnreadable: false))
                continue
            } catch {
                problems.append(.init(path: path, message: "cannot read \(source.file): \(error)", isUnreadable: true))
                continue
            }
            guard bytes.count <= FeederTable.maximumFileSize else {
                problems.append(.init(path: path, message: "\(source.file) is larger than \(FeederTable.maximumFileSize >> 20) MiB",
                                      isUnreadable: false))
                continue
            }
            let parsed = switch source.format {
            case .csv: FeederTable.parse(csv: bytes, file: source.file)
            case .jsonLines: FeederTable.parse(jsonLines: bytes, file: source.file)
            }
            switch parsed {
            case .failure(let error):
                problems.append(.init(path: path, message: error.description, isUnreadable: false))
            case .success(let table):
                tables[source.name] = table
                for column in source.secretColumns where !table.columns.contains(column) {
                    problems.append(.init(path: "data.\(source.name).secret", message: "\(source.file) has no column \(column)",
                                          isUnreadable: false))
                }
            }
        }
        for scenario in profile.scenarios {
            guard let flow = scenario.websocket.flow else { continue }
            var reported: Set<String> = []
            for use in flow.feederColumns {
                guard let table = tables[use.feeder], !table.columns.contains(use.column),
                      reported.insert(use.feeder + "." + use.column).inserted,
                      let source = profile.data.first(where: { $0.name == use.feeder }) else { continue }
                problems.append(.init(path: use.path, message: "\(source.file) (data.\(use.feeder)) has no column \(use.column)",
                                      isUnreadable: false))
            }
        }
        for source in profile.data where source.mode == .unique {
            guard let table = tables[source.name] else { continue }
            let readers = profile.scenarios.filter { $0.websocket.flow?.feeders.contains(source.name) == true }
            let needed = readers.reduce(0) { $0.addingReportingOverflow($1.websocket.connections).partialValue }
            if table.rowCount < needed {
                problems.append(.init(
                    path: "data.\(source.name).file",
                    message: "\(source.file) has \(table.rowCount) row\(table.rowCount == 1 ? "" : "s"); mode unique needs one per "
                        + "connection: \(needed) (scenario\(readers.count == 1 ? "" : "s") " + readers.map(\.name).joined(separator: ", ") + ")",
                    isUnreadable: false))
            }
        }
        guard problems.isEmpty else { return .failure(FeederLoadError(problems: problems)) }
        return .success(FeederTables(tables: tables))
    }
}

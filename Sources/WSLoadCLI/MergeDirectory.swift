import FileInput
import Foundation
import Glibc
import JSON
import Profile
import Reporting

/// `wsload merge DIR`: the shard reports in a directory (what the shards of a Slurm array or an Indexed Job wrote),
/// chosen as a shell's `DIR/*.json` would list them and then checked for a complete set.
///
/// Every `*.json` that is not hidden is read. A report (`schema` `wsload.report/…`) is merged, except a merged one
/// (`run.mergedFrom`: perhaps this command's own earlier output), which is skipped with a note. A JSON document that
/// is not a wsload report at all (no `schema`, or another tool's) is skipped with a note too: a stray file beside
/// the reports does not stop the merge, and if it took a shard's place, the shard is still missing. What is refused
/// (exit 65) is a file that should be a report and is not one: JSON that does not parse (a cut-off report), a report
/// of another schema version, a damaged one, a recovered (incomplete) one.
enum MergeDirectory {
    /// Why the directory does not merge: the message and its exit code.
    struct Failure: Error {
        var message: String
        var exitCode: ExitCode
    }

    /// The reports in `directory`, ordered by shard (then name), with notes on stderr for what was skipped.
    static func reports(in directory: String, budget: inout HistogramDecodeBudget, output: CommandOutput)
        -> Result<[LoadedReport], Failure>
    {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            return .failure(.init(message: "\(directory): cannot list the directory (\(error.localizedDescription))",
                                  exitCode: .noInput))
        }
        var reports: [LoadedReport] = []
        for name in names.sorted() where name.hasSuffix(".json") && !name.hasPrefix(".") {
            let path = (directory.hasSuffix("/") ? directory : directory + "/") + name
            let document: JSONValue
            switch readDocument(path) {
            case .failure(let failure): return .failure(failure)
            case .success(let value): document = value
            }
            guard let schema = document["schema"]?.stringValue, schema.hasPrefix("wsload.report/") else {
                let what = document["schema"]?.stringValue.map { "schema \"\($0.prefix(80))\"" } ?? "no \"schema\""
                output.printError("note: \(path) is not a wsload report (\(what)): skipped")
                continue
            }
            if document["run"]?["mergedFrom"] != nil {
                output.printError("note: \(path) is a merged report (run.mergedFrom): skipped")
                continue
            }
            do {
                reports.append(try LoadedReport(document: document, source: path, budget: &budget))
            } catch {
                return .failure(.init(message: error.description, exitCode: .invalidInput))
            }
        }
        guard !reports.isEmpty else {
            return .failure(.init(message: "\(directory) holds no wsload report to merge (no *.json shard report)",
                                  exitCode: .noInput))
        }
        return .success(reports.sorted { ($0.result.shard?.index ?? -1, $0.source) < ($1.result.shard?.index ?? -1, $1.source) })
    }

    /// The shards of the split that are not among `reports` (which the merger has checked: one split, no shard
    /// twice), as a refusal naming them; nil when every shard is there, or the reports are whole runs.
    static func missingShards(_ reports: [LoadedReport], directory: String) -> Failure? {
        guard let count = reports.first?.result.shard?.count else { return nil }
        let present = Set(reports.compactMap { $0.result.shard?.index })
        let missing = (0..<count).filter { !present.contains($0) }
        guard !missing.isEmpty else { return nil }
        let named = missing.prefix(10).map { Shard(index: $0, count: count).description }
        let list = named.count == 1 ? "shard \(named[0])" : "shards " + named.joined(separator: ", ")
            + (missing.count > named.count ? " and \(missing.count - named.count) more" : "")
        // A shard that died mid-run leaves its journal: say where it is.
        let journals = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(RunJournal.suffix) }.sorted()
        let hint = journals.isEmpty ? "" : "; run journals left in \(directory): " + journals.prefix(5).joined(separator: ", ")
        return Failure(message: "\(directory): \(list) missing (found \(present.count) of \(count)): a shard is missing, the "
            + "merge is incomplete\(hint)", exitCode: .shardMissing)
    }

    /// The JSON document in `path`, read with the report's size cap.
    private static func readDocument(_ path: String) -> Result<JSONValue, Failure> {
        // A regular file only (a link to one is followed), never waited on: see UntrustedFile.
        let bytes: [UInt8]
        do throws(UntrustedFile.Failure) {
            bytes = try UntrustedFile.read(path, cap: LoadedReport.maximumSize)
        } catch where error.isTooLarge {
            return .failure(.init(message: "\(path): larger than \(LoadedReport.maximumSize >> 20) MiB", exitCode: .invalidInput))
        } catch {
            let reason = if case .notRegularFile(let what) = error.kind { "is not a regular file (it is \(what))" } else { error.reason }
            return .failure(.init(message: "\(path): \(reason)", exitCode: .noInput))
        }
        do {
            return .success(try JSONValue(parsing: bytes))
        } catch {
            return .failure(.init(message: "\(path): not valid JSON (a report cut short?): \(error)", exitCode: .invalidInput))
        }
    }
}

import JSON
import Profile

extension ReportMerger {
    /// Refuses a shard report that is not the slice it says it is (`run.shard` edited, or one slice's report copied
    /// under another's number), which would otherwise merge as a complete run with one slice counted twice:
    /// - every slice runs with its own seed (``Shard/slice(_:seed:)`` mixes the index in), so two shards with one
    ///   `run.seed` are one slice run once and reported twice;
    /// - a slice's WebSocket scenarios hold its share of the profile's connections (``Shard/share(of:)``).
    /// The reports have been checked to be of one profile and one split, no index twice.
    static func checkSlices(_ reports: [LoadedReport]) throws(MergeError) {
        var seeds: [UInt64: String] = [:]
        for report in reports where report.result.shard != nil {
            if let other = seeds[report.result.seed] {
                throw MergeError(description: "\(report.source) and \(other) ran with the same seed (run.seed "
                    + "\(report.result.seed)): one slice's report under two shard numbers")
            }
            seeds[report.result.seed] = report.source
        }
        // The profile as written (the reports' scenarios hold the slices): one decode, the profiles being one.
        guard let document = reports.first?.document["profile"]?["document"],
            let whole = try? ProfileDecoder.decode(Array(document.formatted(pretty: false).utf8))
        else { return }  // (the reader decoded the same document to load the report: it does decode)
        for report in reports {
            guard let shard = report.result.shard else { continue }
            let slice = shard.slice(whole, seed: 0).profile
            for entry in report.document["scenarios"]?.arrayValue ?? [] {
                // Transfer scenarios report their concurrency, not connections: only WebSocket ones are compared.
                guard let name = entry["name"]?.stringValue, let connections = entry["connections"]?.integerValue,
                    let expected = slice.scenarios.first(where: { $0.name == name })?.websocket.connections,
                    let total = whole.scenarios.first(where: { $0.name == name })?.websocket.connections
                else { continue }
                guard connections == expected else {
                    throw MergeError(description: "\(report.source) says it is shard \(shard), whose share of scenario "
                        + "\"\(name)\"'s \(total) connections is \(expected), but it ran \(connections): not that "
                        + "shard's report")
                }
            }
        }
    }
}

// Report reader (`report`, `compare`, `merge` inputs): JSON text → LoadedReport, through the profile,
// metrics, histograms and invariants it embeds. Refusals (ReportFormatError) are expected; a trap or an
// unbounded allocation is the finding.
import FuzzSupport
import JSON
import Reporting

fuzzMain { data in
    guard let document = try? JSONValue(parsing: data, maximumDepth: 64) else { return }  // not JSON: the JSON target covers it
    _ = try? LoadedReport(document: document, source: "fuzz.json")  // a refused report is a valid outcome
}

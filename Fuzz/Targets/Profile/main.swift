// Profile decoder from JSON text (the `run`/`validate` input) and the chaos-event decoder. Refusals are
// expected; a trap, hang or unbounded allocation is the finding.
import FuzzSupport
import Profile

fuzzMain { data in
    if data.first == UInt8(ascii: "#") {
        _ = try? ProfileDecoder.decodeChaos(Array(data.dropFirst()))  // a refused chaos list is a valid outcome
    } else if let profile = try? ProfileDecoder.decode(data) {  // a refused profile is a valid outcome
        _ = String(describing: profile).count
    }
}

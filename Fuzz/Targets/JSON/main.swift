// JSON parser and writer. Properties: parse → write (compact and pretty) → parse gives the same value;
// writing is deterministic.
import FuzzSupport
import JSON

fuzzMain { data in
    guard let value = try? JSONValue(parsing: data, maximumDepth: 64) else { return }  // refused input: nothing to round-trip
    for pretty in [false, true] {
        let text = value.formatted(pretty: pretty)
        let again: JSONValue
        do {
            again = try JSONValue(parsing: Array(text.utf8), maximumDepth: 64)
        } catch {
            return fuzzCheck(false, "our own output does not parse (\(error)): \(text.prefix(200))")
        }
        fuzzCheck(again == value, "parse → write → parse changed the value: \(text.prefix(200))")
        fuzzCheck(again.formatted(pretty: pretty) == text, "writing the same value twice differs")
    }
}

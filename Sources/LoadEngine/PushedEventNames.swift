import Profile
import Synchronization

/// The socketio event names a scenario counts under their own `flow.pushed.<event>`, bounded per run: an event name
/// is the peer's bytes, and a hostile server pushing a new name per message would otherwise grow the report, every
/// interval and the `/metrics` scrape by one counter per name, without end.
///
/// A name is counted as itself only when it is a plain tag (``isPlainTag(_:)``: safe as a JSON key, a Prometheus
/// label value and a threshold's `{type=…}`) and either an `on` step of the profile names it or it is among the first
/// ``MetricFamily/flowPushedDistinctLimit`` other names the run meets; everything else is counted under
/// ``MetricFamily/flowPushedOther``. Shared by the scenario's recorders on every loop; the lock is taken only for a
/// name a loop has not seen admitted, and never again by a loop once the bound is reached.
final class PushedEventNames: Sendable {
    /// The names the scenario's `on` steps wait for (plain ones only): always counted by name, outside the bound.
    let expected: Set<String>
    private let admitted = Mutex(Admitted())

    private struct Admitted {
        var names: Set<String> = []
        var isFull = false
    }

    /// What one loop's recorder knows: the names it may count by name without asking, and whether that is all of them.
    struct Cache {
        var names: Set<String>
        var isComplete = false
    }

    init(_ scenario: FlowScenario) {
        var names: Set<String> = []
        func collect(_ steps: [FlowStep]) {
            for step in steps {
                switch step.action {
                case .on(let on): names.insert(on.event)
                case .loop(let loop): collect(loop.steps)
                case .group(let steps): collect(steps)
                case .ifThen(_, let then, let otherwise):
                    collect(then)
                    collect(otherwise)
                default: break
                }
            }
        }
        collect(scenario.steps)
        expected = names.filter(Self.isPlainTag)
    }

    func makeCache() -> Cache { Cache(names: expected) }

    /// The `flow.pushed` tag `event` is counted under.
    func tag(for event: String, cache: inout Cache) -> String {
        if cache.names.contains(event) { return event }
        guard !cache.isComplete, Self.isPlainTag(event) else { return MetricFamily.flowPushedOther }
        let (isAdmitted, complete) = admitted.withLock { state -> (Bool, Set<String>?) in
            var isAdmitted = state.names.contains(event)
            if !isAdmitted && !state.isFull {
                state.names.insert(event)
                state.isFull = state.names.count >= MetricFamily.flowPushedDistinctLimit
                isAdmitted = true
            }
            return (isAdmitted, state.isFull ? state.names : nil)
        }
        if let complete {
            cache.names.formUnion(complete)
            cache.isComplete = true
        } else if isAdmitted {
            cache.names.insert(event)
        }
        return isAdmitted ? event : MetricFamily.flowPushedOther
    }

    /// Whether a name may be a `flow.pushed` tag as it is: 1–64 bytes of ASCII letters, digits and `_ - . : / @ + #`
    /// (no space, quote, backslash, brace, comma or `=`, which JSON, the exposition or a threshold filter would have
    /// to escape or would split on; no control or non-ASCII byte a terminal could act on), and not
    /// ``MetricFamily/flowPushedOther`` itself, which means "not counted by name".
    static func isPlainTag(_ name: String) -> Bool {
        guard (1...64).contains(name.utf8.count), name != MetricFamily.flowPushedOther else { return false }
        return name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "/"),
                 UInt8(ascii: "@"), UInt8(ascii: "+"), UInt8(ascii: "#"):
                true
            default: false
            }
        }
    }
}

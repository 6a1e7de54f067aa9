import Crypto
import Flow
import Foundation
import JSON
import Profile
import Runtime

/// One simulated client's flow state for its whole life, across its connections: the captured variables, the
/// marks, the message sequence (`${seq}`), the bound feeder rows, and where a `reconnect` step left off.
/// Loop-confined (owned by the ``VirtualUser``, used on its connection's isolation). It is the templates'
/// ``TemplateScope``.
final class FlowState: TemplateScope {
    /// `${vu}`: the connection's number in its scenario as in the unsharded run, stable across reconnects.
    let vu: Int
    /// `${iteration}`: the innermost loop's iteration (0 outside loops).
    var iteration = 0
    /// `${seq}`: sends so far on this client.
    var sequence: UInt64 = 0
    private var random: SeededRandomNumberGenerator
    /// Captured variables by name (captures are per step, not per message: no hashing on a message's path).
    private(set) var variables: [String: JSONValue] = [:]
    /// `mark` steps' instants by name.
    var marks: [String: LoopClock.Instant] = [:]
    /// The bound row per feeder name.
    private let rows: [String: (table: FeederTable, row: Int)]
    /// Set by a `reconnect` step: where the steps go on, on the next connection.
    var resumePoint: [FlowPosition]?

    init(vu: Int, plan: FlowPlan, random: SeededRandomNumberGenerator) {
        self.vu = vu
        self.random = random
        var rows: [String: (table: FeederTable, row: Int)] = [:]
        var draw = random
        for name in plan.scenario.feeders {
            guard let table = plan.feeders.tables[name], table.rowCount > 0 else { continue }
            // nil: a unique feeder has no row for this connection; left unbound, its templates fail (template_undefined).
            guard let row = plan.binding.row(feeder: name, scenarioIndex: plan.scenarioIndex, connection: vu, random: &draw) else { continue }
            rows[name] = (table, row)
        }
        self.rows = rows
    }

    var nowMilliseconds: Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    func nextRandom() -> UInt64 { random.next() }

    func feederValue(source: String, column: String) -> JSONValue? {
        guard let bound = rows[source] else { return nil }
        return bound.table.value(row: bound.row, column: column)
    }

    func variable(_ name: String) -> JSONValue? { variables[name] }

    func define(_ name: String, _ value: JSONValue) { variables[name] = value }

    /// A new start of the steps (an unintended drop, or `onTimeout: restart`): captures and marks are cleared;
    /// `sid` (a preset's, defined before the first step) is set again by the preset.
    func clearCaptures() {
        variables.removeAll(keepingCapacity: true)
        marks.removeAll(keepingCapacity: true)
    }

    /// A uniform draw in `range` (think times), from the client's seeded generator.
    func uniform(_ range: ClosedRange<Duration>) -> Duration {
        let low = range.lowerBound.nanoseconds
        let span = UInt64(max(0, range.upperBound.nanoseconds &- low))
        guard span > 0 else { return range.lowerBound }
        return .nanoseconds(low &+ Int64(random.next() % (span &+ 1)))
    }
}

/// Where in the (nested) steps the interpreter is: the index in the current block, and for a loop the
/// iteration, for an `if` the branch taken (0 then, 1 else).
struct FlowPosition: Sendable, Equatable {
    var index: Int
    var detail: Int
}

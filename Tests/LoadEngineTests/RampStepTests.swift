import Crypto
import Profile
import Testing

/// When a ramp's target moves next: the moments the coordinator wakes for.
@Suite("Ramp steps", .timeLimit(.minutes(1)))
struct RampStepTests {
    @Test("the next change is the next whole connection of a stage, or the next stage boundary")
    func nextChange() {
        let ramp = RampSchedule(connections: 100, stages: [
            .init(target: 4, duration: .seconds(2)), .init(target: 4, duration: .seconds(1)), .init(target: 9, duration: .zero),
            .init(target: 1, duration: .seconds(4)),
        ])
        #expect(ramp.nextChange(after: .zero) == .milliseconds(500))
        #expect(ramp.nextChange(after: .milliseconds(500)) == .seconds(1))
        #expect(ramp.nextChange(after: .milliseconds(1999)) == .seconds(2))
        #expect(ramp.nextChange(after: .seconds(2)) == .seconds(3), "a flat stage: its end")
        #expect(ramp.target(at: .seconds(3)) == 9, "a zero-length stage jumps at its moment")
        #expect(ramp.nextChange(after: .seconds(3)) == .milliseconds(3500), "then down one every 500 ms")
        #expect(ramp.nextChange(after: .milliseconds(6900)) == .seconds(7))
        #expect(ramp.nextChange(after: .seconds(7)) == nil, "the last target holds")
        #expect(RampSchedule(connections: 5, stages: []).nextChange(after: .zero) == nil)
    }

    @Test("between a moment and its next change the target holds, and at the change it has moved (seeded stages)",
          arguments: [UInt64(1), 2, 3, 4, 5])
    func holdsUntilTheChange(seed: UInt64) {
        var random = SeededRandomNumberGenerator(seed: seed)
        let stages = (0..<4).map { _ in
            WebSocketScenario.Stage(target: Int.random(in: 0...50, using: &random),
                                    duration: .milliseconds(Int.random(in: 0...3000, using: &random)))
        }
        let ramp = RampSchedule(connections: 50, stages: stages)
        var moment = Duration.zero
        var changes = 0
        while let next = ramp.nextChange(after: moment) {
            #expect(next > moment)
            let target = ramp.target(at: moment)
            for fraction in [0.25, 0.5, 0.75] {
                #expect(ramp.target(at: moment + (next - moment) * fraction) == target, "\(stages) at \(moment)")
            }
            let isBoundary = stages.indices.contains { index in
                stages[...index].reduce(Duration.zero) { $0 + $1.duration } == next
            }
            #expect(ramp.target(at: next) != target || isBoundary, "\(stages): \(moment) → \(next)")
            moment = next
            changes += 1
        }
        #expect(changes <= stages.reduce(0) { $0 + $1.target } * 2 + stages.count + 1)
        #expect(moment >= ramp.totalDuration || stages.allSatisfy { $0.duration == .zero })
    }
}

import LoadEngine
import Profile
import Testing

/// The coordinator's timetable without a clock or a socket: what is due at a wake, and when the next wake is.
@Suite("The run's agenda: what is due when", .timeLimit(.minutes(1)))
struct RunAgendaTests {
    private static let rampUp = RampSchedule(connections: 10, stages: [
        .init(target: 10, duration: .seconds(2)), .init(target: 10, duration: .seconds(1)), .init(target: 4, duration: .seconds(3)),
    ])

    private func agenda(chaos: [Duration] = [], duration: Duration = .seconds(10), startAfter: Duration = .zero,
                        ramp: RampSchedule = rampUp, interval: Duration = .seconds(5)) -> RunAgenda {
        RunAgenda(duration: duration, chaosTimes: chaos,
                  ramps: [.init(startAfter: startAfter, schedule: ramp, connections: ramp.connections)],
                  gatherEvery: min(.seconds(1), interval), interval: interval)
    }

    @Test("a late wake still gets every chaos event and ramp step that fell due before the end, and nothing after")
    func lateWake() {
        var agenda = agenda(chaos: [.milliseconds(500), .seconds(2), .milliseconds(2900)], duration: .seconds(3))
        let first = agenda.advance(to: .milliseconds(100))
        #expect(first.chaos.isEmpty && first.ramps == [.init(target: 0, peak: 0)] && !first.isOver)
        // Starved from 0.1 s to 7 s: the end (3 s) passed long ago.
        let late = agenda.advance(to: .seconds(7))
        #expect(late.chaos == [0, 1, 2])
        #expect(late.ramps == [.init(target: 10, peak: 10)], "the ramp followed to the end of the duration: its top")
        #expect(late.isOver && !late.isGatherDue, "the coordinator gathers once more when it stops, not here")
        #expect(agenda.advance(to: .seconds(8)).chaos.isEmpty, "each event is due once")
    }

    @Test("a stage's top between two wakes is the step's peak; a ramp down follows the target")
    func peaksBetweenWakes() {
        var agenda = agenda()
        _ = agenda.advance(to: .seconds(1))
        #expect(agenda.advance(to: .milliseconds(4500)) == .init(ramps: [.init(target: 7, peak: 10)], isGatherDue: true))
        #expect(agenda.advance(to: .milliseconds(5250)) == .init(ramps: [.init(target: 6, peak: 7)], isGatherDue: true,
                                                                 closesInterval: true))
    }

    @Test("events at or after the end of the duration are never due")
    func nothingAfterTheEnd() {
        var agenda = agenda(chaos: [.seconds(3), .seconds(4)], duration: .seconds(3))
        let due = agenda.advance(to: .seconds(3))
        #expect(due.chaos.isEmpty && due.isOver)
    }

    @Test("gathers fall on whole periods; a late gather does not shift the next; intervals close on theirs")
    func gathers() {
        var agenda = agenda(chaos: [], ramp: RampSchedule(connections: 3, stages: []), interval: .milliseconds(2500))
        #expect(agenda.nextDue == .seconds(1))
        #expect(!agenda.advance(to: .milliseconds(999)).isGatherDue)
        let late = agenda.advance(to: .milliseconds(2700))
        #expect(late.isGatherDue && late.closesInterval)
        #expect(agenda.nextDue == .seconds(3), "the next whole period, not 2.7 s + 1 s")
        let next = agenda.advance(to: .seconds(3))
        #expect(next.isGatherDue && !next.closesInterval)
        #expect(agenda.advance(to: .seconds(5)).closesInterval)
    }

    @Test("the next wake is the nearest due thing: a ramp step, a chaos event, a gather, the start of a scenario, the end")
    func nextDue() {
        var agenda = agenda(chaos: [.milliseconds(150)], startAfter: .milliseconds(100))
        #expect(agenda.nextDue == .milliseconds(100), "the scenario's start")
        _ = agenda.advance(to: .milliseconds(100))
        #expect(agenda.nextDue == .milliseconds(150), "the chaos event comes before the first step (at 0.3 s)")
        #expect(agenda.advance(to: .milliseconds(150)).chaos == [0])
        #expect(agenda.nextDue == .milliseconds(300), "one connection every 200 ms")
        var quiet = self.agenda(duration: .milliseconds(700), ramp: RampSchedule(connections: 2, stages: []))
        _ = quiet.advance(to: .zero)
        #expect(quiet.nextDue == .milliseconds(700), "the end before the first gather")
    }

    @Test("waking at every next due moment follows every step of the ramp, each exactly once")
    func everyStep() {
        var agenda = agenda(duration: .seconds(7))
        var elapsed = Duration.zero
        var targets: [Int] = []
        var wakes = 0
        while true {
            let due = agenda.advance(to: elapsed)
            if let step = due.ramps.first ?? nil, step.target != targets.last { targets.append(step.target) }
            if due.isOver { break }
            elapsed = agenda.nextDue
            wakes += 1
        }
        #expect(targets == Array(0...10) + [9, 8, 7, 6, 5, 4])
        #expect(wakes < 40, "\(wakes) wakes: steps, stage ends, gathers, the end — no polling")
        #expect(agenda.areRampsOver(at: .seconds(6)) && !agenda.areRampsOver(at: .milliseconds(5999)))
    }

    @Test("steps closer together than the ramp tick are followed together: 1,000 connections in 1 s, a wake every 10 ms")
    func coalescedSteps() {
        let ramp = RampSchedule(connections: 1000, stages: [.init(target: 1000, duration: .seconds(1))])
        var agenda = agenda(duration: .seconds(2), ramp: ramp)
        var elapsed = Duration.zero
        var wakes: [Duration] = []
        var targets: [Int] = []
        while true {
            let due = agenda.advance(to: elapsed)
            if let step = due.ramps.first ?? nil { targets.append(step.peak) }
            if due.isOver { break }
            elapsed = agenda.nextDue
            wakes.append(elapsed)
        }
        #expect(zip(wakes, wakes.dropFirst()).allSatisfy { $1 - $0 >= RunAgenda.rampTick || $1 == .seconds(1) || $1 == .seconds(2) },
                "\(wakes.prefix(5))")
        #expect(wakes.first == RunAgenda.rampTick, "the first step (at 1 ms) waits for the tick")
        #expect(targets.last == 1000 && targets == targets.sorted(), "every connection is still started, in order")
        #expect(targets.contains(10) && targets.contains(500), "\(targets.prefix(5))")
        #expect(wakes.count < 110, "\(wakes.count) wakes")
    }
}

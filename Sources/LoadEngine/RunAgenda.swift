import Profile

/// The run's timetable, decided without a clock: given how far the run has got, which chaos events, ramp
/// steps, gathers and interval ends are due, and when the next of them is.
///
/// The coordinator wakes at ``nextDue`` (or earlier: a stop request, the last connection finishing), calls
/// ``advance(to:)`` with the time since the start, and does what it returns. A coordinator that wakes late
/// still gets every chaos event and ramp step that fell due before the end of the duration: nothing due is
/// skipped because the wake came after it.
package struct RunAgenda: Sendable {
    /// One scenario's ramp: when it starts, its stages, and the connections it may use at most.
    package struct Ramp: Sendable, Equatable {
        package var startAfter: Duration
        package var schedule: RampSchedule
        package var connections: Int

        package init(startAfter: Duration, schedule: RampSchedule, connections: Int) {
            self.startAfter = startAfter
            self.schedule = schedule
            self.connections = connections
        }
    }

    /// What a scenario's connections must follow now: at least `peak` started since the previous step (a
    /// stage's top between two wakes counts), then down to `target`.
    package struct RampStep: Sendable, Equatable {
        package var target: Int
        package var peak: Int

        package init(target: Int, peak: Int) {
            self.target = target
            self.peak = peak
        }
    }

    /// Everything due at one wake.
    package struct Due: Sendable, Equatable {
        /// The chaos events due, as indices into the timeline (an event's seed derives from its index).
        package var chaos: [Int] = []
        /// Per scenario, the step to follow; nil while the scenario has not started.
        package var ramps: [RampStep?] = []
        /// The recorders are due to be gathered (and progress reported).
        package var isGatherDue = false
        /// That gather closes a report interval.
        package var closesInterval = false
        /// The duration is over: the run stops now (after what was due before the end).
        package var isOver = false

        package init(chaos: [Int] = [], ramps: [RampStep?] = [], isGatherDue: Bool = false, closesInterval: Bool = false,
                     isOver: Bool = false) {
            self.chaos = chaos
            self.ramps = ramps
            self.isGatherDue = isGatherDue
            self.closesInterval = closesInterval
            self.isOver = isOver
        }
    }

    package let duration: Duration
    package let chaosTimes: [Duration]
    package let ramps: [Ramp]
    /// Gathers fall on fixed boundaries (k × period), so a late wake does not shift the later ones.
    package let gatherEvery: Duration
    package let interval: Duration

    private var nextChaos = 0
    private var nextGather: Duration
    private var nextIntervalEnd: Duration
    /// The moment of the run the ramps were last followed to.
    private var followedUntil = Duration.zero

    /// - Parameters:
    ///   - chaosTimes: the timeline's moments, in order.
    ///   - gatherEvery: how often recorders are gathered; `interval`: the report's interval length.
    package init(duration: Duration, chaosTimes: [Duration], ramps: [Ramp], gatherEvery: Duration, interval: Duration) {
        self.duration = duration
        self.chaosTimes = chaosTimes
        self.ramps = ramps
        self.gatherEvery = gatherEvery
        self.interval = interval
        nextGather = gatherEvery
        nextIntervalEnd = interval
    }

    /// A profile's agenda: its chaos timeline, each scenario's ramp, a gather every second (or every report
    /// interval, if that is shorter).
    package init(profile: Profile) {
        self.init(
            duration: profile.duration, chaosTimes: profile.chaos.map(\.at),
            ramps: profile.scenarios.map {
                Ramp(startAfter: $0.startAfter,
                     schedule: RampSchedule(connections: $0.websocket.connections, stages: $0.websocket.stages),
                     connections: $0.websocket.connections)
            },
            gatherEvery: min(.seconds(1), profile.report.interval), interval: profile.report.interval)
    }

    /// What is due at `elapsed` (time since the start; it never goes back). Chaos events and ramp steps are
    /// taken up to the end of the duration even when `elapsed` is past it; a gather is due only before the
    /// end (the coordinator gathers once more when it stops).
    package mutating func advance(to elapsed: Duration) -> Due {
        var due = Due()
        let horizon = min(elapsed, duration)
        while nextChaos < chaosTimes.count && chaosTimes[nextChaos] <= horizon && chaosTimes[nextChaos] < duration {
            due.chaos.append(nextChaos)
            nextChaos += 1
        }
        due.ramps = ramps.map { ramp -> RampStep? in
            guard horizon >= ramp.startAfter else { return nil }
            let now = horizon - ramp.startAfter
            let since = max(.zero, followedUntil - ramp.startAfter)
            return RampStep(target: min(ramp.schedule.target(at: now), ramp.connections),
                            peak: min(ramp.schedule.peak(in: since...now), ramp.connections))
        }
        followedUntil = max(followedUntil, horizon)
        due.isOver = elapsed >= duration
        if !due.isOver && elapsed >= nextGather {
            due.isGatherDue = true
            while nextGather <= elapsed { nextGather += gatherEvery }
            if elapsed >= nextIntervalEnd {
                due.closesInterval = true
                while nextIntervalEnd <= elapsed { nextIntervalEnd += interval }
            }
        }
        return due
    }

    /// Ramp steps closer together than this are followed together (a step waits up to this long): a ramp of
    /// 10,000 connections a second is then 100 connections every 10 ms, handed to the loops in batches they
    /// start in one turn, rather than 10 every millisecond, each batch a wake-up of every loop (measured: a fifth
    /// more CPU per connection at 19,000 in 1.9 s).
    package static let rampTick: Duration = .milliseconds(10)

    /// When the next thing falls due (time since the start): a chaos event, a ramp step (no sooner than
    /// ``rampTick`` after the last), a gather, or the end.
    package var nextDue: Duration {
        var next = min(nextGather, duration)
        if nextChaos < chaosTimes.count { next = min(next, chaosTimes[nextChaos]) }
        for ramp in ramps {
            if followedUntil < ramp.startAfter {
                next = min(next, ramp.startAfter)
            } else if let change = ramp.schedule.nextChange(after: followedUntil - ramp.startAfter) {
                next = min(next, max(ramp.startAfter + change, followedUntil + Self.rampTick))
            }
        }
        return next
    }

    /// Whether every scenario's stages are over at `elapsed` (its target holds from then on).
    package func areRampsOver(at elapsed: Duration) -> Bool {
        ramps.allSatisfy { elapsed >= $0.startAfter + $0.schedule.totalDuration }
    }
}

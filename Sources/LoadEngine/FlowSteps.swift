import Clients
import Flow
import JSON
import Profile
import Runtime
import WebSocket

// The timed steps: expect, loop (with open-model pacing), ping; and the preset steps' entry.
extension FlowRun {
    /// An expect: its latency from the preceding send (or its mark) to the matching message's arrival.
    /// `@_transparent`, not `@inline(__always)`: the optimizer left it out of line under that (two executor switches
    /// per message, see ``step(_:_:resumed:resume:)``); mandatory inlining does not.
    @_transparent
    func expect(_ manager: isolated WebSocketManager, _ expectation: FlowExpectation, nameIndex: Int?) async -> FlowControl {
        let from = expectation.from.flatMap { state.marks[$0] } ?? reference
        switch await awaitMessage(manager, .message(expectation), within: expectation.within) {
        case .matched(let arrival, let captures):
            for capture in captures { state.define(capture.variable, capture.value) }
            if let nameIndex {
                recorder.flowSteps[nameIndex].record(microseconds: max(.zero, from.duration(to: arrival)))
            }
            return .next
        case .failed(let code):
            fail(code, step: nameIndex)
            return await policy(expectation.onTimeout, manager)
        case .stopped:
            return .stopped
        case .closed:
            return .dropped
        case .elapsed:
            return .next  // an expect's deadline resolves as a failure, never as elapsed
        }
    }

    /// A loop: `count` iterations, or for `duration`, or until the connection is stopped; paced at `rate` (open
    /// model: iteration k is due at start + k / rate; a late one starts at once, measured from when it was due;
    /// starts that passed while the previous iteration ran are `flow.iterations_missed`).
    func runLoop(_ manager: isolated WebSocketManager, _ loop: FlowLoop, _ children: [FlowNode], resumed: FlowPosition?,
                 resume: inout [FlowPosition]?) async -> FlowControl {
        let outerIteration = state.iteration
        defer { state.iteration = outerIteration }
        let firstIteration = resumed?.detail ?? 0
        var iteration = firstIteration
        let started = clock.now
        let interval: UInt64? = loop.ratePerConnection.map { UInt64(max(1, (1e9 / $0).rounded())) }
        var inResumedIteration = resumed != nil
        while true {
            if let count = loop.count, iteration >= count { return .next }
            if let duration = loop.duration, started.duration(to: clock.now) >= duration { return .next }
            if let interval, !inResumedIteration {
                let offset = UInt64(iteration - firstIteration)
                let (product, overflow) = offset.multipliedReportingOverflow(by: interval)
                if overflow { return .next }
                let due = LoopClock.Instant(nanoseconds: started.nanoseconds &+ product)
                let now = clock.now
                if due > now {
                    let control = await pause(manager, until: due)
                    guard control == .next else { return control }
                    lateIterationStart = nil
                } else {
                    // Late: the starts that passed meanwhile are missed; this one is measured from when it was due.
                    let behind = (now.nanoseconds - due.nanoseconds) / interval
                    if behind > 0 {
                        recorder.flowIterationsMissed &+= behind
                        iteration += Int(clamping: behind)
                        if let count = loop.count, iteration >= count { return .next }
                    }
                    let intended = LoopClock.Instant(nanoseconds: due.nanoseconds &+ behind &* interval)
                    lateIterationStart = now.nanoseconds > intended.nanoseconds ? intended : nil
                }
            }
            if let duration = loop.duration, started.duration(to: clock.now) >= duration { return .next }
            if isStopRequested || latch.isStopped(id) { return .stopped }
            inResumedIteration = false
            state.iteration = iteration
            position[position.count - 1].detail = iteration
            recorder.flowIterations &+= 1
            let waitsBefore = waitSerial
            let control = await run(manager, children, resume: &resume)
            guard control == .next else { return control }
            await yieldUnlessWaited(manager, since: waitsBefore)
            iteration += 1
        }
    }

    /// A ping step: the pong's round trip, within `within` (`ping_timeout` otherwise).
    func ping(_ manager: isolated WebSocketManager, within: Duration, onTimeout: FlowFailurePolicy,
              nameIndex: Int?) async -> FlowControl {
        guard manager.state == .open else { return .dropped }
        let loop = self.loop
        let roundTrip: Duration?? = await withTaskGroup(of: Duration??.self) { group in
            group.addTask(executorPreference: loop.taskExecutor) {
                do { return .some(try await manager.sendPing()) } catch { return .some(nil) }
            }
            group.addTask(executorPreference: loop.taskExecutor) {
                // Cancelled when the pong came first; either way this child only marks the deadline.
                do { try await loop.sleep(for: within) } catch { return nil }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        switch roundTrip {
        case .some(.some(let roundTrip)):
            if let nameIndex { recorder.flowSteps[nameIndex].record(microseconds: roundTrip) }
            return .next
        case .some(.none):
            return isStopRequested || latch.isStopped(id) ? .stopped : .dropped  // the connection ended under it
        case .none:
            if isStopRequested || latch.isStopped(id) { return .stopped }
            fail(.pingTimeout, step: nameIndex)
            return await policy(onTimeout, manager)
        }
    }

}


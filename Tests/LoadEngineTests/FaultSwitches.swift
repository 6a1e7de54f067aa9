import Clients
import LoadEngine
import Profile
import Runtime
import WebSocket

/// Switches that break wsload on purpose, for tests that prove each checker fires. They exist only here: the
/// engine and the client have seams (``ReconnectFaults``, ``MessageFaults``, ``TransferFaults``,
/// ``RunLevelFaults``, ``WebSocketClientFaults``) whose defaults are honest, and these conformances (this struct,
/// and ``ClientFaultSwitches`` for the class-bound client seam) are the code that misbehaves. All off is an honest run (``RunFaults/init(_:)`` then injects nothing).
struct FaultSwitches: Sendable, Equatable {
    /// The reference's bug: reconnect delays truncated to whole seconds.
    var truncateBackoffToWholeSeconds = false
    /// Keep counting attempts after a successful connection.
    var keepAttemptsAfterSuccess = false
    /// Reconnect once after being stopped on purpose.
    var reconnectAfterIntentionalDisconnect = false
    /// Skip sending one echo request (its sequence number goes unanswered).
    var dropOneEchoMessage = false
    /// Leave one runtime handle open after the run.
    var leakHandle = false
    /// The reference's bug: the client declares itself connected before the server's 101.
    var connectedBeforeHandshake = false
    /// Deliver the first transfer's completion twice (the reference's "call the handler exactly once" gotcha).
    var deliverCompletionTwice = false
    /// After an interruption, start the download over under a new name instead of resuming, forgetting the
    /// partial file of the first attempt.
    var forgetPartialFile = false
    /// Open a second connection while the first is still live (the first is left open until the actor ends).
    var connectWhileLive = false
    /// Make one reconnect attempt more than the policy's `maxAttempts` before giving up.
    var attemptBeyondMaximum = false
    /// Reconnect after half of each backoff delay (the delay drawn is right; the wait is not).
    var cutBackoffShort = false
    /// Skip pushed message #2 (receive pattern): the client loses it.
    var dropOnePushedMessage = false
    /// The client loses the reason of a connection that ended without a closing handshake (1006).
    var forgetAbnormalCloseReason = false
    /// The client delivers one more message after its connection ended.
    var deliverAfterDisconnect = false
    /// Flip the first byte of an interrupted download's partial file before resuming it (a torn write the
    /// resume keeps).
    var corruptPartialFile = false
    /// Leave each multipart upload's temporary body file behind.
    var keepMultipartBody = false
    /// A flow expect's timer stays armed after its match and fires into the next wait.
    var keepExpectTimer = false
    /// A flow message naming an undefined variable is sent anyway, without the value.
    var sendUndefinedTemplates = false
    /// A flow's interpreter runs on after its connection closed, handing buffered messages to its steps.
    var runStepsAfterClose = false
    /// socketio: every emit asks for ack id 0.
    var reuseAckIDs = false
    /// socketio: the server's Engine.IO pings go unanswered.
    var ignoreEngineIOPings = false
    /// graphql-ws: `unsubscribe` sends `complete` for a subscription the server already completed.
    var endSubscriptionsTwice = false
}

extension FaultSwitches: ReconnectFaults {
    func maximumAttempts(allowing scenarioMaximum: Int) -> Int {
        attemptBeyondMaximum ? scenarioMaximum + 1 : scenarioMaximum
    }

    func connectsThoughStoppedBeforeStart() -> Bool { reconnectAfterIntentionalDisconnect }

    /// The first connection stays open while the actor connects again.
    func connectsAgain(afterOpening number: Int) -> Bool { connectWhileLive && number == 1 }

    func tellsLifecycleOfSuccess() -> Bool { !keepAttemptsAfterSuccess }

    /// Once per actor.
    func connectsAgainAfterStop(earlier: Int) -> Bool { reconnectAfterIntentionalDisconnect && earlier == 0 }

    func backoff(drawn: Duration) -> Duration {
        truncateBackoffToWholeSeconds ? .seconds(drawn.components.seconds) : drawn
    }

    func wait(forBackoff delay: Duration) -> Duration { cutBackoffShort ? delay / 2 : delay }
}

extension FaultSwitches: MessageFaults {
    /// Request #2.
    func echoRequestNotSent() -> UInt64? { dropOneEchoMessage ? 2 : nil }

    /// Pushed message #2.
    func pushedMessageLost() -> UInt64? { dropOnePushedMessage ? 2 : nil }
}

extension FaultSwitches: TransferFaults {
    /// The first transfer of slot 0 completes twice.
    func completionsDelivered(slot: Int, transfer sequence: Int) -> Int {
        deliverCompletionTwice && slot == 0 && sequence == 0 ? 2 : 1
    }

    /// Start over under a new name; the first attempt's partial file is forgotten.
    func destinationAfterInterruption(of destination: String) -> String? {
        forgetPartialFile ? destination + ".again" : nil
    }

    /// A torn write in the bytes a resume keeps: the first byte flipped. Best effort (`try?`): a fault that
    /// could not be injected makes its proof test fail, which is where that shows.
    func willResume(fromPartialFile path: String) {
        guard corruptPartialFile, let file = try? DataFile.open(path, mode: .readWrite) else { return }
        var byte: [UInt8] = []
        try? file.read(into: &byte, count: 1, at: 0)
        try? file.write([~(byte.first ?? 0)][...], at: 0)
        file.close()
    }

    func removes(_ kind: TemporaryTransferFile, at path: String) -> Bool {
        switch kind {
        case .partialDownload: !forgetPartialFile
        case .multipartBody: !keepMultipartBody
        }
    }
}

extension FaultSwitches: RunLevelFaults {
    /// An hour-long timer armed on the first loop, cancelled once the handles were counted.
    func handlesWillBeCounted(on loops: [EventLoop]) async -> (@Sendable () -> Void)? {
        guard leakHandle, let loop = loops.first else { return nil }
        let timer = await withCheckedContinuation { continuation in
            loop.perform { continuation.resume(returning: ScheduledTimer(on: loop, after: .seconds(3600)) {}) }
        }
        return { timer.cancel() }
    }
}

/// The client's switches at its seam (which is class-bound, so this is a class holding them).
final class ClientFaultSwitches: WebSocketClientFaults {
    let switches: FaultSwitches

    init(_ switches: FaultSwitches) { self.switches = switches }

    /// The reference's bug: `.connected` before the server said anything.
    func upgradeRequestWillBeSent(announceConnected: () -> Void) {
        if switches.connectedBeforeHandshake { announceConnected() }
    }

    func messageAfterClose() -> WebSocketConnection.Message? { switches.deliverAfterDisconnect ? .text("late") : nil }

    func reportedCloseReason(_ reason: String?, code: WebSocketCloseCode) -> String? {
        switches.forgetAbnormalCloseReason && code == .abnormalClosure ? nil : reason
    }
}

extension RunFaults {
    /// `switches` at every seam, or (all off) nothing injected: an honest run.
    init(_ switches: FaultSwitches) {
        guard switches != FaultSwitches() else {
            self.init()
            return
        }
        self.init(reconnect: switches, messages: switches, transfers: switches, run: switches,
                  client: ClientFaultSwitches(switches), flow: switches)
    }
}

extension LoadRun {
    /// A run with `faults` switched on at its seams.
    init(profile: Profile, faults: FaultSwitches) {
        self.init(profile: profile, faults: RunFaults(faults))
    }
}

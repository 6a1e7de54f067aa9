import Clients
import Runtime

/// The seams a test may bend in one run, one optional conformance per area (the oracle's proofs use them to
/// make wsload misbehave on purpose). Nil, the default for every area, is the honest behaviour; a real run
/// never sets one, and the command line cannot.
package struct RunFaults: Sendable {
    /// A simulated client's connects, reconnects and backoffs (``VirtualUser``).
    package var reconnect: (any ReconnectFaults)?
    /// An open connection's echo requests and pushed messages, resolved once per connection (``ConnectionRun``).
    package var messages: (any MessageFaults)?
    /// Download and upload slots (``TransferUser``).
    package var transfers: (any TransferFaults)?
    /// The run as a whole (``LoadRun``).
    package var run: (any RunLevelFaults)?
    /// Every WebSocket client the run makes (``WebSocketManager``).
    package var client: (any WebSocketClientFaults)?
    /// Flow connections' interpreters (``FlowRun``).
    package var flow: (any FlowFaults)?

    package init(
        reconnect: (any ReconnectFaults)? = nil, messages: (any MessageFaults)? = nil,
        transfers: (any TransferFaults)? = nil, run: (any RunLevelFaults)? = nil,
        client: (any WebSocketClientFaults)? = nil, flow: (any FlowFaults)? = nil
    ) {
        self.flow = flow
        self.reconnect = reconnect
        self.messages = messages
        self.transfers = transfers
        self.run = run
        self.client = client
    }

    /// Whether no area is bent (a real run).
    package var isHonest: Bool {
        reconnect == nil && messages == nil && transfers == nil && run == nil && client == nil && flow == nil
    }
}

/// Where the run as a whole can be bent, for the oracle's proofs. The default is the honest run.
package protocol RunLevelFaults: Sendable {
    /// Every connection has ended and the run is about to count the runtime handles still open on `loops`
    /// (the cancellation check). Returns what to undo once they are counted; honest: nothing is left open, nil.
    func handlesWillBeCounted(on loops: [EventLoop]) async -> (@Sendable () -> Void)?
}

extension RunLevelFaults {
    package func handlesWillBeCounted(on loops: [EventLoop]) async -> (@Sendable () -> Void)? { nil }
}

/// Where a flow connection's interpreter can be bent, for the oracle's flow proofs. Asked per step or per wait,
/// never per message; the defaults are the honest interpreter.
package protocol FlowFaults: Sendable {
    /// An expect's timer stays armed after its message matched, and fires into whatever waits then. Honest: false.
    func keepsExpectTimerAfterMatch() -> Bool
    /// A template naming an undefined variable sends the message anyway (without the value). Honest: false.
    func sendsUndefinedTemplates() -> Bool
    /// Messages still in the inbox when the connection closed are handed to later expects. Honest: false.
    func scansInboxAfterClose() -> Bool
    /// socketio: every emit asks for the same ack id. Honest: false.
    func reusesAckIDs() -> Bool
    /// socketio: the server's Engine.IO pings go unanswered. Honest: false.
    func ignoresEngineIOPings() -> Bool
    /// graphql-ws: `unsubscribe` ends a subscription the server already completed (a second `complete` for the
    /// id). Honest: false.
    func endsSubscriptionsTwice() -> Bool
}

extension FlowFaults {
    package func keepsExpectTimerAfterMatch() -> Bool { false }
    package func sendsUndefinedTemplates() -> Bool { false }
    package func scansInboxAfterClose() -> Bool { false }
    package func reusesAckIDs() -> Bool { false }
    package func ignoresEngineIOPings() -> Bool { false }
    package func endsSubscriptionsTwice() -> Bool { false }
}

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

    package init(
        reconnect: (any ReconnectFaults)? = nil, messages: (any MessageFaults)? = nil,
        transfers: (any TransferFaults)? = nil, run: (any RunLevelFaults)? = nil,
        client: (any WebSocketClientFaults)? = nil
    ) {
        self.reconnect = reconnect
        self.messages = messages
        self.transfers = transfers
        self.run = run
        self.client = client
    }

    /// Whether no area is bent (a real run).
    package var isHonest: Bool {
        reconnect == nil && messages == nil && transfers == nil && run == nil && client == nil
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

/// One metric a report can hold: its report key, kind, unit, what it measures, when it is recorded and whether
/// thresholds may use it. Declared once in ``MetricCatalog``; recorders, thresholds, reports, compare, the
/// summary and the HTML refer to these declarations, never to a spelled-out name.
package struct Metric: Sendable, Hashable, CustomStringConvertible {
    /// What a metric holds, which decides its report shape and the statistics a threshold may ask of it.
    package enum Kind: Sendable, Hashable {
        /// A histogram of microseconds; lower is better.
        case latency
        /// A histogram of KiB per second (one sample per transfer); higher is better.
        case throughput
        /// A count of events: `{"count", "perSecond"}`.
        case counter
        /// Disconnects by the close code the client saw: `{"count", "byCode"}`.
        case closeCodes
        /// Errors by their stable code, with a rate per operation: `{"count", "perSecond", "rate", "byCode"}`.
        case errors

        /// Whether the report stores the metric as an HDR histogram.
        package var isHistogram: Bool { self == .latency || self == .throughput }
    }

    /// The unit a metric's values are in.
    package enum Unit: String, Sendable, Hashable {
        case microseconds = "us"
        case kibibytesPerSecond = "KiB/s"
        case count
        case bytes
    }

    /// The scenarios that record a metric.
    package enum Area: Sendable, Hashable {
        /// WebSocket scenarios (every pattern).
        case websocket
        /// Download and upload scenarios.
        case transfer
        /// Every scenario, or the run as a whole.
        case run
    }

    /// The report key, e.g. `ws.message_rtt`.
    package let name: String
    package let kind: Kind
    package let unit: Unit
    package let area: Area
    /// What the metric measures, in one line (docs/REPORT.md says the same).
    package let summary: String
    /// When a scenario of its area records it only in some runs (the report leaves a zero counter and an
    /// empty histogram out); nil: every scenario of its area records it in a run whose target answers.
    package let condition: String?
    /// Why a threshold may not name this metric; nil: thresholds may use it.
    package let notThresholdable: String?

    init(
        _ name: String, _ kind: Kind, _ unit: Unit, _ area: Area, _ summary: String, when condition: String? = nil,
        notThresholdable: String? = nil
    ) {
        self.name = name
        self.kind = kind
        self.unit = unit
        self.area = area
        self.summary = summary
        self.condition = condition
        self.notThresholdable = notThresholdable
    }

    /// Whether a threshold may name this metric.
    package var isThresholdable: Bool { notThresholdable == nil }

    package var description: String { name }
}

/// A metric whose report key carries a tag, such as `http.status.<code>`: one counter per tag value.
package struct MetricFamily: Sendable, Hashable {
    /// The key up to the tag, e.g. `http.status.`.
    package let prefix: String
    /// What the tag is, as the docs write it: `code` in `http.status.<code>`.
    package let tag: String
    package let kind: Metric.Kind
    package let area: Metric.Area
    package let summary: String
    package let condition: String?
    /// Why a threshold may not name a member; nil: a threshold names one as `PREFIX{TAG=VALUE}`, e.g.
    /// `flow.step{step=join}`.
    package let notThresholdable: String?

    /// The report key of one member: `http.status.200`.
    package func name(_ tag: some CustomStringConvertible) -> String { prefix + tag.description }

    /// The tag of `name` if it is a member, e.g. `200` for `http.status.200`.
    package func tag(of name: String) -> Substring? {
        name.hasPrefix(prefix) && name.count > prefix.count ? name.dropFirst(prefix.count) : nil
    }

    /// The family as the docs name it: `http.status.<code>`.
    package var documentedName: String { prefix + "<" + tag + ">" }

    /// The family as a threshold names it, without the trailing dot: `flow.step`.
    package var stem: String { String(prefix.dropLast()) }
}

extension Metric {
    // Latencies (histograms of microseconds).
    package static let connect = Metric("ws.connect", .latency, .microseconds, .websocket, "DNS and the TCP handshake")
    package static let tlsHandshake = Metric(
        "ws.tls_handshake", .latency, .microseconds, .websocket, "the TLS handshake", when: "wss targets only")
    package static let upgrade = Metric(
        "ws.upgrade", .latency, .microseconds, .websocket, "from sending the upgrade request to a valid 101")
    package static let messageRoundTrip = Metric(
        "ws.message_rtt", .latency, .microseconds, .websocket,
        "request to reply: from the actual send (closed model) or the intended send time (open model)",
        when: "echo and typed patterns")
    package static let pingRoundTrip = Metric(
        "ws.ping_rtt", .latency, .microseconds, .websocket, "ping to pong, with the pings of pingInterval",
        when: "scenarios with a pingInterval shorter than the run")
    package static let reconnectRecovery = Metric(
        "ws.reconnect_recovery", .latency, .microseconds, .websocket,
        "from an unintended disconnect (or a failed connect) to the next open connection",
        when: "a client with a reconnect policy lost its connection and got a new one")
    package static let messageGap = Metric(
        "ws.message_gap", .latency, .microseconds, .websocket,
        "between consecutive messages the server pushed", when: "receive pattern")
    package static let stopDuration = Metric(
        "ws.stop_duration", .latency, .microseconds, .run,
        "from the moment the run (or a ramp-down) stopped a client to the end of its task",
        when: "a client was still running when the run or a ramp-down stopped it")
    package static let timeToFirstByte = Metric(
        "http.ttfb", .latency, .microseconds, .transfer,
        "from sending the first request of an attempt to its response head (uploads: from the last body byte sent)")
    package static let transferDuration = Metric(
        "http.transfer_duration", .latency, .microseconds, .transfer,
        "the whole task, from its start to the file in place (interruptions, resumes and retries included)")

    // Throughput (a histogram of KiB per second, one sample per finished transfer).
    package static let throughput = Metric(
        "http.throughput", .throughput, .kibibytesPerSecond, .transfer, "KiB per second of each finished transfer")

    // Counters.
    package static let connectAttempts = Metric(
        "ws.connect_attempts", .counter, .count, .websocket, "connection attempts, reconnects included")
    package static let connectionsOpened = Metric(
        "ws.connections_opened", .counter, .count, .websocket, "handshakes completed")
    package static let messagesSent = Metric(
        "ws.messages_sent", .counter, .count, .websocket, "messages sent (requests)", when: "echo and typed patterns")
    package static let messagesReceived = Metric(
        "ws.messages_received", .counter, .count, .websocket, "messages received (replies; pushed messages)",
        when: "echo, typed and receive patterns")
    package static let bytesSent = Metric(
        "ws.bytes_sent", .counter, .bytes, .websocket, "message payload bytes sent, before compression",
        when: "echo and typed patterns")
    package static let bytesReceived = Metric(
        "ws.bytes_received", .counter, .bytes, .websocket, "message payload bytes received, before compression",
        when: "echo, typed and receive patterns")
    package static let reconnects = Metric(
        "ws.reconnects", .counter, .count, .websocket, "attempts after an unintended disconnect or a failed connect",
        when: "a client with a reconnect policy lost its connection")
    package static let messagesLost = Metric(
        "ws.messages_lost", .counter, .count, .websocket,
        "gaps in echo or push sequence numbers within one connection", when: "the server lost messages")
    package static let messagesDropped = Metric(
        "ws.messages_dropped", .counter, .count, .websocket,
        "open model: due sends skipped because 1,024 requests were unanswered", when: "open model, server far behind")
    package static let messagesScheduled = Metric(
        "ws.messages_scheduled", .counter, .count, .websocket,
        "open model: send times that fell due while connected", when: "open model")
    package static let messagesMissed = Metric(
        "ws.messages_missed", .counter, .count, .websocket,
        "open model: due sends a lagging sender had not reached when the run stopped", when: "open model, sender behind")
    package static let unfinishedAtStop = Metric(
        "ws.unfinished_at_stop", .counter, .count, .run, "connections cancelled after gracefulStop",
        when: "a client did not end within gracefulStop",
        notThresholdable: "it is counted in the run's total only, after the last interval")
    package static let flowSkipped = Metric(
        "flow.skipped", .counter, .count, .websocket, "non-matching messages a flow's expect skipped on its way to a match",
        when: "flow scenarios whose server sends messages an expect does not want")
    package static let flowCompleted = Metric(
        "flow.completed", .counter, .count, .websocket, "connections whose flow steps ran to the end",
        when: "flow scenarios")
    package static let flowIterations = Metric(
        "flow.iterations", .counter, .count, .websocket, "flow loop iterations started", when: "flow scenarios with a loop")
    package static let flowIterationsMissed = Metric(
        "flow.iterations_missed", .counter, .count, .websocket,
        "paced flow loop: iteration start times that passed while the previous iteration still ran",
        when: "a paced loop fell behind its rate")
    package static let transfersStarted = Metric(
        "http.transfers_started", .counter, .count, .transfer, "transfer tasks started (a resumed download is one task)")
    package static let transfersCompleted = Metric(
        "http.transfers_completed", .counter, .count, .transfer, "transfer tasks completed")
    package static let transfersFailed = Metric(
        "http.transfers_failed", .counter, .count, .transfer, "transfer tasks failed", when: "a transfer failed")
    package static let transferRetries = Metric(
        "http.retries", .counter, .count, .transfer,
        "requests or ranges repeated after a failure, with the backoff policy", when: "a request failed and was retried")
    package static let transferResumes = Metric(
        "http.resumes", .counter, .count, .transfer,
        "downloads continued from resume data after an interruption", when: "downloads with interrupt")
    package static let transferRestarts = Metric(
        "http.restarts", .counter, .count, .transfer,
        "downloads that started over (the file changed, or the server would not resume)",
        when: "a resume was refused")
    package static let transferBytesReceived = Metric(
        "http.bytes_received", .counter, .bytes, .transfer,
        "body bytes received over the network (a resume counts only what it fetched)", when: "downloads")
    package static let transferBytesSent = Metric(
        "http.bytes_sent", .counter, .bytes, .transfer, "body bytes sent over the network", when: "uploads")

    // By code (always written, even when empty).
    package static let disconnects = Metric(
        "ws.disconnects", .closeCodes, .count, .run,
        "disconnects by the close code the client saw (1006: no closing handshake)")
    package static let errors = Metric(
        "errors", .errors, .count, .run,
        "errors by code; rate is errors per operation (connection attempts, messages sent, transfers started)")
}

extension MetricFamily {
    /// Final HTTP responses by status (redirects included).
    package static let httpStatus = MetricFamily(
        prefix: "http.status.", tag: "code", kind: .counter, area: .transfer,
        summary: "final HTTP responses by status (redirects included)", condition: nil,
        notThresholdable: "its members are only known once a run has seen the statuses")

    /// A flow step's latency, by step name.
    package static let flowStep = MetricFamily(
        prefix: "flow.step.", tag: "step", kind: .latency, area: .websocket,
        summary: "a flow step's latency: an expect or on from the preceding send (or its mark), an ack from its emit, "
            + "a query's result, a subscription's end, a ping's pong, a group's whole block",
        condition: "flow scenarios, named steps that completed", notThresholdable: nil)
    /// graphql-ws subscriptions: the time to the first result.
    package static let flowFirstResult = MetricFamily(
        prefix: "flow.first_result.", tag: "step", kind: .latency, area: .websocket,
        summary: "graphql-ws subscribe: from the subscribe message to its first next",
        condition: "flow scenarios with a subscribe step", notThresholdable: nil)
    /// Failed executions of a flow step, by step name (their codes are in `errors`).
    package static let flowStepErrors = MetricFamily(
        prefix: "flow.step_errors.", tag: "step", kind: .counter, area: .websocket,
        summary: "a flow step's failures (timeouts, skip limits, missing captures, errors from the server)",
        condition: "a named flow step failed", notThresholdable: "thresholds name it as errors{step=NAME}")
    /// Messages outside any expect, by the type `classify` gives them (`other` when none matches).
    package static let flowPushed = MetricFamily(
        prefix: "flow.pushed.", tag: "type", kind: .counter, area: .websocket,
        summary: "messages that arrived outside any expect, by the type classify names (other: none matched)",
        condition: "flow scenarios whose server sends unasked", notThresholdable: nil)
    /// The `flow.pushed` type of a message no classifier matched, and of a socketio event not counted by its name.
    package static let flowPushedOther = "other"
    /// How many distinct socketio event names a scenario counts by name in a run, besides those its `on` steps name.
    package static let flowPushedDistinctLimit = 64
}

/// The metrics a report has, declared once, in the order reports, summaries and thresholds list them.
package enum MetricCatalog {
    /// Every metric with a fixed name.
    package static let all: [Metric] = [
        .connect, .tlsHandshake, .upgrade, .messageRoundTrip, .pingRoundTrip, .reconnectRecovery, .messageGap,
        .stopDuration, .timeToFirstByte, .transferDuration, .throughput,
        .connectAttempts, .connectionsOpened, .messagesSent, .messagesReceived, .bytesSent, .bytesReceived,
        .reconnects, .messagesLost, .messagesDropped, .messagesScheduled, .messagesMissed, .unfinishedAtStop,
        .flowSkipped, .flowCompleted, .flowIterations, .flowIterationsMissed,
        .transfersStarted, .transfersCompleted, .transfersFailed, .transferRetries, .transferResumes,
        .transferRestarts, .transferBytesReceived, .transferBytesSent,
        .disconnects, .errors,
    ]

    /// The metrics whose keys carry a tag.
    package static let families: [MetricFamily] = [.httpStatus, .flowStep, .flowFirstResult, .flowStepErrors, .flowPushed]

    /// The latency histograms, in catalogue order (the order summaries, charts and logs show them).
    package static let latencies = all.filter { $0.kind == .latency }

    /// The metrics a threshold may name, in catalogue order.
    package static let thresholdable = all.filter(\.isThresholdable)

    /// The counters the error rate divides by: one operation is a connection attempt, a message sent or a
    /// transfer started.
    package static let operations: [Metric] = [.connectAttempts, .messagesSent, .transfersStarted]

    private static let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The metric with report key `name`; nil for a family member or a name this build does not know (a
    /// report of another version may hold such names: they are read, merged and written back as they are).
    package static func metric(named name: String) -> Metric? { byName[name] }

    /// The family `name` is a member of, if any.
    package static func family(of name: String) -> MetricFamily? { families.first { $0.tag(of: name) != nil } }

    /// Whether this build knows `name` (a metric or a family member).
    package static func isCatalogued(_ name: String) -> Bool { metric(named: name) != nil || family(of: name) != nil }
}

/// The error codes the engine itself counts under `errors.byCode`. The other codes come from their own
/// typed enums and are not spelt again here: a WebSocket client's (`WebSocketClientError.Code`), the
/// runtime's (`RuntimeError.Code.name`) and a transfer's (`TransferError.Code`).
package enum EngineErrorCode: String, Sendable, CaseIterable {
    /// A client with a reconnect policy used up its attempts.
    case reconnectGaveUp = "reconnect_gave_up"
    /// An echo reply that is not a payload the client sent.
    case echoMismatch = "echo_mismatch"
    /// An echo reply older than one already answered.
    case echoOutOfOrder = "echo_out_of_order"
    /// A typed reply whose id no request of the connection has.
    case typedUnmatched = "typed_unmatched"
    /// A typed reply that does not decode as an envelope.
    case typedUndecodable = "typed_undecodable"
    /// A pushed message whose sequence is more than 2^20 ahead of the one due: no honest stream's gap.
    case pushMismatch = "push_mismatch"
    /// A flow `expect` (or socketio `on`) saw no matching message within its `within`.
    case expectTimeout = "expect_timeout"
    /// A flow `expect` skipped more non-matching messages than its `skip` limit allows.
    case expectSkipLimit = "expect_skip_limit"
    /// A flow step matched a message, but one of its captures found nothing at its path or group.
    case captureMissing = "capture_missing"
    /// A flow template named a variable (or feeder column) with no value when it was expanded.
    case templateUndefined = "template_undefined"
    /// A socketio `emit` with `ack: true` got no ack (or no matching one) within its `within`.
    case ackTimeout = "ack_timeout"
    /// A flow `ping` step got no pong within its `within`.
    case pingTimeout = "ping_timeout"
    /// socketio: the namespace connect was refused (CONNECT_ERROR) or did not come within the timeout.
    case socketIOConnectError = "socketio_connect_error"
    /// socketio: no Engine.IO ping from the server within pingInterval + pingTimeout (a dead server).
    case socketIOPingTimeout = "socketio_ping_timeout"
    /// socketio: a malformed Engine.IO or Socket.IO packet from the server.
    case socketIOProtocol = "socketio_protocol"
    /// socketio: a binary event or ack (attachments), which wsload refuses.
    case socketIOBinaryUnsupported = "socketio_binary_unsupported"
    /// graphql-ws: no `connection_ack` within the handshake timeout.
    case graphQLAckTimeout = "graphql_ack_timeout"
    /// graphql-ws: an `error` message, or `errors` in a result.
    case graphQLError = "graphql_error"
    /// graphql-ws: a malformed message, an unknown id, or a `next` after `complete`.
    case graphQLProtocol = "graphql_protocol"
    /// graphql-ws: the server's 101 chose no subprotocol where `graphql-transport-ws` was offered and required.
    case subprotocolRefused = "subprotocol_refused"
}

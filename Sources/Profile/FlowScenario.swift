import Flow
import JSON

/// A `flow` scenario's conversation: the steps every connection runs, the protocol preset they speak, what the
/// handshake carries, and how messages outside any `expect` are classified. Decoded and validated by
/// ``ProfileDecoder`` (`ProfileDecoder+Flow*.swift`); templates, paths and regexes are parsed there, once.
package struct FlowScenario: Sendable {
    /// The protocol the steps are framed in.
    package enum Preset: String, Sendable, CaseIterable {
        /// Plain WebSocket messages: `send` and `expect`.
        case raw
        /// Socket.IO v4 over Engine.IO 4, WebSocket transport only: `emit` and `on`.
        case socketio
        /// The graphql-transport-ws subprotocol: `query`, `subscribe` and `unsubscribe`.
        case graphqlWS = "graphql-ws"
    }

    package var preset: Preset = .raw
    package var steps: [FlowStep] = []
    /// Handshake headers, templated (e.g. a feeder row's bearer token).
    package var headers: [(name: String, value: Template)] = []
    /// Query parameters appended to the request target, templated.
    package var query: [(name: String, value: Template)] = []
    /// Names the messages that arrive outside any `expect`, first match wins (`flow.pushed.<type>`; unmatched
    /// ones count as `other`).
    package var classify: [(type: String, matcher: MessageMatcher)] = []
    /// Every step name of the scenario in document order; a step's `nameIndex` points here (the recorder keeps
    /// one histogram per name in this order).
    package var stepNames: [String] = []
    /// The feeders (keys of the profile's `data`) the scenario's templates read: a connection binds a row of each.
    package var feeders: [String] = []
    /// Every `${feeder.column}` the scenario's templates read, where: the loader checks each file has the column.
    package var feederColumns: [FeederColumnUse] = []
    /// socketio: the namespace joined (`/` by default) and the CONNECT packet's auth payload.
    package var namespace = "/"
    package var connectPayload: JSONTemplate?
    /// graphql-ws: the `connection_init` payload.
    package var initPayload: JSONTemplate?
    /// socketio: the namespace connect; graphql-ws: `connection_ack`.
    package var handshakeTimeout: Duration = .seconds(10)

    package init() {}
}

/// A feeder column a template reads (`${users.token}`), and the JSON path of the template.
package struct FeederColumnUse: Sendable, Equatable {
    package var feeder: String
    package var column: String
    package var path: String

    package init(feeder: String, column: String, path: String) {
        self.feeder = feeder
        self.column = column
        self.path = path
    }
}

/// What a step does when it fails: an `expect` (or `on`, `query`, `subscribe`, an ack, a ping) that timed out, hit
/// its skip limit, or could not capture.
package enum FlowFailurePolicy: String, Sendable, CaseIterable {
    /// Go on with the next step (captures the step would have made stay undefined).
    case `continue`
    /// Start the steps over from the top on the same connection.
    case restart
    /// Close the connection (1000); the connection is finished and does not reconnect.
    case close
}

/// How long a `think` waits.
package enum ThinkTime: Sendable, Equatable {
    case fixed(Duration)
    /// Uniform in the range.
    case uniform(ClosedRange<Duration>)
}

/// What a `send` step sends.
package enum FlowPayload: Sendable, Equatable {
    case text(Template)
    case binary([UInt8])
    case json(JSONTemplate)
}

/// An `expect` step (and the matching half of `on`): wait `within` for a message that matches, skipping (and
/// counting) up to `skipLimit` that do not.
package struct FlowExpectation: Sendable, Equatable {
    package var matcher: MessageMatcher
    package var within: Duration
    package var captures: [Capture] = []
    package var skipLimit = 1000
    package var onTimeout: FlowFailurePolicy = .continue
    /// Latency from this mark (`mark` step) instead of the preceding send.
    package var from: String?

    package init(matcher: MessageMatcher, within: Duration) {
        self.matcher = matcher
        self.within = within
    }
}

/// A loop's bound and pacing.
package struct FlowLoop: Sendable, Equatable {
    /// Iterations; nil with `duration` nil: until the run stops the connection.
    package var count: Int?
    /// For how long iterations start.
    package var duration: Duration?
    /// Open model: iterations start at this rate per connection (a total rate is divided by the decoder), latency
    /// measured from each iteration's intended start; nil: back to back.
    package var ratePerConnection: Double?
    package var steps: [FlowStep]

    package init(steps: [FlowStep]) { self.steps = steps }
}

/// An `if` step's condition on a captured variable.
package enum FlowCondition: Sendable, Equatable {
    case exists(String)
    case equals(String, JSONTemplate)
}

/// socketio `emit`: an event with arguments; with `ack`, the step awaits and times the server's ack.
package struct SocketIOEmit: Sendable, Equatable {
    package var event: String
    package var arguments: [JSONTemplate] = []
    /// Await the ack within this long (the step's latency); nil: fire and forget.
    package var ackWithin: Duration?
    /// Conditions on the ack's arguments array (`$[0].ok`) and captures from it.
    package var ackMatch: [JSONCondition] = []
    package var ackCaptures: [Capture] = []
    package var onTimeout: FlowFailurePolicy = .continue

    package init(event: String) { self.event = event }
}

/// socketio `on`: expect an event by name; conditions and captures apply to its arguments array (`$[0].room`).
package struct SocketIOOn: Sendable, Equatable {
    package var event: String
    package var expectation: FlowExpectation

    package init(event: String, expectation: FlowExpectation) {
        self.event = event
        self.expectation = expectation
    }
}

/// graphql-ws: the operation a `subscribe` message carries.
package struct GraphQLOperation: Sendable, Equatable {
    package var query: Template
    package var variables: JSONTemplate?
    package var operationName: String?

    package init(query: Template) { self.query = query }
}

/// graphql-ws `query`: one operation, one result (`next` then `complete`), timed; conditions and captures apply to
/// the `next` payload (`$.data.hello`).
package struct GraphQLQuery: Sendable, Equatable {
    package var operation: GraphQLOperation
    package var within: Duration
    package var match: [JSONCondition] = []
    package var captures: [Capture] = []
    package var onTimeout: FlowFailurePolicy = .continue

    package init(operation: GraphQLOperation, within: Duration) {
        self.operation = operation
        self.within = within
    }
}

/// graphql-ws `subscribe`: start a subscription and await `count` `next`s (nil: its `complete`), each `within`;
/// `flow.step` times the whole step, `flow.first_result` the first `next`.
package struct GraphQLSubscription: Sendable, Equatable {
    package var operation: GraphQLOperation
    package var count: Int?
    package var within: Duration
    /// Conditions every `next` payload must meet.
    package var match: [JSONCondition] = []
    package var onTimeout: FlowFailurePolicy = .continue

    package init(operation: GraphQLOperation, within: Duration) {
        self.operation = operation
        self.within = within
    }
}

/// One step of a flow. `name` tags its metrics (`flow.step{step=NAME}`); timed steps must have one.
package struct FlowStep: Sendable, Equatable {
    package indirect enum Action: Sendable, Equatable {
        case send(FlowPayload)
        case expect(FlowExpectation)
        case think(ThinkTime)
        case loop(FlowLoop)
        /// A named block, timed as a whole.
        case group([FlowStep])
        /// Send a ping and await its pong within the duration (timed).
        case ping(within: Duration, onTimeout: FlowFailurePolicy)
        case close(code: UInt16, reason: String)
        /// Close (1000) and open a new connection; the steps go on after this one, captures kept.
        case reconnect
        /// Remember now under a name: an `expect` with `from` measures from here.
        case mark(String)
        case ifThen(FlowCondition, then: [FlowStep], otherwise: [FlowStep])
        case emit(SocketIOEmit)
        case on(SocketIOOn)
        case query(GraphQLQuery)
        case subscribe(GraphQLSubscription)
        /// Send `complete` for the subscription a `subscribe` step of this name started.
        case unsubscribe(String)
    }

    package var action: Action
    package var name: String?
    /// The position of `name` in ``FlowScenario/stepNames``.
    package var nameIndex: Int?
    /// The step's JSON path in the profile (`scenarios[0].steps[2]`), for messages.
    package var path: String

    package init(action: Action, name: String? = nil, nameIndex: Int? = nil, path: String) {
        self.action = action
        self.name = name
        self.nameIndex = nameIndex
        self.path = path
    }
}

/// A feeder (`data.<name>`): rows a connection binds one of for its lifetime.
package struct FeederSource: Sendable, Equatable {
    package enum Format: String, Sendable, CaseIterable {
        case csv
        /// One JSON object per line.
        case jsonLines = "jsonl"
    }

    package enum Mode: String, Sendable, CaseIterable {
        /// Row `vu % rows`.
        case sequential
        /// A row drawn with the run's seed.
        case random
        /// Row `vu`; the run refuses to start with fewer rows than connections.
        case unique
    }

    package var name: String
    package var file: String
    package var format: Format
    package var mode: Mode = .sequential
    /// Columns that never appear in a report, a log or a summary.
    package var secretColumns: [String] = []

    package init(name: String, file: String, format: Format) {
        self.name = name
        self.file = file
        self.format = format
    }
}

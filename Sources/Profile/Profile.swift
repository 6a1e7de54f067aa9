import Flow
import JSON
import Lifecycle
import WebSocket

/// A load profile: what to connect to, which scenarios to run on how many connections for how long,
/// and the thresholds the run must meet. Decoded and validated by ``ProfileDecoder`` (every problem at
/// once, each with its JSON path); the engine only ever sees a valid one.
package struct Profile: Sendable {
    /// The profile format this build reads.
    package static let currentVersion = 1

    /// What the run connects to.
    package enum Target: Sendable, Equatable {
        /// Start the embedded server in-process on an ephemeral loopback port.
        case embedded
        case url(WebSocketURL)
    }

    /// How TLS targets are verified.
    package struct TLSOptions: Sendable, Equatable {
        /// PEM file of trusted CAs (instead of the system store).
        package var caFile: String?
        /// Skip certificate verification (self-signed targets). Off unless the profile says so.
        package var isInsecure = false
        /// The name for SNI and verification, if not the URL's host.
        package var serverName: String?
    }

    /// Where the auth token comes from: never the profile itself, so a profile can be shared and
    /// a report (which embeds the profile) never holds a secret.
    package struct Authentication: Sendable, Equatable {
        /// Where the token goes in the handshake.
        package enum Placement: Sendable, Equatable {
            case bearer
            case header(name: String)
            case query(name: String)
        }
        /// Where the token is read from.
        package enum Source: Sendable, Equatable {
            case environment(String)
            case file(String)
        }
        package var placement: Placement
        package var source: Source

        package init(placement: Placement, source: Source) {
            self.placement = placement
            self.source = source
        }
    }

    /// Where the report goes and how fine its interval series is.
    package struct ReportOptions: Sendable, Equatable {
        /// Where the JSON report is written (created if missing).
        package var directory = "Reports/runs"
        /// The interval series resolution: one base interval (at least 100 ms).
        package var interval: Duration = .seconds(1)
        /// The most interval entries a report holds (`report.maxIntervals`, 2...100,000): past it adjacent entries
        /// merge, so a run of any length keeps a bounded series (the journal keeps every base interval).
        package var maxIntervals = 600
        /// The values `maxIntervals` may take.
        package static let maxIntervalsRange = 2...100_000
    }

    package var version: Int
    package var name: String
    package var target: Target
    package var tls = TLSOptions()
    /// Extra handshake headers, in order.
    package var headers: [(name: String, value: String)] = []
    package var authentication: Authentication?
    /// How long the load runs (stages may be shorter; the longest decides when the run ends).
    package var duration: Duration
    /// After the duration: how long connections get to finish in-flight work and close cleanly.
    package var gracefulStop: Duration = .seconds(5)
    /// Event loops (threads); nil: one per core.
    package var loops: Int?
    /// Seeds every random choice (jitter, sizes, phases); nil: a fresh seed, written to the report.
    package var seed: UInt64?
    package var scenarios: [Scenario]
    package var thresholds: [Threshold] = []
    /// Faults applied to the embedded server at moments of the run.
    package var chaos: [ChaosEvent] = []
    package var report = ReportOptions()
    /// Feeders (`data`): row sources flow scenarios bind a row of per connection, by name.
    package var data: [FeederSource] = []
    /// The feeders' rows, loaded from their files before the run (``FeederLoader``); empty in a profile read back
    /// from a report, which never holds them.
    package var feederTables = FeederTables()
    /// The document the profile was decoded from (reports embed it, with secrets removed).
    package var document: JSONValue = .null
}

/// A fault at a moment of the run (a profile's `chaos` timeline), applied to the embedded server.
package struct ChaosEvent: Sendable, Equatable {
    /// When, from the start of the run.
    package var at: Duration
    package var action: ServerChaosAction

    package init(at: Duration, action: ServerChaosAction) {
        self.at = at
        self.action = action
    }
}

/// One group of simulated clients doing the same thing.
package struct Scenario: Sendable {
    /// What the scenario's clients are.
    package enum Kind: String, Sendable, CaseIterable {
        case websocket
        /// Background download or upload tasks: `connections` is how many run at once.
        case download, upload
    }

    package var name: String
    package var kind: Kind
    /// When the scenario starts, relative to the start of the run.
    package var startAfter: Duration = .zero
    /// For every kind: `connections` and `stages` (a transfer scenario's concurrency ramps the same way).
    package var websocket: WebSocketScenario
    /// For `download` and `upload`.
    package var transfer: TransferScenario? = nil
}

/// What each slot of a download or upload scenario does, transfer after transfer.
package struct TransferScenario: Sendable, Equatable {
    /// An absolute `http(s)://` URL (a server we do not control).
    package var url: String?
    /// A path on the target's origin (the embedded server's, or the profile URL's host and port).
    package var path: String?
    /// Downloads: the embedded server's generated `/bytes/<size>` (digest known, so every download is
    /// verified); uploads: a generated file of this size.
    package var size: Int64?
    /// Uploads: send this file.
    package var file: String?
    package var segments = 1
    /// Connections per ranged download (aria2 -x); nil: one per segment.
    package var connectionsPerTransfer: Int?
    package var minimumSegmentSize: Int64 = 1 << 20
    /// Transfers each slot makes before it ends; nil: until the run ends.
    package var repeats: Int?
    /// Downloads: the share cut at a random byte and resumed from their resume data.
    package var interruptProbability: Double = 0
    /// Uploads: PUT or POST.
    package var method = "PUT"
    /// Uploads: send the file as multipart/form-data (written to a temporary file first).
    package var isMultipart = false
    /// Downloads: the expected SHA-256 of what `url` or `path` serves.
    package var sha256: [UInt8]?
    /// Bytes per second per transfer.
    package var bandwidthLimit: Int64?
    package var requestTimeout: Duration = .seconds(30)
    /// Backoff for retried requests and segments; nil: the transfer default (5 attempts from 200 ms).
    package var retry: ReconnectPolicy?
    /// Where downloads are written; nil: a temporary directory removed after the run.
    package var directory: String?
    /// Keep downloaded files (by default each is deleted once verified, so a long run does not fill the disk).
    package var keepsFiles = false

    package init() {}
}

/// What each connection of a scenario does: its pattern, ramp, pings, reconnects, messages and schedule.
package struct WebSocketScenario: Sendable {
    /// What a connection does once open.
    package enum Pattern: String, Sendable, CaseIterable {
        /// Send, await the echo, record the round trip.
        case echo
        /// Hold the connection open with pings only.
        case idle
        /// The server pushes; count messages and measure the gaps between them.
        case receive
        /// Codable JSON envelopes; requests and responses correlated by id.
        case typed
        /// A scripted conversation: the scenario's `steps` (``FlowScenario``).
        case flow
    }

    /// Whether messages go as text or binary frames.
    package enum MessageFormat: String, Sendable, CaseIterable { case text, binary }

    /// Message sizes in bytes.
    package enum SizeDistribution: Sendable, Equatable {
        case fixed(Int)
        case uniform(ClosedRange<Int>)
        /// Sizes drawn with the given relative weights.
        case weighted([(size: Int, weight: Double)])

        package static func == (lhs: Self, rhs: Self) -> Bool {
            switch (lhs, rhs) {
            case (.fixed(let a), .fixed(let b)): a == b
            case (.uniform(let a), .uniform(let b)): a == b
            case (.weighted(let a), .weighted(let b)): a.map(\.size) == b.map(\.size) && a.map(\.weight) == b.map(\.weight)
            default: false
            }
        }

        /// The smallest size the distribution can draw.
        package var minimum: Int {
            switch self {
            case .fixed(let size): size
            case .uniform(let range): range.lowerBound
            case .weighted(let choices): choices.filter { $0.weight > 0 }.map(\.size).min() ?? 0
            }
        }

        /// The largest size the distribution can draw.
        package var maximum: Int {
            switch self {
            case .fixed(let size): size
            case .uniform(let range): range.upperBound
            case .weighted(let choices): choices.map(\.size).max() ?? 0
            }
        }
    }

    /// How sends are timed.
    package enum Schedule: Sendable, Equatable {
        /// Closed model: each connection sends, awaits the reply, waits `thinkTime`, sends again. Latency
        /// is measured from the actual send.
        case closed(thinkTime: Duration)
        /// Open model: sends follow a fixed-rate timetable whatever the replies do; latency is measured from
        /// the intended send time (coordinated omission corrected). `perConnection` is the rate each
        /// connection sends at (a total rate is divided over the connections by the decoder).
        case open(perConnection: Double)

        package var modelName: String {
            switch self {
            case .closed: "closed"
            case .open: "open"
            }
        }
    }

    /// A point of the connection ramp: reach `target` connections, linearly, over `duration`.
    package struct Stage: Sendable, Equatable {
        package var target: Int
        package var duration: Duration

        package init(target: Int, duration: Duration) {
            self.target = target
            self.duration = duration
        }
    }

    package var pattern: Pattern
    /// Path and query on the target (e.g. `/push?interval=10ms`); nil: the target URL's own.
    package var path: String?
    /// Connections; with stages, the largest stage target.
    package var connections: Int
    package var stages: [Stage] = []
    package var pingInterval: Duration?
    package var pingTimeout: Duration = .seconds(10)
    /// nil: a dropped connection stays down.
    package var reconnect: ReconnectPolicy?
    package var subprotocols: [String] = []
    package var compression = false
    package var messageSize: SizeDistribution = .fixed(64)
    package var messageFormat: MessageFormat = .binary
    package var schedule: Schedule = .closed(thinkTime: .zero)
    /// Messages per connection before it closes (nil: until the run ends).
    package var messagesPerConnection: Int?
    /// For `receive`: a text message sent once connected (a subscription).
    package var subscribe: String?
    /// For `typed`: the envelope's `type`.
    package var typeName = "echo"
    /// For `flow`: the steps, preset, handshake templates and classifiers.
    package var flow: FlowScenario?
}

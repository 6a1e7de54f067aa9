import JSON
import Lifecycle
import WebSocket

/// A load profile: what to connect to, which scenarios to run on how many connections for how long,
/// and the thresholds the run must meet. Decoded and validated by ``ProfileDecoder`` (every problem at
/// once, each with its JSON path); the engine only ever sees a valid one.
public struct Profile: Sendable {
    /// The profile format this build reads.
    public static let currentVersion = 1

    /// What the run connects to.
    public enum Target: Sendable, Equatable {
        /// Start the embedded server in-process on an ephemeral loopback port.
        case embedded
        case url(WebSocketURL)
    }

    /// How TLS targets are verified.
    public struct TLSOptions: Sendable, Equatable {
        /// PEM file of trusted CAs (instead of the system store).
        public var caFile: String?
        /// Skip certificate verification (self-signed targets). Off unless the profile says so.
        public var isInsecure = false
        /// The name for SNI and verification, if not the URL's host.
        public var serverName: String?
    }

    /// Where the auth token comes from: never the profile itself, so a profile can be shared and
    /// a report (which embeds the profile) never holds a secret.
    public struct Authentication: Sendable, Equatable {
        /// Where the token goes in the handshake.
        public enum Placement: Sendable, Equatable {
            case bearer
            case header(name: String)
            case query(name: String)
        }
        /// Where the token is read from.
        public enum Source: Sendable, Equatable {
            case environment(String)
            case file(String)
        }
        public var placement: Placement
        public var source: Source

        public init(placement: Placement, source: Source) {
            self.placement = placement
            self.source = source
        }
    }

    /// Where the report goes and how fine its interval series is.
    public struct ReportOptions: Sendable, Equatable {
        /// Where the JSON report is written (created if missing).
        public var directory = "Reports/runs"
        /// The interval series resolution.
        public var interval: Duration = .seconds(5)
    }

    public var version: Int
    public var name: String
    public var target: Target
    public var tls = TLSOptions()
    /// Extra handshake headers, in order.
    public var headers: [(name: String, value: String)] = []
    public var authentication: Authentication?
    /// How long the load runs (stages may be shorter; the longest decides when the run ends).
    public var duration: Duration
    /// After the duration: how long connections get to finish in-flight work and close cleanly.
    public var gracefulStop: Duration = .seconds(5)
    /// Event loops (threads); nil: one per core.
    public var loops: Int?
    /// Seeds every random choice (jitter, sizes, phases); nil: a fresh seed, written to the report.
    public var seed: UInt64?
    public var scenarios: [Scenario]
    public var thresholds: [Threshold] = []
    /// Faults applied to the embedded server at moments of the run.
    public var chaos: [ChaosEvent] = []
    public var report = ReportOptions()
    /// The document the profile was decoded from (reports embed it, with secrets removed).
    public var document: JSONValue = .null
}

/// A fault at a moment of the run (a profile's `chaos` timeline), applied to the embedded server.
public struct ChaosEvent: Sendable, Equatable {
    /// When, from the start of the run.
    public var at: Duration
    public var action: ServerChaosAction

    public init(at: Duration, action: ServerChaosAction) {
        self.at = at
        self.action = action
    }
}

/// One group of simulated clients doing the same thing.
public struct Scenario: Sendable {
    /// What the scenario's clients are.
    public enum Kind: String, Sendable, CaseIterable {
        case websocket
        /// Background download or upload tasks: `connections` is how many run at once.
        case download, upload
    }

    public var name: String
    public var kind: Kind
    /// When the scenario starts, relative to the start of the run.
    public var startAfter: Duration = .zero
    /// For every kind: `connections` and `stages` (a transfer scenario's concurrency ramps the same way).
    public var websocket: WebSocketScenario
    /// For `download` and `upload`.
    public var transfer: TransferScenario? = nil
}

/// What each slot of a download or upload scenario does, transfer after transfer.
public struct TransferScenario: Sendable, Equatable {
    /// An absolute `http(s)://` URL (a server we do not control).
    public var url: String?
    /// A path on the target's origin (the embedded server's, or the profile URL's host and port).
    public var path: String?
    /// Downloads: the embedded server's generated `/bytes/<size>` (digest known, so every download is
    /// verified); uploads: a generated file of this size.
    public var size: Int64?
    /// Uploads: send this file.
    public var file: String?
    public var segments = 1
    /// Connections per ranged download (aria2 -x); nil: one per segment.
    public var connectionsPerTransfer: Int?
    public var minimumSegmentSize: Int64 = 1 << 20
    /// Transfers each slot makes before it ends; nil: until the run ends.
    public var repeats: Int?
    /// Downloads: the share cut at a random byte and resumed from their resume data.
    public var interruptProbability: Double = 0
    /// Uploads: PUT or POST.
    public var method = "PUT"
    /// Uploads: send the file as multipart/form-data (written to a temporary file first).
    public var isMultipart = false
    /// Downloads: the expected SHA-256 of what `url` or `path` serves.
    public var sha256: [UInt8]?
    /// Bytes per second per transfer.
    public var bandwidthLimit: Int64?
    public var requestTimeout: Duration = .seconds(30)
    /// Backoff for retried requests and segments; nil: the transfer default (5 attempts from 200 ms).
    public var retry: ReconnectPolicy?
    /// Where downloads are written; nil: a temporary directory removed after the run.
    public var directory: String?
    /// Keep downloaded files (by default each is deleted once verified, so a long run does not fill the disk).
    public var keepsFiles = false

    public init() {}
}

/// What each connection of a scenario does: its pattern, ramp, pings, reconnects, messages and schedule.
public struct WebSocketScenario: Sendable {
    /// What a connection does once open.
    public enum Pattern: String, Sendable, CaseIterable {
        /// Send, await the echo, record the round trip.
        case echo
        /// Hold the connection open with pings only.
        case idle
        /// The server pushes; count messages and measure the gaps between them.
        case receive
        /// Codable JSON envelopes; requests and responses correlated by id.
        case typed
    }

    /// Whether messages go as text or binary frames.
    public enum MessageFormat: String, Sendable, CaseIterable { case text, binary }

    /// Message sizes in bytes.
    public enum SizeDistribution: Sendable, Equatable {
        case fixed(Int)
        case uniform(ClosedRange<Int>)
        /// Sizes drawn with the given relative weights.
        case weighted([(size: Int, weight: Double)])

        public static func == (lhs: Self, rhs: Self) -> Bool {
            switch (lhs, rhs) {
            case (.fixed(let a), .fixed(let b)): a == b
            case (.uniform(let a), .uniform(let b)): a == b
            case (.weighted(let a), .weighted(let b)): a.map(\.size) == b.map(\.size) && a.map(\.weight) == b.map(\.weight)
            default: false
            }
        }

        /// The smallest size the distribution can draw.
        public var minimum: Int {
            switch self {
            case .fixed(let size): size
            case .uniform(let range): range.lowerBound
            case .weighted(let choices): choices.filter { $0.weight > 0 }.map(\.size).min() ?? 0
            }
        }

        /// The largest size the distribution can draw.
        public var maximum: Int {
            switch self {
            case .fixed(let size): size
            case .uniform(let range): range.upperBound
            case .weighted(let choices): choices.map(\.size).max() ?? 0
            }
        }
    }

    /// How sends are timed.
    public enum Schedule: Sendable, Equatable {
        /// Closed model: each connection sends, awaits the reply, waits `thinkTime`, sends again. Latency
        /// is measured from the actual send.
        case closed(thinkTime: Duration)
        /// Open model: sends follow a fixed-rate timetable whatever the replies do; latency is measured from
        /// the intended send time (coordinated omission corrected). `perConnection` is the rate each
        /// connection sends at (a total rate is divided over the connections by the decoder).
        case open(perConnection: Double)

        public var modelName: String {
            switch self {
            case .closed: "closed"
            case .open: "open"
            }
        }
    }

    /// A point of the connection ramp: reach `target` connections, linearly, over `duration`.
    public struct Stage: Sendable, Equatable {
        public var target: Int
        public var duration: Duration

        public init(target: Int, duration: Duration) {
            self.target = target
            self.duration = duration
        }
    }

    public var pattern: Pattern
    /// Path and query on the target (e.g. `/push?interval=10ms`); nil: the target URL's own.
    public var path: String?
    /// Connections; with stages, the largest stage target.
    public var connections: Int
    public var stages: [Stage] = []
    public var pingInterval: Duration?
    public var pingTimeout: Duration = .seconds(10)
    /// nil: a dropped connection stays down.
    public var reconnect: ReconnectPolicy?
    public var subprotocols: [String] = []
    public var compression = false
    public var messageSize: SizeDistribution = .fixed(64)
    public var messageFormat: MessageFormat = .binary
    public var schedule: Schedule = .closed(thinkTime: .zero)
    /// Messages per connection before it closes (nil: until the run ends).
    public var messagesPerConnection: Int?
    /// For `receive`: a text message sent once connected (a subscription).
    public var subscribe: String?
    /// For `typed`: the envelope's `type`.
    public var typeName = "echo"
}

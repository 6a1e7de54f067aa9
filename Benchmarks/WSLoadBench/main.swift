// wsload-bench: prints measured figures; asserts nothing.
//
//   swift run -c release wsload-bench runtime [--connections 1000] [--idle 10000] [--seconds 5]
//   swift run -c release wsload-bench websocket [--connections 1000] [--idle 10000] [--seconds 5]
//                                               [--peer embedded|node|both] [--api receive|events|both] [--loops N]
//   swift run -c release wsload-bench histogram [--samples 10000000]
//   swift run -c release wsload-bench metrics [--scenarios 3] [--steps 8] [--samples 100000]
//   swift run -c release wsload-bench handshake [--rounds 100000]
//   swift run -c release wsload-bench flow [--rounds 1000000]
//   wsload-bench echo-server            (internal: the peer process the runtime benchmark drives)
import Foundation
import Runtime

let arguments = Array(CommandLine.arguments.dropFirst())

func option(_ name: String, default value: Int) -> Int {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count,
        let parsed = Int(arguments[index + 1])
    else { return value }
    return parsed
}

switch arguments.first {
case "runtime":
    try await RuntimeBenchmark(
        echoConnections: option("--connections", default: 1000),
        idleConnections: option("--idle", default: 10_000),
        seconds: option("--seconds", default: 5)
    ).run()
case "websocket":
    let peer = arguments.firstIndex(of: "--peer").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil } ?? "both"
    try await WebSocketBenchmark(
        connections: option("--connections", default: 1000),
        idleConnections: option("--idle", default: 10_000),
        seconds: option("--seconds", default: 5),
        peers: peer == "both" ? ["embedded", "node"] : [peer],
        apis: {
            let api = arguments.firstIndex(of: "--api").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil } ?? "both"
            return api == "both" ? ["receive", "events"] : [api]
        }(),
        loops: option("--loops", default: EventLoopGroup.defaultLoopCount)
    ).run()
case "histogram":
    HistogramBenchmark(samples: option("--samples", default: 10_000_000)).run()
case "metrics":
    MetricsBenchmark(scenarios: option("--scenarios", default: 3), steps: option("--steps", default: 8),
                     samples: option("--samples", default: 100_000)).run()
case "handshake":
    HandshakeBenchmark(rounds: option("--rounds", default: 100_000)).run()
case "flow":
    try FlowBenchmark(rounds: option("--rounds", default: 1_000_000)).run()
case "echo-server":
    try await runEchoServer()
default:
    FileHandle.standardError.write(Data("usage: wsload-bench runtime|websocket|histogram|metrics|handshake|flow [--connections N] [--idle N] [--seconds S] [--peer embedded|node|both] [--api receive|events|both] [--loops N] [--rounds N]\n".utf8))
    exit(64)
}

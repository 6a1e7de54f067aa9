// wsload-bench: prints measured figures; asserts nothing.
//
//   swift run -c release wsload-bench runtime [--connections 1000] [--idle 10000] [--seconds 5]
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
case "echo-server":
    try await runEchoServer()
default:
    FileHandle.standardError.write(Data("usage: wsload-bench runtime [--connections N] [--idle N] [--seconds S]\n".utf8))
    exit(64)
}

import Foundation
import Runtime

/// The benchmark's peer: a TCP echo server on every loop, in its own process so that its CPU time
/// and its file descriptors are not charged to the client being measured. Prints `listening PORT`.
func runEchoServer() async throws {
    ResourceLimits.raiseOpenFileLimit()
    let group = try EventLoopGroup()
    let listeners = try await TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: group.loops, backlog: 4096)
    FileHandle.standardOutput.write(Data("listening \(listeners[0].localAddress.port)\n".utf8))
    await withDiscardingTaskGroup { tasks in
        for listener in listeners {
            tasks.addTask(executorPreference: listener.loop.taskExecutor) {
                await withDiscardingTaskGroup { connections in
                    while let connection = try? await listener.accept() {
                        connections.addTask(executorPreference: listener.loop.taskExecutor) {
                            var buffer: [UInt8] = []
                            buffer.reserveCapacity(4096)
                            while let count = try? await connection.read(into: &buffer, maxBytes: 64 * 1024), count > 0 {
                                guard (try? await connection.write(buffer)) != nil else { break }
                                buffer.removeAll(keepingCapacity: true)
                            }
                            connection.close()
                        }
                    }
                }
            }
        }
    }
}

/// Starts `wsload-bench echo-server` as a child and returns it with its port.
func startEchoServerProcess() throws -> (process: Process, port: Int) {
    let (process, line) = try startChildProcess(URL(fileURLWithPath: CommandLine.arguments[0]), arguments: ["echo-server"])
    guard line.hasPrefix("listening "), let port = Int(line.dropFirst(10)) else {
        throw RuntimeError(.io, function: "echo-server", detail: "unexpected output: \(line)")
    }
    return (process, port)
}

/// Starts a benchmark peer and returns it with the first line it printed (peers announce their port).
func startChildProcess(_ executable: URL, arguments: [String]) throws -> (process: Process, firstLine: String) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardInput = Pipe()
    try process.run()
    var line = Data()
    while !line.contains(UInt8(ascii: "\n")) {
        let chunk = output.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        line.append(chunk)
    }
    return (process, String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
}

import Glibc
import Runtime
import TestSupport
import Synchronization
import Testing

@Suite("TCP on loopback", .timeLimit(.minutes(2)))
struct TCPTests {
    @Test("echo over 1,000 connections spread over two loops")
    func echoThousandConnections() async throws {
        try await withLoopGroup(loopCount: 2) { group in
            let server = try await EchoServer.start(on: group)
            let target = server.address
            let mismatches = Counter()
            let echoed = Counter()
            try await withThrowingTaskGroup(of: Void.self) { clients in
                for index in 0..<1000 {
                    let loop = group.loop(for: index)
                    clients.addTask(executorPreference: loop.taskExecutor) {
                        let connection = try await TCPConnection.connect(to: target, on: loop)
                        for round in 0..<5 {
                            let message = Array("connection \(index) round \(round) ".utf8) + [UInt8](repeating: UInt8(index % 251), count: 64)
                            try await connection.write(message)
                            let reply = try await connection.read(exactly: message.count)
                            if reply != message { mismatches.increment() }
                            echoed.increment()
                        }
                        connection.close()
                    }
                }
                try await clients.waitForAll()
            }
            #expect(mismatches.value == 0)
            #expect(echoed.value == 5000)
            await server.stop()
        }
    }

    @Test("a large write is delivered whole and in order (backpressure path)")
    func largeTransfer() async throws {
        try await withLoopGroup(loopCount: 2) { group in
            let server = try await EchoServer.start(on: group)
            let target = server.address
            let loop = group.loops[0]
            try await onLoop(loop) {
                let connection = try await TCPConnection.connect(to: target, on: loop)
                let payload = (0..<(8 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 7) }
                async let echoed = connection.read(exactly: payload.count)
                for chunk in stride(from: 0, to: payload.count, by: 1 << 20) {
                    try await connection.write(Array(payload[chunk..<min(chunk + (1 << 20), payload.count)]))
                }
                let received = try await echoed
                #expect(received == payload)
                connection.close()
            }
            await server.stop()
        }
    }

    @Test("a writer waits above the high-water mark until the peer reads")
    func writeBackpressure() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            try await onLoop(loop) {
                let options = TCPOptions(writeHighWaterMark: 64 * 1024, writeLowWaterMark: 16 * 1024)
                let (client, server, listener) = try await connectedPair(on: loop, clientOptions: options)
                let chunk = [UInt8](repeating: 7, count: 256 * 1024)
                // The peer does not read: the kernel buffers fill, then our queue, then the writer waits.
                let writesCompleted = Counter()
                let writer = Task(executorPreference: loop.taskExecutor) { () async throws -> Int in
                    for _ in 0..<64 {
                        try await client.write(chunk)
                        writesCompleted.increment()
                    }
                    return writesCompleted.value
                }
                try await loop.sleep(for: .milliseconds(200))
                #expect(writesCompleted.value < 64, "the writer should be held back while the peer does not read")
                #expect(client.pendingWriteBytes > 64 * 1024)
                let total = chunk.count * 64
                var received: [UInt8] = []
                while received.count < total {
                    if try await server.read(into: &received, maxBytes: total - received.count) == 0 { break }
                }
                #expect(try await writer.value == 64)
                #expect(received.count == total)
                client.close()
                server.close()
                listener.close()
            }
        }
    }

    @Test("half-close: the peer sees EOF after our data and can still answer")
    func halfClose() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            try await onLoop(loop) {
                let listener = try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop)
                async let serverSide: [UInt8] = {
                    let connection = try await listener.accept()
                    let request = try await connection.readAll()
                    try await connection.write(Array("got \(request.count) bytes".utf8))
                    try await connection.shutdownWrite()
                    return request
                }()
                let client = try await TCPConnection.connect(to: listener.localAddress, on: loop)
                try await client.write(Array("hello, half-closed world".utf8))
                try await client.shutdownWrite()
                let answer = try await client.readAll()
                #expect(String(decoding: answer, as: UTF8.self) == "got 24 bytes")
                #expect(String(decoding: try await serverSide, as: UTF8.self) == "hello, half-closed world")
                client.close()
                listener.close()
            }
        }
    }

    @Test("a peer reset fails the reader with code reset")
    func peerReset() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            try await onLoop(loop) {
                let (client, server, listener) = try await connectedPair(on: loop)
                server.reset()
                var buffer: [UInt8] = []
                let error = await #expect(throws: RuntimeError.self) { _ = try await client.read(into: &buffer) }
                #expect(error?.code == .connectionReset)
                client.close()
                listener.close()
            }
        }
    }

    @Test("connecting to a closed port fails with code refused")
    func refused() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            try await onLoop(loop) {
                // A port bound but not listening answers SYN with RST; keeping it bound (unlike closing a
                // listener) stops a parallel test from taking the port in between.
                let reserved = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                defer { Glibc.close(reserved) }
                var bound = sockaddr_in()
                bound.sin_family = sa_family_t(AF_INET)
                bound.sin_addr.s_addr = inet_addr("127.0.0.1")
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let isBound = withUnsafeMutablePointer(to: &bound) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.bind(reserved, $0, length) == 0 && getsockname(reserved, $0, &length) == 0
                    }
                }
                try #require(isBound)
                let address = try SocketAddress(ip: "127.0.0.1", port: Int(UInt16(bigEndian: bound.sin_port)))
                let error = await #expect(throws: RuntimeError.self) {
                    _ = try await TCPConnection.connect(to: address, on: loop)
                }
                #expect(error?.code == .connectionRefused)
                #expect(error?.code.name == "refused")
            }
        }
    }

    @Test("connecting to a blackholed address times out with code timeout")
    func connectTimeout() async throws {
        // Inside a namespace of our own, a veth whose peer's MAC is bogus swallows every SYN.
        let namespace = try NetworkNamespace.create(
            commands: [
                "ip link set lo up",
                "ip link add v0 type veth peer name v1",
                "ip addr add 192.0.2.1/24 dev v0",
                "ip link set v0 up",
                "ip link set v1 up",
                "ip neigh add 192.0.2.2 lladdr 02:00:00:00:00:99 dev v0 nud permanent",
            ])
        defer { namespace.delete() }
        let loop = try EventLoop(networkNamespace: namespace.path)
        defer { loop.shutdown() }
        let target = try SocketAddress(ip: "192.0.2.2", port: 80)
        let error = try await onLoop(loop) { () async throws -> RuntimeError? in
            let options = TCPOptions(connectTimeout: .milliseconds(300))
            do {
                _ = try await TCPConnection.connect(to: target, on: loop, options: options)
                return nil
            } catch let error as RuntimeError {
                return error
            }
        }
        #expect(error?.code == .timedOut)
        #expect(error?.detail.contains("192.0.2.2:80") == true)
        try await waitUntil { loop.liveHandleCount == 0 }
        #expect(loop.liveHandleCount == 0)
    }

    @Test("a loop cannot start in a namespace that does not exist")
    func missingNamespace() {
        let error = #expect(throws: RuntimeError.self) { _ = try EventLoop(networkNamespace: "/run/netns/wsload-none") }
        #expect(error?.function.contains("setns") == true)
    }

    @Test("IPv6 loopback, binding a source address, and DNS for localhost")
    func addressing() async throws {
        try await withLoopGroup(loopCount: 1) { group in
            let loop = group.loops[0]
            try await onLoop(loop) {
                let listener6 = try TCPListener.bind(try SocketAddress(ip: "::1", port: 0), on: loop)
                async let accepted6 = listener6.accept()
                let client6 = try await TCPConnection.connect(to: listener6.localAddress, on: loop)
                let server6 = try await accepted6
                #expect(client6.remoteAddress?.family == .ipv6)
                #expect(listener6.localAddress.description.hasPrefix("[::1]:"))
                client6.close()
                server6.close()
                listener6.close()

                let listener = try TCPListener.bind(try SocketAddress(ip: "127.0.0.1", port: 0), on: loop)
                async let accepted = listener.accept()
                let options = TCPOptions(sourceAddress: try SocketAddress(ip: "127.0.0.2", port: 0))
                let client = try await TCPConnection.connect(to: listener.localAddress, on: loop, options: options)
                let server = try await accepted
                #expect(client.localAddress?.ip == "127.0.0.2")
                #expect(server.remoteAddress?.ip == "127.0.0.2")
                client.close()
                server.close()

                let resolved = try await loop.resolve(host: "localhost", port: listener.localAddress.port)
                #expect(resolved.contains { $0.ip == "127.0.0.1" || $0.ip == "::1" })
                async let acceptedByName = listener.accept()
                let named = try await TCPConnection.connect(host: "localhost", port: listener.localAddress.port, on: loop)
                named.close()
                try await acceptedByName.close()
                listener.close()
            }
        }
    }

    @Test("bad addresses are rejected with invalid_argument, naming the input")
    func badAddresses() {
        for bad in ["", "localhost", "127.1", "300.0.0.1", "::zz"] {
            let error = #expect(throws: RuntimeError.self) { _ = try SocketAddress(ip: bad, port: 80) }
            #expect(error?.code == .invalidArgument)
        }
        #expect(throws: RuntimeError.self) { _ = try SocketAddress(ip: "127.0.0.1", port: 70000) }
    }
}

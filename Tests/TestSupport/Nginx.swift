import Foundation
import Glibc

/// A free TCP port on 127.0.0.1 (bound and released; for servers that cannot take port 0).
public func freeTCPPort() throws -> Int {
    let reservation = try BoundLoopbackPort()
    defer { reservation.close() }
    return reservation.port
}

/// A TCP socket bound to a free port on 127.0.0.1 and not listening: connects to it are refused, and nothing
/// else can take the port while it is held.
public final class BoundLoopbackPort: @unchecked Sendable {
    public let port: Int
    private var descriptor: Int32

    public init() throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestProcess.Failure(description: "socket() failed: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = descriptor
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw TestProcess.Failure(description: "bind() failed: \(errno)")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Releases the port.
    public func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    deinit { close() }
}

/// Debian's nginx, started for one test with a generated configuration: a static file server on
/// 127.0.0.1 for `root` (ranges, ETag, Last-Modified and keep-alive as nginx does them).
public final class NginxServer: @unchecked Sendable {
    public let port: Int
    public let prefix: String
    private let process: SpawnedProcess

    public init(root: String) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") else {
            throw TestProcess.Failure(description: "nginx is not installed (scripts/install-dependencies.sh --test installs it)")
        }
        prefix = NSTemporaryDirectory() + "wsload-nginx-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: prefix + "/logs", withIntermediateDirectories: true)
        var lastError: (any Error)?
        for _ in 0..<5 {
            let port = try freeTCPPort()
            let configuration = """
                worker_processes 1;
                daemon off;
                master_process off;
                pid \(prefix)/nginx.pid;
                error_log \(prefix)/logs/error.log warn;
                events { worker_connections 4096; }
                http {
                    access_log off;
                    sendfile on;
                    client_body_temp_path \(prefix)/body;
                    proxy_temp_path \(prefix)/proxy;
                    fastcgi_temp_path \(prefix)/fastcgi;
                    uwsgi_temp_path \(prefix)/uwsgi;
                    scgi_temp_path \(prefix)/scgi;
                    keepalive_requests 100000;
                    server {
                        listen 127.0.0.1:\(port);
                        root \(root);
                        location / { }
                    }
                }
                """
            try configuration.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
            let process = SpawnedProcess()
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
            process.arguments = ["-p", prefix, "-c", prefix + "/nginx.conf"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try TiedProcess.start(process)  // dies with the test process, even a killed one
            // Ready when it accepts a connection (at most 5 s).
            let deadline = Date().addingTimeInterval(5)
            while Date() < deadline && process.isRunning {
                if Self.accepts(port: port) {
                    self.port = port
                    self.process = process
                    return
                }
                usleep(20_000)
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            lastError = TestProcess.Failure(description: "nginx did not start on port \(port): "
                + ((try? String(contentsOfFile: prefix + "/logs/error.log", encoding: .utf8)) ?? ""))
        }
        throw lastError!
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: prefix)
    }

    private static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

import Foundation

/// A network namespace made for one test (`ip netns add`), configured by running commands inside it.
public struct NetworkNamespace {
    public let name: String
    public var path: String { "/run/netns/\(name)" }

    public static func create(commands: [String]) throws -> NetworkNamespace {
        let namespace = NetworkNamespace(name: "wsload-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try run(["ip", "netns", "add", namespace.name])
        do {
            for command in commands {
                try run(["ip", "netns", "exec", namespace.name] + command.split(separator: " ").map(String.init))
            }
        } catch {
            namespace.delete()
            throw error
        }
        return namespace
    }

    public func delete() {
        try? Self.run(["ip", "netns", "delete", name])
    }

    private static func run(_ arguments: [String]) throws {
        try TestProcess.run(arguments)
    }
}

import LoadEngine
import Profile

/// How `wsload run --processes N|auto` splits a run over processes of this machine, decided without starting any:
/// pure, from the profile, the request and the open-file limit. Children run one shard each; for an `embedded`
/// target the server runs in processes of its own (`servers`, on 127.0.0.1, 127.0.0.2, …), each serving a block of
/// consecutive shards, so no process holds both ends of a connection. Every count comes from
/// ``OpenFileBudget``, the estimate `LoadRun` refuses a run by.
struct ProcessPlan: Equatable, Sendable {
    /// Child processes: child `i` runs shard `i+1/children`.
    var children: Int
    /// Server processes (0 for a URL target).
    var servers: Int
    /// The sockets the whole profile needs in one process (the server's counted when it is embedded).
    var sockets: Int
    /// The open-file limit of one process.
    var limit: Int

    /// The most processes a run may start.
    static let maximumProcesses = 256

    /// What `--processes` asked for.
    enum Request: Equatable, Sendable {
        case count(Int)
        case auto
    }

    /// The server process child `index` connects to: blocks of consecutive shards, as even as they come.
    func server(ofChild index: Int) -> Int { servers == 0 ? 0 : index * servers / children }

    /// The address server `index` listens on: 127.0.0.1, 127.0.0.2, … (each its own ephemeral-port space).
    static func serverHost(_ index: Int) -> String { "127.0.0.\(index + 1)" }

    /// `--processes`'s value. - Throws: ``UsageError`` naming `--processes` (exit 64).
    static func request(_ text: String) throws(UsageError) -> Request {
        if text == "auto" { return .auto }
        guard let count = Int(text), (1...maximumProcesses).contains(count) else {
            throw UsageError("--processes: \"\(text)\" is not a whole number from 1 to \(maximumProcesses), or auto")
        }
        return .count(count)
    }

    /// The plan for `profile`, or nil for a run in this process (today's run): `--processes 1`, or no request (or
    /// `auto`) for a profile that fits one process. Without a request, a profile that does not fit runs as `auto`.
    /// - Throws: ``UsageError`` naming `--processes`: more processes than connections, or a split whose processes
    ///   still do not fit the limit.
    static func make(profile: Profile, request: Request?, limit: Int) throws(UsageError) -> ProcessPlan? {
        let isEmbedded = profile.target == .embedded
        let sockets = OpenFileBudget.sockets(for: profile, serverInProcess: isEmbedded)
        let connections = profile.scenarios.reduce(0) { $0 &+ $1.websocket.connections }
        let children: Int
        switch request ?? .auto {
        case .count(1):
            return nil
        case .count(let count):
            guard count <= connections else {
                throw UsageError("--processes: \(count) processes for \(connections) connections; give at most one "
                    + "process per connection")
            }
            let widest = childSockets(profile, children: count).max() ?? 0
            guard OpenFileBudget.fits(widest, limit: limit) else {
                throw UsageError("--processes: with \(count) processes each needs about \(widest) sockets but a process may "
                    + "open \(limit) files; give more processes, or auto")
            }
            children = count
        case .auto:
            if OpenFileBudget.fits(sockets, limit: limit) { return nil }
            guard let fitting = (1...max(1, min(maximumProcesses, connections))).first(where: {
                OpenFileBudget.fits(childSockets(profile, children: $0).max() ?? 0, limit: limit)
            }) else {
                throw UsageError("--processes: the profile needs about \(sockets) sockets; even \(maximumProcesses) "
                    + "processes of \(limit) open files do not hold it")
            }
            children = fitting
        }
        var plan = ProcessPlan(children: children, servers: 0, sockets: sockets, limit: limit)
        if isEmbedded {
            let perChild = childSockets(profile, children: children)
            // A server with one shard holds what that shard's process holds, so `children` servers always fit.
            plan.servers = (1...children).first { servers in
                var candidate = plan
                candidate.servers = servers
                var loads = [Int](repeating: 0, count: servers)
                for (child, count) in perChild.enumerated() { loads[candidate.server(ofChild: child)] &+= count }
                return loads.allSatisfy { OpenFileBudget.fits($0, limit: limit) }
            } ?? children
        }
        return plan
    }

    /// The sockets each of `children` shards opens (its clients only: the server is elsewhere).
    private static func childSockets(_ profile: Profile, children: Int) -> [Int] {
        (0..<children).map { index in
            OpenFileBudget.sockets(for: Shard(index: index, count: children).slice(profile, seed: 0).profile,
                                   serverInProcess: false)
        }
    }

    /// The line `run` says when a profile that does not fit one process runs as `auto` without being asked.
    var automaticNote: String {
        "needs about \(sockets) sockets, the limit is \(limit): running \(children) "
            + (children == 1 ? "process" : "processes")
            + (servers > 0 ? " and \(servers) server " + (servers == 1 ? "process" : "processes") : "")
    }
}

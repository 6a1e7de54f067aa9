import Profile

/// How many open files a run of a profile needs, and whether one process may hold them: the one estimate behind
/// `LoadRun`'s refusal to start a run that cannot fit and `wsload run --processes auto`'s choice of how many
/// processes share it.
package enum OpenFileBudget {
    /// Files a process keeps beside its sockets (loops, pipes, the report, the journal, libraries).
    package static let reservedFiles = 64

    /// The sockets a run of `profile` opens at its peak: one per WebSocket connection, one per transfer connection
    /// (a transfer slot holds `connectionsPerTransfer`, else `segments`), doubled when the embedded server runs in the
    /// same process (each connection is then also the server's). Saturating: a huge profile is simply too big.
    package static func sockets(for profile: Profile, serverInProcess: Bool) -> Int {
        let clients = profile.scenarios.reduce(0) { total, scenario in
            let perSlot = scenario.transfer.map { $0.connectionsPerTransfer ?? $0.segments } ?? 1
            let (slots, overflow) = scenario.websocket.connections.multipliedReportingOverflow(by: perSlot)
            return overflow ? Int.max : saturatingAdd(total, slots)
        }
        return serverInProcess ? saturatingAdd(clients, clients) : clients
    }

    /// Whether a process allowed `limit` open files holds `sockets` and its reserve.
    package static func fits(_ sockets: Int, limit: Int) -> Bool {
        saturatingAdd(sockets, reservedFiles) <= limit
    }

    private static func saturatingAdd(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? Int.max : sum
    }
}

/// Bounded waits for tests: every wait on a peer or a run has a deadline and fails saying what it waited for.
public enum Deadline {
    /// The condition a test waited for did not hold before its deadline.
    public struct Expired: Error, CustomStringConvertible {
        public var description: String
    }

    /// Polls `condition` every `interval` until it holds; throws ``Expired`` naming `what` after `timeout`.
    /// Timeouts are generous (a loaded single CPU must pass); the poll returns as soon as the condition holds.
    public static func waitUntil(
        _ what: String, timeout: Duration = .seconds(30), interval: Duration = .milliseconds(5),
        _ condition: () async throws -> Bool
    ) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while try await !condition() {
            guard clock.now < deadline else { throw Expired(description: "waited \(timeout) for \(what)") }
            try await Task.sleep(for: interval)
        }
    }
}

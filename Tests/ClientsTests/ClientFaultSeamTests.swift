import Clients
import EmbeddedServer
import Runtime
import TestSupport
import Testing
import WebSocket

/// A conformance that overrides nothing: the client's seams as a real run has them.
private final class Untouched: WebSocketClientFaults {}

/// The three client bugs the oracle's proofs need, as a test-side conformance: `.connected` before the 101,
/// a message after the end, and a 1006 whose reason is lost.
private final class BentClient: WebSocketClientFaults {
    func upgradeRequestWillBeSent(announceConnected: () -> Void) { announceConnected() }
    func messageAfterClose() -> WebSocketConnection.Message? { .text("late") }
    func reportedCloseReason(_ reason: String?, code: WebSocketCloseCode) -> String? {
        code == .abnormalClosure ? nil : reason
    }
}

/// What one connection against a server that drops it (no closing handshake) showed.
private struct Observed: Sendable {
    var isAnnouncedBeforeTheUpgrade: Bool
    var closeCode: WebSocketCloseCode?
    var closeReason: String?
    var afterClose: [String]
}

/// `WebSocketManager`'s fault seams (`WebSocketClientConfiguration.faults`): nil is the honest client, and a
/// conformance bends exactly the behaviour its method names, on real loopback connections.
@Suite("WebSocketManager fault seams", .serialized, .timeLimit(.minutes(1)))
struct ClientFaultSeamTests {
    @Test("the seams' defaults are the honest client")
    func defaultsAreHonest() {
        var announced = false
        Untouched().upgradeRequestWillBeSent { announced = true }
        #expect(!announced)
        #expect(Untouched().messageAfterClose() == nil)
        for code in [WebSocketCloseCode.normalClosure, .abnormalClosure, .goingAway] {
            #expect(Untouched().reportedCloseReason("why", code: code) == "why")
            #expect(Untouched().reportedCloseReason(nil, code: code) == nil)
        }
        #expect(WebSocketClientConfiguration().faults == nil, "a configuration injects nothing unless a test sets it")
    }

    /// Connects to a server that drops every connection 50 ms after its handshake, reads until the drop, then
    /// reads twice more.
    private func dropped(faults: (any WebSocketClientFaults)?) async throws -> Observed {
        try await withLoopGroup(loopCount: 1) { group in
            let chaos = ChaosOptions(closeAfter: .milliseconds(50), closeMode: .drop)
            return try await withEmbeddedServer(ServerConfiguration(chaos: chaos), on: group) { server in
                let loop = group.loops[0]
                var configuration = WebSocketClientConfiguration(closeTimeout: .seconds(5))
                configuration.faults = faults
                let manager = WebSocketManager(url: try WebSocketURL(server.url), configuration: configuration, loop: loop)
                return try await onLoop(loop) { () async throws -> Observed in
                    try await manager.connect()
                    let timings = try #require(await manager.handshakeTimings)
                    let connectedAt = try #require(await manager.connectedAt)
                    while true {
                        do { _ = try await manager.receive() } catch { break }
                    }
                    var afterClose: [String] = []
                    for _ in 0..<2 {
                        do throws(WebSocketClientError) {
                            afterClose.append("\(try await manager.receive())")
                        } catch {
                            afterClose.append(error.code.rawValue)
                        }
                    }
                    return Observed(isAnnouncedBeforeTheUpgrade: connectedAt < timings.completedAt,
                                    closeCode: await manager.closeCode, closeReason: await manager.closeReason,
                                    afterClose: afterClose)
                }
            }
        }
    }

    @Test("no faults: `.connected` after the 101, a 1006 with its reason, nothing after the end")
    func honestClient() async throws {
        let observed = try await dropped(faults: nil)
        #expect(!observed.isAnnouncedBeforeTheUpgrade)
        #expect(observed.closeCode == .abnormalClosure)
        #expect(observed.closeReason?.isEmpty == false, "a 1006 says why")
        #expect(observed.afterClose == ["not_connected", "not_connected"])
    }

    @Test("a bent client: `.connected` before the 101, the 1006's reason lost, one message after the end")
    func bentClient() async throws {
        let observed = try await dropped(faults: BentClient())
        #expect(observed.isAnnouncedBeforeTheUpgrade)
        #expect(observed.closeCode == .abnormalClosure)
        #expect(observed.closeReason == nil)
        #expect(observed.afterClose.count == 2 && observed.afterClose[0].contains("late"), "\(observed.afterClose)")
        #expect(observed.afterClose[1] == "not_connected", "one message after the end, then the honest failure")
    }
}

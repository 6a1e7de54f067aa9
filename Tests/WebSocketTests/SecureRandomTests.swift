import Crypto
import Foundation
import Synchronization
import Testing

/// The masking keys' generator: per-thread buffers of CSPRNG output, refilled 4 KiB (512 draws) at a time.
@Suite("Secure random draws", .timeLimit(.minutes(1)))
struct SecureRandomTests {
    @Test("draws across several refills are distinct, and copies of a generator share the thread's stream")
    func distinctAcrossRefills() {
        var generator = SecureRandomNumberGenerator()
        var copy = generator
        var seen = Set<UInt64>()
        for _ in 0..<2_000 {  // about four refills
            seen.insert(generator.next())
            seen.insert(copy.next())
        }
        // 4,000 64-bit CSPRNG draws collide with probability ~2^-41: equal draws mean the buffer was reused.
        #expect(seen.count == 4_000)
        // Every bit position takes both values (a buffer left unfilled would read as zeros).
        let union = seen.reduce(UInt64(0)) { $0 | $1 }
        let intersection = seen.reduce(UInt64.max) { $0 & $1 }
        #expect(union == .max && intersection == 0)
    }

    @Test("threads draw from their own buffers: no draw appears on two threads")
    func threadsDoNotShare() async throws {
        let draws = Mutex<[[UInt64]]>([])
        let threads = (0..<4).map { _ in
            Thread {
                var generator = SecureRandomNumberGenerator()
                let mine = (0..<1_000).map { _ in generator.next() }
                draws.withLock { $0.append(mine) }
            }
        }
        for thread in threads { thread.start() }
        for _ in 0..<10_000 where draws.withLock({ $0.count }) < 4 {  // 10 s at most, not holding a pool thread
            try await Task.sleep(for: .milliseconds(1))
        }
        let all = draws.withLock { $0.flatMap { $0 } }
        #expect(all.count == 4_000 && Set(all).count == 4_000)
    }
}

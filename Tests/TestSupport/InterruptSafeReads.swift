import Foundation
import Glibc

extension FileHandle {
    /// The next chunk of a pipe (empty at its end), like `availableData`, but a read interrupted by a signal is
    /// retried instead of trapping: Foundation's `availableData` and `readDataToEndOfFile()` end the whole test
    /// process with a fatal error on `EINTR`, which any handler without `SA_RESTART` (the crash reporter's
    /// thread-suspending SIGPROF among them) causes in every thread blocked in a read.
    public func nextChunk(maxBytes: Int = 64 * 1024) -> Data {
        var buffer = [UInt8](repeating: 0, count: maxBytes)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, maxBytes) }
            if count >= 0 { return Data(buffer[..<count]) }
            if errno != EINTR { return Data() }  // a broken pipe reads as its end
        }
    }

    /// Everything until the end of the pipe, like `readDataToEndOfFile()`, retrying interrupted reads.
    public func readToEndRetryingInterrupts() -> Data {
        var all = Data()
        while true {
            let chunk = nextChunk()
            if chunk.isEmpty { return all }
            all.append(chunk)
        }
    }
}

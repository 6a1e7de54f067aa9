import CLibUV
import Glibc

/// Per-process resource limits that bound how many connections one process can hold.
public enum ResourceLimits {
    /// Raises the soft open-file limit to the hard limit (which even root cannot raise here) and
    /// returns the new soft limit. One process holds at most this many sockets.
    @discardableResult
    public static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// The resident set size of this process in bytes (from /proc/self/statm), or 0 if unknown.
    public static func residentMemoryBytes() -> Int {
        let descriptor = open("/proc/self/statm", O_RDONLY)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return 0 }
        // "size resident shared text lib data dt", in pages.
        let fields = buffer[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Returns freed heap pages to the kernel, so RSS measured after a teardown reflects live memory.
    public static func trimHeap() {
        _ = malloc_trim(0)
    }
}

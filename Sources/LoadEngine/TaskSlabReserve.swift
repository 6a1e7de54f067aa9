/// Sizes a WebSocket client's task allocator once, at its start, so that the frames it parks in for the connection's
/// whole life share one slab.
///
/// The runtime's task allocator hands out frames from slabs of about 1 KB, allocating one more (sized for the frame,
/// when larger) whenever a frame does not fit what is left of the current one, and keeps every slab until the task
/// ends. Without a reserve an idle connection's task held several, most of them part empty. One frame of the reserve's
/// size at the start leaves an empty slab that size behind it, which the connect's frames and then the read's (with
/// the runtime's records for the waiting read) fill in turn: an idle task holds the first slab and this one.
///
/// Sized from perf probes on the task allocator (20 idle connections, pings every 500 ms, the deepest stack of each
/// task with the allocator's 16-byte headers): beyond the first slab an idle ws client's frames take 2,544 bytes,
/// a wss client's 2,896 (the TLS read adds three frames); the connect's (in ``VirtualUser``'s `open`) take less.
/// Each reserve leaves about 300 bytes for frames that grow. Idle ws at 10,000 connections, KiB per connection, with
/// the frames of the reader before its one cancellation handler (2,032 bytes then): 8.32 with 2,048, 8.58 with
/// 2,304, 8.83 with 2,560 (a reserve too small costs a 1 KB slab more); with the handler's frames and 2,816, 9.06.
/// Keep the frames on these paths small (docs/ARCHITECTURE.md, "Memory", and Benchmarks/async-frames.py).
enum TaskSlabReserve {
    /// 352 × 8 = 2,816 bytes.
    private typealias Reserve = InlineArray<352, UInt64>
    /// 400 × 8 = 3,200 bytes.
    private typealias TLSReserve = InlineArray<400, UInt64>

    /// Allocates a frame the size an idle connection's frames need (over TLS when `tls`) and frees it.
    static func reserve(tls: Bool) async {
        if tls { await reserveForTLS() } else { await reserveForTCP() }
    }

    @inline(never)
    private static func reserveForTCP() async {
        var frame = Reserve(repeating: 0)
        // A suspension point without a callee frame (one would not fit behind this frame and would start a slab of
        // its own); the continuation is resumed before it is awaited, so the task does not wait. `frame` lives across
        // it, so it is in this function's frame.
        await withUnsafeContinuation { $0.resume() }
        withUnsafeMutableBytes(of: &frame) { keep($0) }
    }

    @inline(never)
    private static func reserveForTLS() async {
        var frame = TLSReserve(repeating: 0)
        await withUnsafeContinuation { $0.resume() }  // as in reserveForTCP()
        withUnsafeMutableBytes(of: &frame) { keep($0) }
    }

    @inline(never) @_optimize(none)
    private static func keep(_ bytes: UnsafeMutableRawBufferPointer) {}
}

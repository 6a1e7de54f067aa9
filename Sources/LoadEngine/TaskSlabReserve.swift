/// Sizes a WebSocket client's task allocator once, at its start, so that the frames it parks in for the connection's
/// whole life share one slab.
///
/// The runtime's task allocator hands out frames from slabs of about 1 KB, allocating one more (sized for the frame,
/// when larger) whenever a frame does not fit what is left of the current one, and keeps every slab until the task
/// ends. An idle connection's task held five (heaptrack, 5,000 idle connections: the first, one for the connect's
/// 2,016-byte frame, one for receive()'s 1,792-byte frame, one under the read, and one the close needs), most of them
/// part empty. One frame of ``reservedBytes`` at the start leaves an empty slab that size behind it, which the
/// connect's frames and then the read's (with the runtime's records for the waiting read) fill in turn: an idle task
/// holds the first slab and this one (a third, which the runtime's enqueue record starts, comes with the stop).
/// Idle ws at 10,000 connections, KiB per connection: 12.63 without; 11.9 with 4,096 bytes (the read's last records
/// did not fit and took a slab of their own); 11.18 with 4,352, the least that held them all; 11.31 with 4,480, which
/// leaves 128 bytes for frames that grow; 11.40 with 4,608.
enum TaskSlabReserve {
    /// What an idle connection's frames beyond the first slab add up to, with the allocator's headers (perf probes on
    /// swift_task_alloc, idle pattern: 4,176 bytes of frames, then the read's records), and a margin.
    static let reservedBytes = MemoryLayout<Reserve>.size
    /// 560 × 8 = 4,480 bytes.
    private typealias Reserve = InlineArray<560, UInt64>

    /// Allocates a frame of ``reservedBytes`` and frees it.
    @inline(never)
    static func reserve() async {
        var frame = Reserve(repeating: 0)
        // A suspension point without a callee frame (one would not fit behind this frame and would start a slab of
        // its own); the continuation is resumed before it is awaited, so the task does not wait. `frame` lives across
        // it, so it is in this function's frame.
        await withUnsafeContinuation { $0.resume() }
        withUnsafeMutableBytes(of: &frame) { keep($0) }
    }

    @inline(never) @_optimize(none)
    private static func keep(_ bytes: UnsafeMutableRawBufferPointer) {}
}

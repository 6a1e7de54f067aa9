/// Sizes a WebSocket client's task allocator once, at its start, so that the frames it parks in for the connection's
/// whole life share one slab.
///
/// The runtime's task allocator hands out frames from slabs of about 1 KB, allocating one more (sized for the frame,
/// when larger) whenever a frame does not fit what is left of the current one, and keeps every slab until the task
/// ends. An idle connection's task held five (heaptrack, 5,000 idle connections: the first, one for the connect's
/// 2,016-byte frame, one for receive()'s 1,792-byte frame, one under the read, and one the close needs), most of them
/// part empty. One frame of ``reservedBytes`` at the start leaves an empty slab that size behind it, which the
/// connect's frames and then the read's fill in turn: four slabs, the runtime's waiting records taking the two small
/// ones (idle ws at 10,000 connections: 12.63 -> 11.86 KiB per connection; 3 KiB reserved saved nothing, 5 KiB no more).
enum TaskSlabReserve {
    /// What an idle connection's frames beyond the first slab add up to, with the allocator's headers (perf probes on
    /// swift_task_alloc: about 3.7 KB for the idle pattern).
    static let reservedBytes = MemoryLayout<Reserve>.size
    /// 512 × 8 = 4,096 bytes.
    private typealias Reserve = InlineArray<512, UInt64>

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

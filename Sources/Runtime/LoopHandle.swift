import CLibUV
import Glibc

/// Owner of one libuv handle; the base of every runtime handle type.
///
/// The handle's `data` points at its owner, which libuv keeps alive (one retain) until the close
/// callback has run, so a callback can never see a freed owner. All state is loop-confined: methods
/// must be called on ``loop``'s thread. ``close()`` is idempotent; subclasses fail their waiters in
/// ``willClose()``. Loop shutdown closes forgotten handles through the same path.
class LoopHandle: @unchecked Sendable {
    let loop: EventLoop
    let rawHandle: UnsafeMutableRawPointer
    /// Not checked for exclusive access at run time (every read and write of a stream asks it): loop-confined, a plain
    /// read or store.
    @exclusivity(unchecked) private(set) var isClosing = false
    private var isRegistered = false

    init(loop: EventLoop, size: Int) {
        self.loop = loop
        rawHandle = .allocate(byteCount: size, alignment: 16)
        rawHandle.initializeMemory(as: UInt8.self, repeating: 0, count: size)
    }

    var handle: UnsafeMutablePointer<uv_handle_t> { rawHandle.assumingMemoryBound(to: uv_handle_t.self) }

    /// Call once the subclass's `uv_*_init` succeeded: from here on the handle must be closed.
    func didInitialize() {
        isRegistered = true
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.handleOpened()
    }

    /// Closes the handle (once); pending operations fail in ``willClose()``.
    func close() {
        guard !isClosing else { return }
        isClosing = true
        willClose()
        guard isRegistered else {
            rawHandle.deallocate()
            return
        }
        closeHandle { handle in
            let owner = Unmanaged<LoopHandle>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            owner.loop.handleClosed()
            owner.rawHandle.deallocate()
        }
    }

    /// Starts libuv's close; TCP overrides it to close with a reset.
    func closeHandle(_ callback: uv_close_cb) {
        uv_close(handle, callback)
    }

    /// Subclasses fail pending continuations here; called once, on the loop thread, before `uv_close`.
    func willClose() {}

    deinit {
        // Only reachable for a handle whose init failed and that was never closed.
        if !isRegistered && !isClosing { rawHandle.deallocate() }
    }
}

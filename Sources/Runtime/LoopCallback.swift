/// An actor whose serial executor is an event loop: its jobs run on that loop's thread, so code running there outside
/// any job (a libuv callback, a ``LoopTimer``, a stream's readable handler) may enter its isolation.
public protocol LoopBoundActor: Actor {
    /// The loop whose thread runs the actor's jobs.
    nonisolated var loop: EventLoop { get }
}

extension LoopBoundActor {
    /// `body` as a plain callback for the loop's thread, entering the actor's isolation as `assumeIsolated` does: it
    /// traps off that thread, where the isolation cannot be assumed (the same check: the loop is the actor's executor,
    /// and its `isIsolatingCurrentContext` is whether the caller is on the loop's thread).
    ///
    /// For the callbacks that run per message or per deadline: a call allocates nothing, where `assumeIsolated`
    /// called in the callback boxes two closure contexts on the heap every time (it makes its closure escape with
    /// `withoutActuallyEscaping` to convert it). Here the conversion is made once, when the callback is made.
    /// The callback holds the actor strongly, as a closure calling `assumeIsolated` on it would.
    public nonisolated func loopCallback(_ body: @escaping (isolated Self) -> Void) -> () -> Void {
        // The conversion `assumeIsolated` makes: an `isolated` parameter is an ordinary one in the calling
        // convention; the check below is what makes the call isolated.
        let plain = unsafeBitCast(body, to: ((Self) -> Void).self)
        let loop = self.loop
        return { [self] in
            precondition(loop.inLoopThread, "expected to run on \(loop)'s thread")
            plain(self)
        }
    }
}

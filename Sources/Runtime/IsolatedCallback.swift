extension Actor {
    /// `body` as a plain callback that enters the actor's isolation, checked as `assumeIsolated` checks it
    /// (`preconditionIsolated()`: the caller must be on the actor's executor, or the callback traps). For a loop-bound
    /// actor that is its loop's thread, where libuv callbacks, ``LoopTimer``s and a stream's readable handler run.
    ///
    /// For the callbacks that run per message or per deadline: a call allocates nothing, where `assumeIsolated`
    /// called in the callback boxes two closure contexts on the heap every time (it makes its closure escape with
    /// `withoutActuallyEscaping` to convert it). Here the conversion is made once, when the callback is made.
    /// The callback holds the actor strongly, as a closure calling `assumeIsolated` on it would.
    public nonisolated func isolatedCallback(_ body: @escaping (isolated Self) -> Void) -> () -> Void {
        // The conversion `assumeIsolated` makes: an `isolated` parameter is an ordinary one in the calling
        // convention; the check before the call is what makes it isolated.
        let plain = unsafeBitCast(body, to: ((Self) -> Void).self)
        return { [self] in
            preconditionIsolated("a callback entering \(Self.self) ran off its executor")
            plain(self)
        }
    }

    /// `body` as a plain function of an actor and an argument that enters that actor's isolation, checked as
    /// ``isolatedCallback(_:)`` checks it: for a call made per message into *another* actor known to share the
    /// caller's executor (a broadcast to the sessions on one loop), where `assumeIsolated` with a closure capturing
    /// the argument allocates twice per call. Make it once (a `static let`), call it with no allocation.
    public static func isolatedFunction<Argument>(
        _ body: @escaping @Sendable (isolated Self, Argument) -> Void
    ) -> @Sendable (Self, Argument) -> Void {
        let plain = unsafeBitCast(body, to: (@Sendable (Self, Argument) -> Void).self)
        return { actor, argument in
            actor.preconditionIsolated("a call entering \(Self.self) ran off its executor")
            plain(actor, argument)
        }
    }
}

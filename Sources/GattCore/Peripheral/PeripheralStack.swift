import DequeModule

/// The peripheral core (`Peripheral`, above the seam) on the half below it (`BelowSeam`),
/// wired once for every shell: the daemon, the tests, the fuzz target and the benchmarks.
///
/// - The core is never re-entered: transport events raised while the core's outputs are
///   performed, or while the shell reacts to an event, wait in a queue and are fed to it
///   in order once the outputs before them are performed.
/// - A turn performs what it was given, drains the queue, then flushes the half below once
///   (once per drained batch, not once per output); a flush that raises events (`.readyToSend`)
///   starts another batch.
/// - A fatal output of the half below is a `.lost` for the core.
/// - One deadline for both halves (`nextDeadline`, `tick`).
/// - Security goes down: the core's `requestSecurity` and the user's `respondToPairing`.
///
/// Sans-I/O: time comes in as `now`; what the half below gives back goes to `onBelowOutput`
/// and the core's events to `onEvent`, in the order they happen. A class, because the shell's
/// reaction to an event may call back into the stack (a control client answers a commit, a
/// bonded central's state is restored): such a call joins the running turn.
public final class PeripheralStack<Below: BelowSeam> {
    public var core: Peripheral
    public var below: Below
    /// The core's events, as they happen (may call back into the stack).
    public var onEvent: (PeripheralEvent) -> Void = { _ in }
    /// Every output of the half below, in order (the core also hears those `route` sends
    /// its way, after the outputs before them).
    public var onBelowOutput: (Below.Output) -> Void = { _ in }
    /// Every ATT PDU, as it is fed to the core (`sent` false) or sent (`sent` true); nil: not watched.
    public var onATTPDU: ((_ id: BearerID, _ pdu: [UInt8], _ sent: Bool) -> Void)?
    /// Whether the core hears a transport event of the half below (asked of each, in order, as
    /// it is fed): false withholds it (the daemon withholds a controller that cannot serve the
    /// config). May call back into the stack.
    public var admits: (TransportEvent) -> Bool = { _ in true }
    /// A turn is over: everything drained and flushed (re-arm the timer at `nextDeadline`).
    public var onTurnEnd: () -> Void = {}
    private var pending: Deque<TransportEvent> = []
    private var turn = Turn.quiet
    /// The time of the running turn.
    private var now: Duration = .zero

    public init(core: Peripheral, below: Below) {
        self.core = core
        self.below = below
    }

    /// When `tick` should next be called: the earlier of both halves' deadlines.
    public var nextDeadline: Duration? {
        switch (below.nextDeadline, Self.nextDeadline(of: &core)) {
        case (let b?, let c?): min(b, c)
        case (let b, let c): b ?? c
        }
    }

    /// Read in place (asked after every turn): a getter called on the stored core copies it first.
    private static func nextDeadline(of core: inout Peripheral) -> Duration? { core.nextDeadline }

    /// Whether a turn runs (calls made now join it).
    public var isTurning: Bool { turn == .running }

    // MARK: - Entry points (each runs a turn, or joins the running one)

    /// A transport event the half below reported by itself (the daemon's transports).
    public func handle(_ event: TransportEvent, now: Duration) {
        pending.append(event)
        run(now) {}
    }

    /// What the shell got from calling the core (a notify, a control op, a reload).
    public func perform(_ outputs: [PeripheralOutput], now: Duration) {
        run(now) { perform(outputs) }
    }

    /// A call into the half below that is not the core's (start, a packet from the
    /// controller); what it gives back is routed like the rest.
    public func callBelow(now: Duration, _ call: (inout Below) -> [Below.Output]) {
        run(now) { route(call(&below)) }
    }

    /// A program's `LinkRequest` for one link (`BelowSeam.requestLink`).
    public func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) {
        run(now) { route(below.requestLink(id, request, now: now)) }
    }

    /// The program stopped waiting for a `LinkRequest` (`BelowSeam.cancelLinkRequest`).
    public func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) {
        run(now) { route(below.cancelLinkRequest(id, kind, now: now)) }
    }

    /// The user's answer to a pairing prompt, down to the half below.
    public func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) {
        run(now) { route(below.respondToPairing(id, answer, now: now)) }
    }

    /// Both halves' timers: the half below's first, then the core's.
    public func tick(now: Duration) {
        run(now) {
            route(below.tick(now: now))
            perform(core.tick(now: now))
        }
    }

    // MARK: - The turn

    private func run(_ now: Duration, _ body: () -> Void) {
        self.now = now
        guard turn == .quiet else { return body() }  // the running turn drains the rest
        turn = .running
        body()
        repeat {
            while let e = pending.popFirst() {
                guard admits(e) else { continue }
                if let onATTPDU, case .received(let id, let pdu) = e { onATTPDU(id, pdu, false) }
                perform(core.handle(e, now: self.now))
            }
            route(below.flush(now: self.now))
        } while !pending.isEmpty
        turn = .quiet
        onTurnEnd()
    }

    /// The core's outputs, in order: calls on the half below, events to the shell.
    private func perform(_ outputs: [PeripheralOutput]) {
        for o in outputs {
            switch o {
            case .send(let id, let pdu):
                onATTPDU?(id, pdu, true)
                below.send(pdu, on: id)
            case .closeEnhancedBearer(let id): route(below.closeEnhancedBearer(id, now: now))
            case .setAdvertising(let sets): route(below.setAdvertising(sets, now: now))
            case .disconnect(let id, let reason): route(below.disconnect(id, reason: reason, now: now))
            case .requestSecurity(let id, let level, let reason):
                route(below.requestSecurity(id, level: level, reason: reason, now: now))
            case .answerGATT(let id, let result): route(below.answerGATT(id, result, now: now))
            case .updateGATT(let handle, let value): route(below.updateGATT(handle, value, now: now))
            case .event(let e): onEvent(e)
            }
        }
    }

    /// The half below's outputs: each to the shell; transport events queued for the core,
    /// a fatal one as `.lost`.
    private func route(_ outputs: [Below.Output]) {
        for o in outputs {
            switch Below.route(o) {
            case .shell: break
            case .core(let e): pending.append(e)
            case .fatal(let reason): pending.append(.lost(reason: reason))
            }
            onBelowOutput(o)
        }
    }

    private enum Turn {
        /// Nothing runs: the next call starts a turn.
        case quiet
        /// Outputs are being performed or events drained: calls join, events queue.
        case running
    }
}

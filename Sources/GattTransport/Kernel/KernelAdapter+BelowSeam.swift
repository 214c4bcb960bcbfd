import GattCore

// The kernel's rules as the half below the seam, as the daemon's stack calls them.
extension KernelAdapter: BelowSeam {
    public typealias Output = KernelOutput

    /// Events go to the core too; the rest is the shell's. The kernel's `.lost` is an event.
    public static func route(_ output: KernelOutput) -> BelowSeamRoute {
        if case .event(let e) = output.action { return .core(e) }
        return .shell
    }

    /// Queued: written at `flush` (each PDU as its own write; `.readyToSend` once it is out).
    public mutating func send(_ pdu: [UInt8], on bearer: BearerID) {
        guard let socket = bearers.socket(of: bearer) else { return }
        outbox.append(.write(socket, pdu))
    }

    /// The PDUs `send` queued and what calls without outputs owed (keys, listening sockets);
    /// then, once the core has answered a connection's events, the advertising it ended.
    public mutating func flush(now: Duration) -> [KernelOutput] {
        var settled: [KernelAction] = []
        settleAdvertising(&settled)
        outbox += settled
        guard !outbox.isEmpty else { return [] }
        defer { outbox.removeAll(keepingCapacity: true) }
        return outbox.map(KernelOutput.init)
    }

    public mutating func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [KernelOutput] { wrap(bearers.closeEnhancedBearer(id)) }
    public mutating func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [KernelOutput] { wrap(setAdvertising(sets)) }
    public mutating func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [KernelOutput] {
        var out: [KernelAction] = []
        if let ended = bearers.disconnect(id, reason: reason, adapterReady: lifecycle.isReady, &out) { pairing.linkEnded(ended) }
        return wrap(out)
    }
    public mutating func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [KernelOutput] {
        wrap(bearers.requestSecurity(id, level: level, reason: reason))
    }
    public mutating func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [KernelOutput] {
        wrap(respondToPairing(id, answer))
    }
    public mutating func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [KernelOutput] { wrap(requestLink(id, request)) }
    public mutating func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [KernelOutput] {
        cancelLinkRequest(id, kind)
        return []
    }
    /// gattd serves ATT on the kernel's sockets: no GATT-level accesses or subscribers to answer.
    public mutating func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [KernelOutput] { [] }
    public mutating func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [KernelOutput] { [] }
    public mutating func configure(_ configuration: GattConfiguration, now: Duration) -> [KernelOutput] {
        wrap(reconfigure(configuration))
    }
    /// The kernel's stack keeps its own identity: ours is not used.
    public mutating func setLocalIRK(_ irk: [UInt8]) {}

    /// The jobs due: security reads again, disconnections whose reason did not come, channels
    /// looking for their link, a legacy bond complete, advertising the kernel was busy for.
    public mutating func tick(now: Duration) -> [KernelOutput] { wrap(runTimers(now: now)) }

    mutating func runTimers(now: Duration) -> [KernelAction] {
        var out: [KernelAction] = []
        for job in timers.due(at: now) {
            switch job {
            case .checkSecurity(let id, let socket, let attemptsLeft):
                bearers.checkSecurity(id, socket: socket, attemptsLeft: attemptsLeft, &out)
            case .reportDisconnection(let id, let link, let why):
                bearers.reportDisconnection(id, link, why: why, waited: true, now: now, timers: &timers, &out)
            case .findChannelLink(let socket):
                out += findChannelLink(socket, now: now)
            case .finishBond(let peer):
                pairing.finishBond(peer, links: bearers.links, &out)
            case .retryAdvertising(let op, let set, let session):
                guard lifecycle.isCurrent(session) else { continue }
                out.append(.management(.advertising(op, set: set), session: session))
            }
        }
        return out
    }

    public var nextDeadline: Duration? {
        mutating get { timers.nextDeadline }
    }

    /// A call's actions, after the PDUs `send` queued before it: a PDU the core sent goes out
    /// before what it asked next (raising the socket's security holds its writes until the
    /// central has paired; a disconnection or a closed channel would lose them).
    private mutating func wrap(_ actions: [KernelAction]) -> [KernelOutput] {
        guard !outbox.isEmpty else { return actions.isEmpty ? [] : actions.map(KernelOutput.init) }
        defer { outbox.removeAll(keepingCapacity: true) }
        return (outbox + actions).map(KernelOutput.init)
    }
}

/// One `KernelAction`, as the stack passes it to the shell (`KernelShell.perform`).
public struct KernelOutput: Sendable {
    let action: KernelAction
    init(_ action: KernelAction) { self.action = action }
}

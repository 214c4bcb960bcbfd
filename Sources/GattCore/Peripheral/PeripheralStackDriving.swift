/// The daemon's stack as its owner drives it, whatever runs below the seam: the one
/// `PeripheralStack`, over the H4 host (`PeripheralStack<H4Host>`), the kernel's rules
/// (`PeripheralStack<KernelAdapter>`) or a transport that runs its own (bluetoothd's). The
/// transport makes it (`PeripheralTransport.makeStack`) with its shell wired; the daemon and
/// its services call these members and never name the half below. Each runs a turn of the
/// stack, or joins the running one.
public protocol PeripheralStackDriving: AnyObject {
    /// The core (read and changed in place).
    var core: Peripheral { get set }
    /// The core's events, as they happen (may call back into the stack).
    var onEvent: (PeripheralEvent) -> Void { get set }
    /// Every ATT PDU fed to the core (`sent` false) or sent (`sent` true); nil: not watched.
    var onATTPDU: ((_ id: BearerID, _ pdu: [UInt8], _ sent: Bool) -> Void)? { get set }
    /// Whether the core hears a transport event of the half below (may call back into the stack).
    var admits: (TransportEvent) -> Bool { get set }
    /// A turn is over (re-arm the timer at `nextDeadline`).
    var onTurnEnd: () -> Void { get set }
    /// When `tick` should next be called: the earlier of both halves' deadlines.
    var nextDeadline: Duration? { get }

    /// A transport event the half below reported by itself.
    func handle(_ event: TransportEvent, now: Duration)
    /// What the owner got from calling the core (a notify, a control op, a reload).
    func perform(_ outputs: [PeripheralOutput], now: Duration)
    /// Both halves' timers.
    func tick(now: Duration)
    /// A program's `LinkRequest` for one link, and its cancellation.
    func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration)
    func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration)
    /// The user's answer to a pairing prompt, down to the half below.
    func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration)

    // The settings below the seam (`BelowSeam`), each in a turn of the stack.
    func setBonds(_ bonds: [Bond], now: Duration)
    func setLocalIRK(_ irk: [UInt8], now: Duration)
    func setEnhancedATT(_ enabled: Bool, now: Duration)
    func setL2CAPChannelServers(_ servers: [L2CAPChannelServer], now: Duration)
    /// Reload: the config's settings below the seam.
    func configureBelow(_ configuration: GattConfiguration, now: Duration)
}

extension PeripheralStack: PeripheralStackDriving {
    public func setBonds(_ bonds: [Bond], now: Duration) { callBelow(now: now) { $0.setBonds(bonds); return [] } }
    public func setLocalIRK(_ irk: [UInt8], now: Duration) { callBelow(now: now) { $0.setLocalIRK(irk); return [] } }
    public func setEnhancedATT(_ enabled: Bool, now: Duration) { callBelow(now: now) { $0.setEnhancedATT(enabled); return [] } }
    public func setL2CAPChannelServers(_ servers: [L2CAPChannelServer], now: Duration) {
        callBelow(now: now) { $0.setL2CAPChannelServers(servers); return [] }
    }
    public func configureBelow(_ configuration: GattConfiguration, now: Duration) { callBelow(now: now) { $0.configure(configuration, now: now) } }
}

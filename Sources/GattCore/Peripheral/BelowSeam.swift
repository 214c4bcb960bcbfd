/// The half below the seam as `PeripheralStack` drives it: the H4 host (`H4Host`, around the
/// `Host`), the kernel's rules (`KernelAdapter`), or a transport that runs its own rules
/// (bluetoothd's). Each call gives back what the shell must perform, in order;
/// `route` says which of those the core must hear.
public protocol BelowSeam {
    /// What a call gives back (for `Host`: H4 packets to write and host events).
    associatedtype Output
    /// Whether the core hears `output`: a transport event, or the end of the controller.
    static func route(_ output: Output) -> BelowSeamRoute
    /// One ATT PDU on a bearer (after a `.readyToSend` for it); it may wait for `flush`.
    mutating func send(_ pdu: [UInt8], on bearer: BearerID)
    /// Closes an Enhanced ATT bearer's channel (L2CAP Disconnection Request).
    mutating func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [Output]
    /// Sends what `send` queued.
    mutating func flush(now: Duration) -> [Output]
    mutating func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [Output]
    mutating func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [Output]
    /// Ask the central to pair or encrypt (SMP Security Request, Vol 3 Part H §3.6.7).
    mutating func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [Output]
    /// The user's answer to a `.pairing` prompt on `id`.
    mutating func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [Output]
    /// Asks for new connection parameters (or more, `LinkRequest`) on one link; a
    /// `.linkRequestFinished` reports how it ended.
    mutating func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [Output]
    /// The program no longer waits for its `kind` request on `id` (it timed out): forget it,
    /// so that a late answer answers nothing.
    mutating func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [Output]
    /// The answer to a GATT-level access (`TransportEvent.gattAccess`), for a half below that
    /// runs ATT itself; the others never ask one.
    mutating func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [Output]
    /// A new value of a characteristic with GATT-level subscribers (`TransportEvent.gattSubscribers`).
    mutating func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [Output]
    /// The bonds to encrypt reconnecting centrals with (loaded from the bond store at start;
    /// the half below adds the bonds its own pairings complete).
    mutating func setBonds(_ bonds: [Bond])
    /// Our Identity Resolving Key (kept by the daemon in the state directory): distributed to
    /// bonding centrals and used for our resolvable private addresses. Before the controller is up.
    mutating func setLocalIRK(_ irk: [UInt8])
    /// Accept Enhanced ATT bearers (where the half below can) or refuse them; bearers already
    /// open stay.
    mutating func setEnhancedATT(_ enabled: Bool)
    /// Accept LE credit-based channels to exactly these servers (the ones a program listens
    /// for); a PSM not listed is refused (LE_PSM not supported). Channels already open stay.
    /// Each accepted channel comes up as `.l2capChannelOpened`.
    mutating func setL2CAPChannelServers(_ servers: [L2CAPChannelServer])
    /// Reload: the new config's settings below the seam (random address, preferred
    /// parameters, security); links already up keep theirs.
    mutating func configure(_ configuration: GattConfiguration, now: Duration) -> [Output]
    /// Runs the timers due at `now`.
    mutating func tick(now: Duration) -> [Output]
    /// When `tick` should next be called (read in place: a getter on a stored copy of a large
    /// value would copy it first).
    var nextDeadline: Duration? { mutating get }
}

/// Where one output of the half below the seam goes besides the shell.
public enum BelowSeamRoute: Sendable, Equatable {
    /// To the shell only (an H4 packet to write, a line to log).
    case shell
    /// To the core too: queued, and fed to it in order.
    case core(TransportEvent)
    /// The controller cannot be used any more: the core hears `.lost(reason:)` (every
    /// connection is gone), the shell drops the transport.
    case fatal(reason: String)
}
